/**
 * A reading taken at a fixed pace while a scenario runs (RSS from /proc,
 * the gate's figures from /metrics), kept in order. A read still running
 * when the next is due is not overlapped: that tick is skipped.
 */
export class PeriodicReader<T> {
  readonly #read: () => Promise<T | undefined>
  readonly #intervalMs: number
  readonly #values: T[] = []
  #timer: NodeJS.Timeout | undefined
  #inFlight: Promise<T | undefined> | undefined

  constructor(read: () => Promise<T | undefined>, intervalMs: number) {
    this.#read = read
    this.#intervalMs = intervalMs
  }

  get values(): readonly T[] { return this.#values }

  start(): void {
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => { void this.read() }, this.#intervalMs)
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /**
   * Reads once now; while a read is still running, its result instead (a
   * scenario's own reading at a set moment used to come back empty when it
   * met a tick's). A failed read keeps nothing.
   */
  read(): Promise<T | undefined> {
    this.#inFlight ??= this.#readOnce().finally(() => { this.#inFlight = undefined })
    return this.#inFlight
  }

  async #readOnce(): Promise<T | undefined> {
    try {
      const value = await this.#read()
      if (value !== undefined) this.#values.push(value)
      return value
    } catch {
      return undefined
    }
  }
}
