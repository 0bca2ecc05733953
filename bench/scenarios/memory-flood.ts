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
import { spawn } from 'node:child_process'
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
import { peakRssBytes, treePeakRssBytes } from '../lib/peak-rss.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'

const REQUESTS = Number(process.env['BENCH_FLOOD_REQUESTS'] ?? 200)
const TARGET_BYTES = 20 * 1024 * 1024
const GiB = 1024 * 1024 * 1024
const PLANNED_HEAP_CEILING = 832 * 1024 * 1024 // SPEC.md 8.2: 2 CPU / 1 GiB

interface FloodResult {
  readonly completed: number
  readonly shed: number
  readonly failed: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly wallMs: number
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
  const outcomes = await Promise.all(Array.from({ length: REQUESTS }, async (_, i) => {
    const t0 = performance.now()
    try {
      const res = await request(urlOf(i), { dispatcher, headers: { accept: 'application/json' } })
      await res.body.dump({ limit: Infinity })
      return { status: res.statusCode, ms: performance.now() - t0 }
    } catch {
      return { status: 0, ms: performance.now() - t0 }
    }
  }))
  const wallMs = performance.now() - started
  await dispatcher.close()
  const done = outcomes.filter((o) => o.status === 200).map((o) => o.ms).sort((a, b) => a - b)
  return {
    completed: done.length,
    shed: outcomes.filter((o) => o.status === 503).length,
    failed: outcomes.filter((o) => o.status !== 200 && o.status !== 503).length,
    p50Ms: percentile(done, 50),
    p99Ms: percentile(done, 99),
    wallMs,
  }
}

export async function measureProxy(doc: Record<string, unknown>): Promise<{ result: FloodResult; peak: number | undefined }> {
  const ca = await makeTestCa()
  const dir = await mkdtemp(join(tmpdir(), 'bench-flood-'))
  // Each answer, and each of its version manifests, gets the name it was asked for.
  const renamable = new RenamablePackument(doc, 'typescript')
  const upstream = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    renamable.send(res, decodeURIComponent((req.url ?? '/').slice(1)))
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const origin = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  const cgroup = join(dir, 'cgroup')
  await import('node:fs/promises').then((fs) => fs.mkdir(cgroup))
  await writeFile(join(cgroup, 'cgroup.controllers'), 'cpu memory\n')
  await writeFile(join(cgroup, 'memory.max'), `${GiB}\n`)
  await writeFile(join(cgroup, 'cpu.max'), '200000 100000\n')
  const port = 20000 + Math.floor(Math.random() * 20000)
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
    },
  })
  try {
    await waitForPing(`http://127.0.0.1:${port}/js/-/ping`)
    const result = await flood((i) => `http://127.0.0.1:${port}/js/flood-${i}`)
    const peak = await treePeakRssBytes(child.pid as number)
    return { result, peak }
  } finally {
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    upstream.closeAllConnections()
    await new Promise((resolve) => upstream.close(resolve))
    await rm(dir, { recursive: true, force: true })
    await ca.remove()
  }
}

async function waitForPing(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
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
    const proxy = await measureProxy(doc)
    const verdaccio = await measureVerdaccio(doc)
    const v = typeof verdaccio === 'string' ? undefined : verdaccio.result
    const base = (value: number | undefined, unit: string, better: 'higher' | 'lower') =>
      (v === undefined || value === undefined || Number.isNaN(value) ? (typeof verdaccio === 'string' ? verdaccio : 'not measured') : { unit, better, value })
    const rows: Row[] = [
      { metric: `completed of ${REQUESTS}`, project: { unit: 'req', better: 'higher', value: proxy.result.completed }, baselines: { verdaccio: base(v?.completed, 'req', 'higher') } },
      { metric: 'shed (503 Retry-After: 1)', project: { unit: 'req', better: 'lower', value: proxy.result.shed }, baselines: { verdaccio: base(v?.shed, 'req', 'lower') } },
      { metric: 'failed otherwise', project: { unit: 'req', better: 'lower', value: proxy.result.failed }, baselines: { verdaccio: base(v?.failed, 'req', 'lower') } },
      { metric: 'p50 of completed', project: { unit: 'ms', better: 'lower', value: proxy.result.p50Ms }, baselines: { verdaccio: base(v?.p50Ms, 'ms', 'lower') } },
      { metric: 'p99 of completed', project: { unit: 'ms', better: 'lower', value: proxy.result.p99Ms }, baselines: { verdaccio: base(v?.p99Ms, 'ms', 'lower') } },
      {
        metric: 'peak RSS',
        project: { unit: 'MiB', better: 'lower', value: (proxy.peak ?? NaN) / MiB },
        baselines: {
          'planned heap ceiling (2 CPU / 1 GiB)': { unit: 'MiB', better: 'lower', value: PLANNED_HEAP_CEILING / MiB },
          verdaccio: base(typeof verdaccio === 'string' ? undefined : (verdaccio.peak ?? NaN) / MiB, 'MiB', 'lower'),
        },
      },
    ]
    return {
      title: `${REQUESTS} concurrent cold requests for a ${(body.length / MiB).toFixed(1)} MiB packument, proxy under a 2 CPU / 1 GiB plan vs Verdaccio serving the same document`,
      rows,
      ...(proxy.peak === undefined ? {} : { peakRssBytes: proxy.peak }),
      notes: [
        `proxy wall time ${Math.round(proxy.result.wallMs)} ms${v === undefined ? '' : `, Verdaccio ${Math.round(v.wallMs)} ms`}`,
        'each proxy request names a different package (all cold); Verdaccio serves one stored package to all',
        'peak RSS: VmHWM of the launcher and the service process (summed)',
      ],
    }
  },
}

export default scenario
