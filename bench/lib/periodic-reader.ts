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
  #reading = false

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

  /** Reads once now (skipped while the previous read is still running); a failed read keeps nothing. */
  async read(): Promise<T | undefined> {
    if (this.#reading) return undefined
    this.#reading = true
    try {
      const value = await this.#read()
      if (value !== undefined) this.#values.push(value)
      return value
    } catch {
      return undefined
    } finally {
      this.#reading = false
    }
  }
}
