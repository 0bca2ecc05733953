/**
 * A server measured in several alternating rounds, summed up as one figure
 * per row: the median throughput of the rounds, and the p99 of all their
 * requests pooled.
 *
 * The p99 is taken over the requests of every round pooled (wrk's histograms),
 * not as the median of each round's p99: one round's p99 rests on its few
 * slowest requests, and on a shared 2-core machine, where the load tool, the
 * server and its peers take turns, it moved by up to 4x from round to round
 * (the artifact relay at 10 MiB x64; the warm gzip packument by 1.6x between
 * runs). Without histograms (autocannon) it is the median of the rounds' p99s.
 */
import { pooledPercentileMs, type LatencyHistogram } from './load.js'
import type { MeasuredServer } from './load-rows.js'

export interface RoundFigures {
  readonly requestsPerSecond: number
  readonly bytesPerSecond: number
  readonly p99Ms: number
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] as number : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export function figuresOf(runs: readonly MeasuredServer[]): RoundFigures {
  const histograms = runs.map((r) => r.load.latencyHistogram)
  const pooled = histograms.every((h) => h !== undefined) ? pooledPercentileMs(histograms as LatencyHistogram[], 99) : undefined
  return {
    requestsPerSecond: median(runs.map((r) => r.load.requestsPerSecond)),
    bytesPerSecond: median(runs.map((r) => r.load.bytesPerSecond)),
    p99Ms: pooled ?? median(runs.map((r) => r.load.p99Ms)),
  }
}

/** Each round's figures, for a note: `1.2/1.4/1.1`. */
export function perRound(runs: readonly MeasuredServer[], pick: (m: MeasuredServer) => number, digits: number): string {
  return runs.map((m) => pick(m).toFixed(digits)).join('/')
}
