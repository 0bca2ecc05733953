/**
 * A log line that would repeat for every request about one key (SPEC.md 6.2
 * keeps a genuine upstream 404 at warn, and a private registry that lacks
 * every public package answers one per package read) is written once per
 * key per window. The lines left out are counted, and the key's next line
 * carries that count. Memory is bounded: past `maxKeys` the key logged
 * longest ago is forgotten, so at worst its next line comes early.
 */
import type { Clock } from '../clock.js'

export class OncePerWindow {
  readonly #windowMs: number
  readonly #maxKeys: number
  readonly #clock: Clock
  /** In order of each key's last line written, oldest first. */
  readonly #lines = new Map<string, { at: number; leftOut: number }>()

  constructor(options: { readonly windowMs: number; readonly maxKeys: number; readonly clock: Clock }) {
    this.#windowMs = options.windowMs
    this.#maxKeys = options.maxKeys
    this.#clock = options.clock
  }

  /**
   * Undefined when `key`'s line is left out now (counted); otherwise the
   * line is to be written, and the number is how many were left out since
   * the key's previous line.
   */
  take(key: string): number | undefined {
    const now = this.#clock.now()
    const last = this.#lines.get(key)
    if (last !== undefined && now - last.at < this.#windowMs) {
      last.leftOut++
      return undefined
    }
    this.#lines.delete(key)
    this.#lines.set(key, { at: now, leftOut: 0 })
    if (this.#lines.size > this.#maxKeys) {
      const oldest = this.#lines.keys().next()
      if (oldest.done !== true) this.#lines.delete(oldest.value)
    }
    return last?.leftOut ?? 0
  }
}
