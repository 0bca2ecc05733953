/**
 * The identities a once-per-identity log line has been written for, at most
 * `capacity` of them, the oldest forgotten first (SPEC.md 8: 4096 per
 * ecosystem for the skipped-check warning; the same bound for the waiver
 * line). Keys are the caller's (JSON of the parts, so no separator can
 * collide).
 */
import { ServiceError } from '../errors.js'

export class OnceRecord {
  readonly #capacity: number
  /** Insertion-ordered: the first key is the oldest identity. */
  readonly #seen = new Set<string>()

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new ServiceError('CONFIG_INVALID', { message: `capacity must be a positive integer, got ${capacity}` })
    this.#capacity = capacity
  }

  get size(): number { return this.#seen.size }

  /** True the first time `key` is seen (and it is remembered), false after. */
  first(key: string): boolean {
    if (this.#seen.has(key)) return false
    this.#seen.add(key)
    if (this.#seen.size > this.#capacity) {
      const oldest = this.#seen.values().next().value
      if (oldest !== undefined) this.#seen.delete(oldest)
    }
    return true
  }

  clear(): void { this.#seen.clear() }
}
