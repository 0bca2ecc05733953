/**
 * The memory gate under a flood (SPEC.md 8.1, 8.2): 200 concurrent cold
 * requests for a 20 MB packument against the proxy under a 1 GiB, 2-core
 * plan (a fake cgroup folder the service reads through
 * SERVICE_RUNTIME__CGROUP_PATH). Every request names a different package
 * served with the same bytes, so none can join another's fetch: each is cold.
 *
 * Printed: requests completed and shed, p50/p99 of the completed ones, and
 * the proxy's peak RSS against the plan's heap ceiling. Baseline: Verdaccio
 * serving the same document to the same 200 concurrent requests, measured in
 * the same run.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { readPackument } from '../peers/shared-data.js'
import { makeTestCa } from '../peers/tls.js'
import { startVerdaccio } from '../peers/verdaccio.js'
import { repoRoot } from '../peers/repo-root.js'
import { RenamablePackument } from '../fixtures/renamable-packument.js'
import { runPackumentPipeline, type PackumentRequest } from '../../engine/packument/pipeline.js'
import { GateScraper, type GateReading } from '../lib/gate-scrape.js'
import { peakRssBytes, processTree, treePeakRssBytes } from '../lib/peak-rss.js'
import { RssSampler } from '../lib/rss-sampler.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'

const REQUESTS = Number(process.env['BENCH_FLOOD_REQUESTS'] ?? 200)
const TARGET_BYTES = 20 * 1024 * 1024
const GiB = 1024 * 1024 * 1024
const PLANNED_HEAP_CEILING = 832 * 1024 * 1024 // SPEC.md 8.2: 2 CPU / 1 GiB
/** Seconds after the flood at which the proxy's RSS is read (BENCH_FLOOD_SETTLE_SECONDS: the last one; 60 by default). */
const SETTLE_LAST = Number(process.env['BENCH_FLOOD_SETTLE_SECONDS'] ?? 60)
const SETTLE_POINTS = [...new Set([5, 15, 30, SETTLE_LAST].filter((s) => s <= SETTLE_LAST))]
/** BENCH_FLOOD_VERDACCIO=0 skips the Verdaccio baseline (about four minutes on 2 cores). */
const WITH_VERDACCIO = process.env['BENCH_FLOOD_VERDACCIO'] !== '0'
const NODE_OPTIONS = process.env['BENCH_FLOOD_NODE_OPTIONS'] || undefined
/** BENCH_FLOOD_TRACE=1 prints each request that entered: when it reached the upstream, read, got its head and ended, from the flood's start. */
const TRACE = process.env['BENCH_FLOOD_TRACE'] === '1'

interface Outcome {
  readonly status: number
  /** performance.now() when sent, when the answer's head arrived, when its body ended. */
  readonly start: number
  readonly headers: number
  readonly end: number
}

interface FloodResult {
  readonly completed: number
  readonly shed: number
  readonly failed: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly wallMs: number
  readonly started: number
  readonly outcomes: readonly Outcome[]
}

/** When the scenario's upstream saw a package asked for, and when it had handed the whole document to the socket. */
interface UpstreamMarks {
  arrive?: number
  finish?: number
}

/** A ~20 MB packument: the real typescript document with its versions repeated under new keys. */
async function twentyMegabyteDocument(): Promise<Record<string, unknown>> {
  const doc = await readPackument('typescript') as Record<string, unknown> & { versions: Record<string, unknown>; time: Record<string, string> }
  const versions = { ...doc.versions }
  const time = { ...doc.time }
  let size = JSON.stringify(doc).length
  for (let round = 1; size < TARGET_BYTES; round++) {
    for (const [version, manifest] of Object.entries(doc.versions)) {
      const copy = `${version}-copy.${round}`
      versions[copy] = { ...(manifest as object), version: copy }
      time[copy] = doc.time[version] ?? '2020-01-01T00:00:00.000Z'
      size += JSON.stringify(manifest).length + 32
      if (size >= TARGET_BYTES) break
    }
  }
  return { ...doc, versions, time }
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

async function flood(urlOf: (i: number) => string): Promise<FloodResult> {
  const dispatcher = new Agent({ connections: REQUESTS, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000 })
  const started = performance.now()
  const outcomes = await Promise.all(Array.from({ length: REQUESTS }, async (_, i): Promise<Outcome> => {
    const start = performance.now()
    try {
      const res = await request(urlOf(i), { dispatcher, headers: { accept: 'application/json' } })
      const headers = performance.now()
      await res.body.dump({ limit: Infinity })
      return { status: res.statusCode, start, headers, end: performance.now() }
    } catch {
      const now = performance.now()
      return { status: 0, start, headers: now, end: now }
    }
  }))
  const wallMs = performance.now() - started
  await dispatcher.close()
  const done = outcomes.filter((o) => o.status === 200).map((o) => o.end - o.start).sort((a, b) => a - b)
  return {
    started,
    outcomes,
    completed: done.length,
    shed: outcomes.filter((o) => o.status === 503).length,
    failed: outcomes.filter((o) => o.status !== 200 && o.status !== 503).length,
    p50Ms: percentile(done, 50),
    p99Ms: percentile(done, 99),
    wallMs,
  }
}

/** What the proxy did, beside the flood's outcomes: when each package reached the upstream, memory and the gate over time. */
export interface ProxyMeasurement {
  readonly result: FloodResult
  readonly peak: number | undefined
  /** The uncontended request made before the flood, as a reference for the breakdown. */
  readonly solo: Breakdown | undefined
  readonly breakdown: Breakdown
  readonly rss: { readonly idle: number, readonly floodMax: number, readonly atEnd: number, readonly settled: readonly { seconds: number, bytes: number }[] }
  readonly gate: GateSummary
}

/** Mean milliseconds of each phase over the completed requests. */
export interface Breakdown {
  /** Sent → the package asked of the upstream: the wait at the gate's entry step (and routing). */
  readonly entryMs: number
  /** Asked of the upstream → the whole document handed to the upstream's socket: the read, paused while the gate pauses it. */
  readonly upstreamMs: number
  /** Document read → the answer's head: the pool's queue, scan and render, and the response charge's pause. */
  readonly renderMs: number
  /** Head → last byte at the client. */
  readonly sendMs: number
  readonly requests: number
}

export interface GateSummary {
  readonly meanBudgetBytes: number
  readonly minBudgetBytes: number
  /** Share of readings at brake level 1 or 2. */
  readonly brakingShare: number
  readonly meanPaused: number
  readonly pauses: number
  readonly overdraws: number
  readonly readings: number
}

const mean = (values: readonly number[]): number => (values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length)

function breakdownOf(outcomes: readonly Outcome[], marks: ReadonlyMap<string, UpstreamMarks>, nameOf: (i: number) => string): Breakdown {
  const phases = { entry: [] as number[], upstream: [] as number[], render: [] as number[], send: [] as number[] }
  outcomes.forEach((o, i) => {
    const m = marks.get(nameOf(i))
    if (o.status !== 200 || m?.arrive === undefined || m.finish === undefined) return
    phases.entry.push(m.arrive - o.start)
    phases.upstream.push(m.finish - m.arrive)
    phases.render.push(o.headers - m.finish)
    phases.send.push(o.end - o.headers)
  })
  return { entryMs: mean(phases.entry), upstreamMs: mean(phases.upstream), renderMs: mean(phases.render), sendMs: mean(phases.send), requests: phases.entry.length }
}

function gateSummary(readings: readonly GateReading[], from: number, to: number): GateSummary {
  const during = readings.filter((r) => r.at >= from && r.at <= to)
  const last = readings.filter((r) => r.at <= to).at(-1)
  const first = readings.filter((r) => r.at < from).at(-1)
  const budgets = during.map((r) => r.budgetBytes).filter((b) => Number.isFinite(b))
  return {
    meanBudgetBytes: mean(budgets),
    minBudgetBytes: budgets.length === 0 ? NaN : Math.min(...budgets),
    brakingShare: during.length === 0 ? NaN : during.filter((r) => r.brakeLevel >= 1).length / during.length,
    meanPaused: mean(during.map((r) => r.pausedNow)),
    pauses: (last?.pauses ?? NaN) - (first?.pauses ?? 0),
    overdraws: (last?.overdraws ?? NaN) - (first?.overdraws ?? 0),
    readings: during.length,
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export async function measureProxy(doc: Record<string, unknown>): Promise<ProxyMeasurement> {
  const ca = await makeTestCa()
  const dir = await mkdtemp(join(tmpdir(), 'bench-flood-'))
  // Each answer, and each of its version manifests, gets the name it was asked for.
  const renamable = new RenamablePackument(doc, 'typescript')
  const marks = new Map<string, UpstreamMarks>()
  const upstream = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    const name = decodeURIComponent((req.url ?? '/').slice(1))
    const mark: UpstreamMarks = { arrive: performance.now() }
    marks.set(name, mark)
    res.once('finish', () => { mark.finish = performance.now() })
    // One write of the whole document: the scenario's upstream shares the two cores with the proxy.
    renamable.send(res, name)
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const origin = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  const cgroup = join(dir, 'cgroup')
  await import('node:fs/promises').then((fs) => fs.mkdir(cgroup))
  await writeFile(join(cgroup, 'cgroup.controllers'), 'cpu memory\n')
  await writeFile(join(cgroup, 'memory.max'), `${GiB}\n`)
  await writeFile(join(cgroup, 'cpu.max'), '200000 100000\n')
  const port = 20000 + Math.floor(Math.random() * 20000)
  const metricsPort = port + 1
  const child = spawn(process.execPath, [join(repoRoot(), 'dist/server/cli/service.js'), 'proxy'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env['PATH'] ?? '',
      SERVICE_SERVER__PORT: String(port),
      SERVICE_SERVER__HOST: '127.0.0.1',
      SERVICE_RUNTIME__CGROUP_PATH: cgroup,
      SERVICE_OBSERVABILITY__LOG_LEVEL: 'warn',
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${origin}/`,
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
      SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
      // The gate's figures, read by the scenario while the flood runs; no traces or logs exported.
      SERVICE_OBSERVABILITY__TELEMETRY: 'on',
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
      // BENCH_FLOOD_NODE_OPTIONS: the service's NODE_OPTIONS, e.g. an --import that profiles every thread (--cpu-prof is refused there).
      ...(NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS }),
      // GLIBC_TUNABLES: passed on, for trying other allocator settings (the launcher adds its mmap threshold unless one is set).
      ...(process.env['GLIBC_TUNABLES'] === undefined ? {} : { GLIBC_TUNABLES: process.env['GLIBC_TUNABLES'] }),
    },
  })
  const rss = new RssSampler(child.pid as number)
  const gate = new GateScraper(`http://127.0.0.1:${metricsPort}/metrics`)
  try {
    await waitForPing(`http://127.0.0.1:${port}/js/-/ping`, child)
    // Requests alone first, so both pool threads run warm code: the last is the breakdown of an uncontended cold request.
    for (let k = 0; k < 4; k++) await flood1(`http://127.0.0.1:${port}/js/flood-warm-${k}`)
    const solo = await flood1(`http://127.0.0.1:${port}/js/flood-solo`)
    const soloBreakdown = solo.status === 200 ? breakdownOf([solo], marks, () => 'flood-solo') : undefined
    await sleep(2000)
    rss.start()
    gate.start()
    const idle = (await rss.sample())?.bytes ?? NaN
    const result = await flood((i) => `http://127.0.0.1:${port}/js/flood-${i}`)
    if (TRACE) printTrace(result, marks)
    const ended = performance.now()
    const peak = await treePeakRssBytes(child.pid as number)
    const atEnd = (await rss.sample())?.bytes ?? NaN
    const settled: { seconds: number, bytes: number }[] = []
    for (const seconds of SETTLE_POINTS) {
      await sleep(Math.max(0, ended + seconds * 1000 - performance.now()))
      settled.push({ seconds, bytes: (await rss.sample())?.bytes ?? NaN })
    }
    return {
      result,
      peak,
      solo: soloBreakdown,
      breakdown: breakdownOf(result.outcomes, marks, (i) => `flood-${i}`),
      rss: { idle, floodMax: rss.maxBetween(result.started, ended), atEnd, settled },
      gate: gateSummary(gate.readings, result.started, ended),
    }
  } finally {
    rss.stop()
    gate.stop()
    // The launcher cannot forward SIGKILL: the service it started is killed by its own pid, or it outlives the run.
    const tree = await processTree(child.pid as number)
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve))
    for (const pid of tree.reverse()) {
      try { process.kill(pid, 'SIGKILL') } catch { /* already gone */ }
    }
    await exited
    upstream.closeAllConnections()
    await new Promise((resolve) => upstream.close(resolve))
    await rm(dir, { recursive: true, force: true })
    await ca.remove()
  }
}

function printTrace(result: FloodResult, marks: ReadonlyMap<string, UpstreamMarks>): void {
  const at = (ms: number | undefined): string => (ms === undefined ? '-' : ((ms - result.started) / 1000).toFixed(2)).padStart(7)
  const lines = result.outcomes.flatMap((o, i) => {
    const m = marks.get(`flood-${i}`)
    return m === undefined ? [] : [{ arrive: m.arrive ?? Infinity, line: `flood-${String(i).padEnd(4)} status ${o.status}  upstream asked ${at(m.arrive)} s  read ${at(m.finish)} s  head ${at(o.headers)} s  end ${at(o.end)} s` }]
  })
  console.log('trace (seconds from the flood\'s start):')
  for (const { line } of lines.sort((a, b) => a.arrive - b.arrive)) console.log(`  ${line}`)
}

async function flood1(url: string): Promise<Outcome> {
  const start = performance.now()
  const res = await request(url, { headers: { accept: 'application/json' }, headersTimeout: 300_000, bodyTimeout: 300_000 })
  const headers = performance.now()
  await res.body.dump({ limit: Infinity })
  return { status: res.statusCode, start, headers, end: performance.now() }
}

/**
 * The scan, merge and render of the flood's document on one core in this
 * process (full form, as the flood asks), best of three after a warm-up:
 * what one render costs without a pool, a gate or a flood around it.
 */
function renderAloneMs(body: Uint8Array): number {
  const chunks: Uint8Array[] = []
  for (let i = 0; i < body.length; i += 65536) chunks.push(body.subarray(i, i + 65536))
  const request: PackumentRequest = { packageName: 'typescript', baseUrl: 'http://127.0.0.1:4873', abbreviated: false, decide: () => ({ verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 0, reason: 'quarantine', evidence: [], skipped: [], advisory: [] }) }
  runPackumentPipeline(request, undefined, chunks)
  let best = Infinity
  for (let k = 0; k < 3; k++) {
    const start = performance.now()
    runPackumentPipeline(request, undefined, chunks)
    best = Math.min(best, performance.now() - start)
  }
  return best
}

async function waitForPing(url: string, child?: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child !== undefined && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`the proxy exited (${child.exitCode ?? child.signalCode}) before it answered ${url}`)
    try {
      const res = await request(url)
      await res.body.dump()
      if (res.statusCode === 200) return
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`the proxy did not answer ${url}`)
}

async function measureVerdaccio(doc: Record<string, unknown>): Promise<{ result: FloodResult; peak: number | undefined } | string> {
  let verdaccio
  try {
    verdaccio = await startVerdaccio({ role: 'private', packuments: [{ ...doc, name: 'flood' }] })
  } catch (error) {
    return `verdaccio did not start: ${String(error)}`
  }
  try {
    const result = await flood(() => `${verdaccio.origin}/flood`)
    return { result, peak: await peakRssBytes(verdaccio.pid) }
  } finally {
    await verdaccio.stop()
  }
}

const MiB = 1024 * 1024

const scenario: Scenario = {
  name: 'memory-flood',
  async run(): Promise<ScenarioResult> {
    const doc = await twentyMegabyteDocument()
    const body = Buffer.from(JSON.stringify(doc))
    const aloneMs = renderAloneMs(body)
    const proxy = await measureProxy(doc)
    const verdaccio = WITH_VERDACCIO ? await measureVerdaccio(doc) : 'skipped (BENCH_FLOOD_VERDACCIO=0)'
    const v = typeof verdaccio === 'string' ? undefined : verdaccio.result
    const base = (value: number | undefined, unit: string, better: 'higher' | 'lower') =>
      (v === undefined || value === undefined || Number.isNaN(value) ? (typeof verdaccio === 'string' ? verdaccio : 'not measured') : { unit, better, value })
    const rateOf = (r: FloodResult): number => {
      const ends = r.outcomes.filter((o) => o.status === 200).map((o) => o.end)
      return ends.length === 0 ? 0 : ends.length / ((Math.max(...ends) - r.started) / 1000)
    }
    const ms = (value: number) => ({ unit: 'ms', better: 'lower' as const, value })
    const mib = (value: number) => ({ unit: 'MiB', better: 'lower' as const, value: value / MiB })
    const { breakdown: b, solo, gate } = proxy
    const soloMs = (value: number | undefined) => (solo === undefined || value === undefined ? 'the solo request failed' : ms(value))
    const rows: Row[] = [
      { metric: `completed of ${REQUESTS}`, project: { unit: 'req', better: 'higher', value: proxy.result.completed }, baselines: { verdaccio: base(v?.completed, 'req', 'higher') } },
      { metric: 'shed (503 Retry-After: 1)', project: { unit: 'req', better: 'lower', value: proxy.result.shed }, baselines: { verdaccio: base(v?.shed, 'req', 'lower') } },
      { metric: 'failed otherwise', project: { unit: 'req', better: 'lower', value: proxy.result.failed }, baselines: { verdaccio: base(v?.failed, 'req', 'lower') } },
      { metric: 'rendered (completed per second, first sent to last done)', project: { unit: 'doc/s', better: 'higher', value: rateOf(proxy.result) }, baselines: { verdaccio: base(v === undefined ? undefined : rateOf(v), 'doc/s', 'higher') } },
      { metric: 'p50 of completed', project: ms(proxy.result.p50Ms), baselines: { verdaccio: base(v?.p50Ms, 'ms', 'lower') } },
      { metric: 'p99 of completed', project: ms(proxy.result.p99Ms), baselines: { verdaccio: base(v?.p99Ms, 'ms', 'lower') } },
      // Where a completed request's time went (means), against the one request made alone before the flood.
      { metric: 'time: entry wait (sent -> asked upstream)', project: ms(b.entryMs), baselines: { 'solo request': soloMs(solo?.entryMs) } },
      { metric: 'time: upstream read, incl. gate pauses', project: ms(b.upstreamMs), baselines: { 'solo request': soloMs(solo?.upstreamMs) } },
      { metric: 'time: pool queue + render + response charge', project: ms(b.renderMs), baselines: { 'solo request': soloMs(solo?.renderMs), 'render alone, one core, no pool': ms(aloneMs) } },
      { metric: 'time: response send', project: ms(b.sendMs), baselines: { 'solo request': soloMs(solo?.sendMs) } },
      { metric: 'gate: mean budget during the flood', project: { ...mib(gate.meanBudgetBytes), better: 'higher' }, baselines: {} },
      { metric: 'gate: share of readings braking or holding', project: { unit: '%', better: 'lower', value: gate.brakingShare * 100 }, baselines: {} },
      { metric: 'gate: mean requests paused', project: { unit: 'req', better: 'lower', value: gate.meanPaused }, baselines: {} },
      {
        metric: 'peak RSS',
        project: mib(proxy.peak ?? NaN),
        baselines: {
          'planned heap ceiling (2 CPU / 1 GiB)': mib(PLANNED_HEAP_CEILING),
          verdaccio: base(typeof verdaccio === 'string' ? undefined : (verdaccio.peak ?? NaN) / MiB, 'MiB', 'lower'),
        },
      },
      { metric: 'RSS when the flood ended', project: mib(proxy.rss.atEnd), baselines: { 'idle before the flood': mib(proxy.rss.idle) } },
      ...proxy.rss.settled.map(({ seconds, bytes }): Row => ({ metric: `RSS ${seconds} s after the flood`, project: mib(bytes), baselines: { 'idle before the flood': mib(proxy.rss.idle) } })),
    ]
    return {
      title: `${REQUESTS} concurrent cold requests for a ${(body.length / MiB).toFixed(1)} MiB packument, proxy under a 2 CPU / 1 GiB plan vs Verdaccio serving the same document`,
      rows,
      ...(proxy.peak === undefined ? {} : { peakRssBytes: proxy.peak }),
      notes: [
        `proxy wall time ${Math.round(proxy.result.wallMs)} ms${v === undefined ? '' : `, Verdaccio ${Math.round(v.wallMs)} ms`}`,
        'each proxy request names a different package (all cold); Verdaccio serves one stored package to all',
        `peak RSS: VmHWM of the launcher and the service process (summed); RSS rows: their VmRSS, summed (largest sampled during the flood ${(proxy.rss.floodMax / MiB).toFixed(0)} MiB)`,
        `time rows: means over the ${b.requests} completed requests, from the client's clock and the scenario's upstream (when it saw the package asked for, when it had handed the last byte to its socket)`,
        `gate: ${gate.readings} readings of its Prometheus figures during the flood; budget min ${(gate.minBudgetBytes / MiB).toFixed(0)} MiB; ${gate.pauses} pauses, ${gate.overdraws} overdraws`,
      ],
    }
  },
}

export default scenario
