/**
 * The rows every HTTP scenario prints from load results: requests per
 * second, MB/s, p99 latency and peak RSS, each with the same figure for
 * every baseline (or the reason it is unavailable).
 */
import type { LoadResult } from './load.js'
import type { Measurement, Row } from './scenario.js'

export interface MeasuredServer {
  readonly load: LoadResult
  readonly peakRssBytes: number | undefined
}

type Baselines = Readonly<Record<string, MeasuredServer | string>>

const MB = 1_000_000
const MIB = 1024 * 1024

function row(metric: string, project: MeasuredServer, baselines: Baselines, pick: (m: MeasuredServer) => Measurement | undefined): Row | undefined {
  const own = pick(project)
  if (own === undefined) return undefined
  const others: Record<string, Measurement | string> = {}
  for (const [name, baseline] of Object.entries(baselines)) {
    others[name] = typeof baseline === 'string' ? baseline : pick(baseline) ?? 'not measured'
  }
  return { metric, project: own, baselines: others }
}

export function loadRows(label: string, project: MeasuredServer, baselines: Baselines): Row[] {
  const rows = [
    row(`${label} req/s`, project, baselines, (m) => ({ unit: 'req/s', better: 'higher', value: m.load.requestsPerSecond })),
    row(`${label} throughput`, project, baselines, (m) => ({ unit: 'MB/s', better: 'higher', value: m.load.bytesPerSecond / MB })),
    row(`${label} p99 latency`, project, baselines, (m) => ({ unit: 'ms', better: 'lower', value: m.load.p99Ms })),
    row('peak RSS', project, baselines, (m) => (m.peakRssBytes === undefined ? undefined : { unit: 'MiB', better: 'lower', value: m.peakRssBytes / MIB })),
  ]
  return rows.filter((r): r is Row => r !== undefined)
}

/** Problems a reader must see next to the figures: failed or non-2xx answers. */
export function loadWarnings(name: string, load: LoadResult): string[] {
  const warnings: string[] = []
  if (load.non2xx > 0) warnings.push(`${name}: ${load.non2xx} of ${load.requests} answers were not 2xx`)
  if (load.errors > 0) warnings.push(`${name}: ${load.errors} socket errors or timeouts`)
  if (load.requests === 0) warnings.push(`${name}: no request completed`)
  return warnings
}
