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
}

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

async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const wrk = await findExecutable('wrk')
  if (wrk === undefined) throw new Error('wrk is not installed (run bench/setup)')
  const dir = await mkdtemp(join(tmpdir(), 'bench-wrk-'))
  try {
    const script = join(dir, 'report.lua')
    await writeFile(script, WRK_REPORT)
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
    return {
      tool: 'wrk',
      requests: report.requests,
      requestsPerSecond: report.requests / seconds,
      bytesPerSecond: report.bytes / seconds,
      p99Ms: report.p99_us / 1000,
      non2xx: report.status,
      errors: report.errors,
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
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
