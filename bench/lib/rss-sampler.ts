/**
 * Resident memory of a process tree over time, read from Linux's
 * `/proc/PID/status` (VmRSS) at a fixed pace: what a scenario reads to say
 * how far memory comes back after a load, where peak-rss.ts gives only the
 * high-water mark. The tree is listed again at every sample, so a process
 * the launcher starts later (the service itself) is counted from then on.
 */
import { treeRssBytes } from './peak-rss.js'
import { PeriodicReader } from './periodic-reader.js'

export interface RssSample {
  /** performance.now() when read. */
  readonly at: number
  readonly bytes: number
}

/** The summed RSS of a process tree, read every `intervalMs`. */
export class RssSampler extends PeriodicReader<RssSample> {
  constructor(pid: number, intervalMs = 250) {
    super(async () => {
      const bytes = await treeRssBytes(pid)
      return bytes === undefined ? undefined : { at: performance.now(), bytes }
    }, intervalMs)
  }

  get samples(): readonly RssSample[] { return this.values }

  /** Reads once now (or joins a read still running). */
  sample(): Promise<RssSample | undefined> { return this.read() }

  /** The largest sample taken in [from, to]; NaN when none was. */
  maxBetween(from: number, to: number): number {
    let max = NaN
    for (const s of this.values) if (s.at >= from && s.at <= to && !(s.bytes <= max)) max = s.bytes
    return max
  }

  /** The last sample taken at or before `at`; NaN when none was. */
  at(at: number): number {
    let value = NaN
    for (const s of this.values) if (s.at <= at) value = s.bytes
    return value
  }
}
