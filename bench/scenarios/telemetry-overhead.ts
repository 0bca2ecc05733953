/**
 * Telemetry off vs on, in one run (issue 15): the same built proxy serving
 * the packument path (a real packument, gated, from a public https origin)
 * and the artifact relay path (a 1 MiB tarball on the public leg), once with
 * `SERVICE_OBSERVABILITY__TELEMETRY` off and once on, exporting metrics
 * (every 5 s), traces and logs over OTLP to a sink on 127.0.0.1 that accepts
 * and discards. The "telemetry off" column is the baseline; the ratio is the
 * overhead. `time per request` is 1/throughput of the one-core proxy under
 * load (the CPU one request costs), and a note prints its difference, on
 * minus off, in µs per request: the figure the README quotes. Off and on alternate over BENCH_TELEMETRY_ROUNDS rounds (default
 * 2) and each figure is the median, so drift on a shared machine falls on
 * both sides.
 *
 * BENCH_TELEMETRY_ENV (JSON) adds variables to the "on" proxy.
 * BENCH_PACKUMENT picks the fixture (default express); BENCH_DURATION_SECONDS
 * and BENCH_CONNECTIONS size the load.
 */
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fetchBytes, loadShapeFromEnv, measureServer } from '../lib/baselines.js'
import { loadWarnings, type MeasuredServer } from '../lib/load-rows.js'
import { peakRssBytes } from '../lib/peak-rss.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { ChildPeer } from '../peers/child-peer.js'
import { FIXTURE_PACKUMENTS, readPackumentBytes, type FixturePackumentName } from '../peers/shared-data.js'
import { makeTestCa } from '../peers/tls.js'

const MIB = 1024 * 1024
const MB = 1_000_000

function packumentName(): FixturePackumentName {
  const chosen = process.env.BENCH_PACKUMENT ?? 'express'
  const known = FIXTURE_PACKUMENTS.find((n) => n === chosen)
  if (known === undefined) throw new Error(`BENCH_PACKUMENT must be one of ${FIXTURE_PACKUMENTS.join(', ')}`)
  return known
}

interface Proxy { readonly origin: string; readonly pid: number; stop(): Promise<void> }

async function startProxy(env: Record<string, string>): Promise<Proxy> {
  const bin = fileURLToPath(new URL('../../server/cli/service.js', import.meta.url))
  const port = await new Promise<number>((resolve) => {
    const probe = createHttpServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as { port: number }).port
      probe.close(() => resolve(p))
    })
  })
  const child = spawn(process.execPath, [bin, 'proxy'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SERVICE_SERVER__PORT: String(port), SERVICE_SERVER__HOST: '127.0.0.1', SERVICE_OBSERVABILITY__LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const peer = new ChildPeer('proxy', child)
  const origin = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (!peer.running) throw new Error(`the proxy exited:\n${peer.output}`)
    try {
      if ((await fetchBytes(`${origin}/readyz`)).status === 200) break
    } catch { /* not listening yet */ }
    if (i > 300) throw new Error(`the proxy did not get ready:\n${peer.output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return { origin, pid: peer.pid, stop: () => peer.stop() }
}

/** BENCH_TELEMETRY_ENV: a JSON object of more variables for the "on" proxy (e.g. a sampler, or OTEL_TRACES_EXPORTER=none to split the cost). */
function extraEnv(): Record<string, string> {
  const raw = process.env.BENCH_TELEMETRY_ENV
  return raw === undefined ? {} : JSON.parse(raw) as Record<string, string>
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

const scenario: Scenario = {
  name: 'telemetry-overhead',
  async run(): Promise<ScenarioResult> {
    const name = packumentName()
    const rounds = Number(process.env.BENCH_TELEMETRY_ROUNDS ?? 2)
    const source = JSON.parse((await readPackumentBytes(name)).toString('utf8')) as { versions: Record<string, { dist: { tarball: string; integrity?: string; shasum?: string } }> }
    // One version's tarball is a real 1 MiB body with its real digest, so the relay's integrity checks pass.
    const tarball = randomBytes(MIB)
    const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`
    const [relayVersion] = Object.keys(source.versions)
    if (relayVersion === undefined) throw new Error(`${name} has no version`)
    const unscoped = name.split('/').pop() as string
    const tarballPath = `/${name}/-/${unscoped}-${relayVersion}.tgz`
    const dir = await mkdtemp(join(tmpdir(), 'bench-telemetry-'))
    const ca = await makeTestCa()
    const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true }), () => ca.remove()]
    try {
      const upstream = createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
        if (req.url === tarballPath) {
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(tarball.length) }).end(tarball)
        } else if (req.url === `/${name.replace('/', '%2f')}` || req.url === `/${name}`) {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) }).end(body)
        } else {
          res.writeHead(404).end()
        }
      })
      await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
      cleanups.push(() => new Promise((resolve) => { upstream.closeAllConnections(); upstream.close(resolve) }))
      const upstreamOrigin = `https://127.0.0.1:${(upstream.address() as { port: number }).port}`
      const version = source.versions[relayVersion] as { dist: { tarball: string; integrity?: string; shasum?: string } }
      version.dist = { tarball: `${upstreamOrigin}${tarballPath}`, integrity }
      const body = Buffer.from(JSON.stringify(source))

      let exported = 0
      const sink = createHttpServer((req, res) => {
        req.resume()
        req.on('end', () => { exported++; res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end() })
      })
      await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
      cleanups.push(() => new Promise((resolve) => { sink.closeAllConnections(); sink.close(resolve) }))
      const sinkOrigin = `http://127.0.0.1:${(sink.address() as { port: number }).port}`

      const common = {
        SERVICE_RUNTIME__CORES: '1',
        SERVICE_QUEUE__PATH: join(dir, 'queue'),
        SERVICE_STORE__PATH: join(dir, 'store'),
        SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstreamOrigin}/`,
        SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
        SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
        SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
      }
      const variants = {
        off: { ...common, SERVICE_OBSERVABILITY__TELEMETRY: 'off' },
        on: { ...common, SERVICE_OBSERVABILITY__TELEMETRY: 'on', OTEL_EXPORTER_OTLP_ENDPOINT: sinkOrigin, OTEL_METRIC_EXPORT_INTERVAL: '5000', ...extraEnv() },
      }
      const paths = { packument: `/js/${name.replace('/', '%2f')}`, relay: `/js${tarballPath}` }
      const shape = { packument: loadShapeFromEnv({ accept: 'application/json' }), relay: loadShapeFromEnv() }
      const results: Record<'off' | 'on', Record<'packument' | 'relay', MeasuredServer[]>> = { off: { packument: [], relay: [] }, on: { packument: [], relay: [] } }
      for (let round = 0; round < rounds; round++) {
        for (const variant of ['off', 'on'] as const) {
          const proxy = await startProxy(variants[variant])
          try {
            for (const path of ['packument', 'relay'] as const) {
              const check = await fetchBytes(`${proxy.origin}${paths[path]}`, shape[path].headers)
              if (check.status !== 200) throw new Error(`${variant} ${path}: ${paths[path]} answered ${check.status}: ${check.body.toString('utf8').slice(0, 300)}`)
              results[variant][path].push(await measureServer(`${proxy.origin}${paths[path]}`, shape[path], () => peakRssBytes(proxy.pid)))
            }
          } finally {
            await proxy.stop()
          }
        }
      }

      const rows: Row[] = []
      const notes: string[] = [`${rounds} alternating round(s) per variant, medians; OTLP exports received by the sink: ${exported}`]
      for (const path of ['packument', 'relay'] as const) {
        const on = results.on[path]
        const off = results.off[path]
        const rps = (m: MeasuredServer[]): number => median(m.map((x) => x.load.requestsPerSecond))
        const mbps = (m: MeasuredServer[]): number => median(m.map((x) => x.load.bytesPerSecond / MB))
        const p99 = (m: MeasuredServer[]): number => median(m.map((x) => x.load.p99Ms))
        const rss = (m: MeasuredServer[]): number => median(m.map((x) => (x.peakRssBytes ?? 0) / MIB))
        // The proxy runs on one core (SERVICE_RUNTIME__CORES=1) and the load keeps it busy, so 1/throughput is the CPU time one request costs.
        const micros = (m: MeasuredServer[]): number => 1e6 / rps(m)
        const extra = micros(on) - micros(off)
        notes.push(`${path}: telemetry on costs ${extra.toFixed(1)} µs per request (${micros(on).toFixed(1)} µs on, ${micros(off).toFixed(1)} µs off: 1/throughput of the one-core proxy, ${(100 * extra / micros(off)).toFixed(1)} % of the request)`)
        rows.push(
          { metric: `${path} time per request`, project: { unit: 'µs', better: 'lower', value: micros(on) }, baselines: { 'telemetry off': { unit: 'µs', better: 'lower', value: micros(off) } } },
          { metric: `${path} req/s`, project: { unit: 'req/s', better: 'higher', value: rps(on) }, baselines: { 'telemetry off': { unit: 'req/s', better: 'higher', value: rps(off) } } },
          { metric: `${path} throughput`, project: { unit: 'MB/s', better: 'higher', value: mbps(on) }, baselines: { 'telemetry off': { unit: 'MB/s', better: 'higher', value: mbps(off) } } },
          { metric: `${path} p99 latency`, project: { unit: 'ms', better: 'lower', value: p99(on) }, baselines: { 'telemetry off': { unit: 'ms', better: 'lower', value: p99(off) } } },
          { metric: `${path} peak RSS`, project: { unit: 'MiB', better: 'lower', value: rss(on) }, baselines: { 'telemetry off': { unit: 'MiB', better: 'lower', value: rss(off) } } },
        )
        for (const variant of ['off', 'on'] as const) for (const m of results[variant][path]) notes.push(...loadWarnings(`${variant} ${path}`, m.load))
      }
      return {
        title: `Telemetry on (OTLP metrics, traces, logs to a local sink) vs off: ${name} packument and a 1 MiB public artifact relay`,
        rows,
        notes,
      }
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup()
    }
  },
}

export default scenario
