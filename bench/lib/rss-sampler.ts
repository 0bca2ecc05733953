/**
 * Resident memory of a process tree over time, read from Linux's
 * `/proc/PID/status` (VmRSS) at a fixed pace: what a scenario reads to say
 * how far memory comes back after a load, where peak-rss.ts gives only the
 * high-water mark. The tree is listed again at every sample, so a process
 * the launcher starts later (the service itself) is counted from then on.
 */
import { treeRssBytes } from './peak-rss.js'

export interface RssSample {
  /** performance.now() when read. */
  readonly at: number
  readonly bytes: number
}

export class RssSampler {
  readonly #pid: number
  readonly #intervalMs: number
  readonly #samples: RssSample[] = []
  #timer: NodeJS.Timeout | undefined
  #reading = false

  constructor(pid: number, intervalMs = 250) {
    this.#pid = pid
    this.#intervalMs = intervalMs
  }

  get samples(): readonly RssSample[] { return this.#samples }

  start(): void {
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => { void this.sample() }, this.#intervalMs)
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** Reads once now (skipped while the previous read is still running). */
  async sample(): Promise<RssSample | undefined> {
    if (this.#reading) return undefined
    this.#reading = true
    try {
      const bytes = await treeRssBytes(this.#pid)
      if (bytes === undefined) return undefined
      const sample = { at: performance.now(), bytes }
      this.#samples.push(sample)
      return sample
    } finally {
      this.#reading = false
    }
  }

  /** The largest sample taken in [from, to]; NaN when none was. */
  maxBetween(from: number, to: number): number {
    let max = NaN
    for (const s of this.#samples) if (s.at >= from && s.at <= to && !(s.bytes <= max)) max = s.bytes
    return max
  }

  /** The last sample taken at or before `at`; NaN when none was. */
  at(at: number): number {
    let value = NaN
    for (const s of this.#samples) if (s.at <= at) value = s.bytes
    return value
  }
}
