/**
 * The memory gate as the proxy's Prometheus endpoint shows it
 * (`service.serve.admission.memory.*`, SPEC.md 6.3), read at a fixed pace
 * while a scenario runs: budget, bytes charged, brake level and paused
 * requests over time, and the counters at the end. Scraping costs the proxy
 * one small text answer per read.
 */
import { request } from 'undici'
import { PeriodicReader } from './periodic-reader.js'

export interface GateReading {
  readonly at: number
  readonly budgetBytes: number
  readonly chargedBytes: number
  readonly brakeLevel: number
  readonly pausedNow: number
  readonly waiting: number
  readonly pauses: number
  readonly overdraws: number
}

const PREFIX = 'service_serve_admission_memory_'

/** The gate's figures in a Prometheus text answer; a figure it lacks reads NaN. */
export function parseGate(text: string, at: number): GateReading {
  const values = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (!line.startsWith(PREFIX)) continue
    const match = /^(\w+)(?:\{[^}]*\})?\s+(\S+)/.exec(line)
    if (match !== null) values.set(match[1]!.slice(PREFIX.length), Number(match[2]))
  }
  // The exporter may append a unit or `_total`; match on the figure's own name.
  const read = (name: string): number => {
    for (const [key, value] of values) if (key === name || key.startsWith(`${name}_`)) return value
    return NaN
  }
  return {
    at,
    budgetBytes: read('budget_bytes'),
    chargedBytes: read('charged_bytes'),
    brakeLevel: read('brake_level'),
    pausedNow: read('paused_now'),
    waiting: read('waiting'),
    pauses: read('pauses'),
    overdraws: read('overdraws'),
  }
}

/** The gate's figures from the proxy's Prometheus endpoint, read every `intervalMs`. */
export class GateScraper extends PeriodicReader<GateReading> {
  constructor(url: string, intervalMs = 250) {
    super(async () => {
      const res = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 })
      const text = await res.body.text()
      return res.statusCode === 200 ? parseGate(text, performance.now()) : undefined
    }, intervalMs)
  }

  get readings(): readonly GateReading[] { return this.values }
}
