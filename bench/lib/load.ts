/**
 * Load from a second process: wrk where it is installed (bench/setup), else
 * autocannon from devDependencies. Both keep `connections` keep-alive
 * connections busy for `durationSeconds` and report requests per second,
 * bytes per second and the 99th percentile latency. Neither decompresses nor
 * sends Accept-Encoding unless a header says so, so bodies are measured as
 * served.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { localBin } from '../peers/repo-root.js'
import { findExecutable } from './executables.js'

const run = promisify(execFile)

export type LoadTool = 'wrk' | 'autocannon'

export interface LoadOptions {
  readonly url: string
  readonly connections?: number
  readonly durationSeconds?: number
  readonly headers?: Readonly<Record<string, string>>
  /** Default: wrk when installed, else autocannon; `BENCH_LOAD_TOOL` overrides. */
  readonly tool?: LoadTool
  /**
   * Return every request's latency as a histogram (wrk only), so a scenario
   * can pool the runs of one server before taking a percentile.
   */
  readonly latencyHistogram?: boolean
}

/** Latencies as [microseconds, requests] pairs, ascending. */
export type LatencyHistogram = readonly (readonly [number, number])[]

export interface LoadResult {
  readonly tool: LoadTool
  readonly requests: number
  readonly requestsPerSecond: number
  readonly bytesPerSecond: number
  readonly p99Ms: number
  /** Answers with a status outside 2xx (wrk counts 4xx and 5xx). */
  readonly non2xx: number
  /** Connect, read, write and timeout errors. */
  readonly errors: number
  /** Present when asked for and the tool is wrk. */
  readonly latencyHistogram?: LatencyHistogram
}

/**
 * The `p`th percentile, in ms, of several runs' latencies taken together, by
 * wrk's own rule (the smallest latency whose cumulative count reaches the
 * rank p% of all requests, rounded). One 8 s run at 10 MiB x64 completes
 * about 900 requests, so its p99 is its ninth-slowest request and swings
 * with one stall; five runs pooled put the rank at about the 45th.
 */
export function pooledPercentileMs(histograms: readonly LatencyHistogram[], p: number): number {
  const all = histograms.flat().sort((a, b) => a[0] - b[0])
  const total = all.reduce((sum, [, count]) => sum + count, 0)
  if (total === 0) return Number.NaN
  const rank = Math.round((p / 100) * total + 0.5)
  let seen = 0
  for (const [micros, count] of all) {
    seen += count
    if (seen >= rank) return micros / 1000
  }
  return (all[all.length - 1] as readonly [number, number])[0] / 1000
}

export async function defaultLoadTool(): Promise<LoadTool> {
  const chosen = process.env.BENCH_LOAD_TOOL
  if (chosen === 'wrk' || chosen === 'autocannon') return chosen
  return (await findExecutable('wrk')) === undefined ? 'autocannon' : 'wrk'
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const tool = options.tool ?? await defaultLoadTool()
  return tool === 'wrk' ? runWrk(options) : runAutocannon(options)
}

// wrk's summary as JSON, from its Lua `done` hook (wrk's SCRIPTING notes).
const WRK_REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p99_us":%d,"status":%d,"errors":%d}\\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(99), e.status,
    e.connect + e.read + e.write + e.timeout))
end
`

// The whole latency histogram: `#latency` counts the distinct values and
// `latency(i)` gives the i-th as value, count (wrk's src/script.c). Each call
// scans from the minimum, so a run of 10 MiB answers takes about 0.3 s here.
const WRK_HISTOGRAM = `
local report = done
done = function(summary, latency, requests)
  report(summary, latency, requests)
  local parts = {}
  for i = 1, #latency do
    local value, count = latency(i)
    parts[#parts + 1] = string.format('%d:%d', value, count)
  end
  io.write('WRK_LATENCY ' .. table.concat(parts, ',') .. '\\n')
end
`

async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const wrk = await findExecutable('wrk')
  if (wrk === undefined) throw new Error('wrk is not installed (run bench/setup)')
  const dir = await mkdtemp(join(tmpdir(), 'bench-wrk-'))
  try {
    const script = join(dir, 'report.lua')
    await writeFile(script, options.latencyHistogram === true ? WRK_REPORT + WRK_HISTOGRAM : WRK_REPORT)
    const connections = options.connections ?? 8
    const args = [
      '-t', String(Math.min(2, connections)), '-c', String(connections), '-d', `${options.durationSeconds ?? 8}s`,
      '--timeout', '30s', '-s', script,
    ]
    for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`)
    args.push(options.url)
    const { stdout } = await run(wrk, args, { maxBuffer: 16 * 1024 * 1024 })
    const line = stdout.split('\n').find((l) => l.startsWith('WRK_JSON '))
    if (line === undefined) throw new Error(`wrk printed no report:\n${stdout}`)
    const report = JSON.parse(line.slice('WRK_JSON '.length)) as { requests: number, duration_us: number, bytes: number, p99_us: number, status: number, errors: number }
    const seconds = report.duration_us / 1e6
    const histogram = stdout.split('\n').find((l) => l.startsWith('WRK_LATENCY '))
    if (options.latencyHistogram === true && histogram === undefined) throw new Error(`wrk printed no latency histogram:\n${stdout}`)
    return {
      tool: 'wrk',
      requests: report.requests,
      requestsPerSecond: report.requests / seconds,
      bytesPerSecond: report.bytes / seconds,
      p99Ms: report.p99_us / 1000,
      non2xx: report.status,
      errors: report.errors,
      ...(histogram === undefined ? {} : { latencyHistogram: parseHistogram(histogram.slice('WRK_LATENCY '.length)) }),
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function parseHistogram(text: string): LatencyHistogram {
  if (text.trim() === '') return []
  return text.trim().split(',').map((pair) => {
    const [value, count] = pair.split(':').map(Number)
    if (value === undefined || count === undefined || !Number.isFinite(value) || !Number.isFinite(count)) throw new Error(`wrk printed a bad latency pair: ${pair}`)
    return [value, count] as const
  })
}

async function runAutocannon(options: LoadOptions): Promise<LoadResult> {
  const args = ['--json', '-c', String(options.connections ?? 8), '-d', String(options.durationSeconds ?? 8)]
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`)
  args.push(options.url)
  const { stdout } = await run(localBin('autocannon'), args, { maxBuffer: 64 * 1024 * 1024 })
  const report = JSON.parse(stdout) as {
    requests: { average: number, total: number }, throughput: { average: number }, latency: { p99: number },
    non2xx: number, errors: number, timeouts: number, '2xx': number,
  }
  return {
    tool: 'autocannon',
    requests: report.requests.total,
    requestsPerSecond: report.requests.average,
    bytesPerSecond: report.throughput.average,
    p99Ms: report.latency.p99,
    non2xx: report.non2xx,
    errors: report.errors + report.timeouts,
  }
}
