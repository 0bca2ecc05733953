/**
 * Warm packument answers (issue 17 item 1, issue 18): the proxy serving a
 * retained assembled typescript packument, identity and gzip, against nginx
 * serving the very same bytes from disk (identity as a static file; gzip
 * with `gzip_static on` from the precompressed `.gz` beside it, which is the
 * proxy's own coded answer), plus the bytes one install moves per coding.
 *
 * The proxy is the built `service proxy` in its own process (one core),
 * with a private Verdaccio holding the document and an empty public one
 * over https; every measured request is a retained hit (one warm-up request
 * per coding first). Load from a third process (wrk, else autocannon).
 * BENCH_PACKUMENT picks another fixture; BENCH_DURATION_SECONDS and
 * BENCH_CONNECTIONS size the load. The proxy and nginx are measured in
 * BENCH_WARM_ROUNDS alternating rounds per coding (default 5; issue 33: one
 * run each moved the gzip figures by 1.6x between runs): req/s is the
 * median of the rounds, the p99 that of every request of the rounds pooled
 * (bench/lib/round-figures.ts).
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { benchProxyConfig } from '../lib/proxy-config.js'
import { FIXTURE_PACKUMENTS, readPackument, type FixturePackumentName } from '../peers/shared-data.js'
import { ChildPeer } from '../peers/child-peer.js'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import { loadShapeFromEnv, measureServer, type LoadShape } from '../lib/baselines.js'
import { defaultLoadTool } from '../lib/load.js'
import { loadWarnings, type MeasuredServer } from '../lib/load-rows.js'
import { freePort, isUnavailable, startNginx } from '../lib/nginx.js'
import { figuresOf, perRound, type RoundFigures } from '../lib/round-figures.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'

const MB = 1_000_000

function packumentName(): FixturePackumentName {
  const chosen = process.env.BENCH_PACKUMENT ?? 'typescript'
  const known = FIXTURE_PACKUMENTS.find((n) => n === chosen)
  if (known === undefined) throw new Error(`BENCH_PACKUMENT must be one of ${FIXTURE_PACKUMENTS.join(', ')}`)
  return known
}


async function get(url: string, headers: Record<string, string>): Promise<{ status: number, headers: Record<string, unknown>, body: Buffer }> {
  const res = await request(url, { headers })
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) }
}

async function startProxy(priv: VerdaccioPeer, pub: VerdaccioPeer, dir: string): Promise<{ origin: string, stop(): Promise<void> }> {
  const port = await freePort()
  const config = join(dir, 'proxy.yaml')
  await writeFile(config, benchProxyConfig(port, dir, {
    // No advisory rule: the mount is ready without a database, and a private document is trusted anyway.
    mounts: { js: { upstreams: { private: { url: priv.url }, public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } },
  }))
  const service = fileURLToPath(new URL('../../server/cli/service.js', import.meta.url))
  const child = spawn(process.execPath, [service, 'proxy', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] })
  const peer = new ChildPeer('proxy', child)
  const origin = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      const res = await request(`${origin}/readyz`)
      await res.body.dump()
      if (res.statusCode === 200) return { origin, stop: () => peer.stop() }
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await peer.stop()
  throw new Error(`the proxy did not become ready:\n${peer.output}`)
}

const scenario: Scenario = {
  name: 'packument-warm',
  async run(): Promise<ScenarioResult> {
    const name = packumentName()
    const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_WARM_ROUNDS ?? 5)))
    const path = `/js/${name.replace('/', '%2f')}`
    const dir = await mkdtemp(join(tmpdir(), 'bench-warm-'))
    const notes: string[] = []
    const rows: Row[] = []
    const cleanup: string[] = []
    let priv: VerdaccioPeer | undefined
    let pub: VerdaccioPeer | undefined
    let proxy: { origin: string, stop(): Promise<void> } | undefined
    try {
      ;[priv, pub] = await Promise.all([startVerdaccio({ role: 'private', packuments: [await readPackument(name)] }), startVerdaccio({ role: 'public' })])
      proxy = await startProxy(priv, pub, dir)
      const accept = { accept: 'application/json' }
      const identity = await get(`${proxy.origin}${path}`, accept)
      if (identity.status !== 200) throw new Error(`the proxy answered ${identity.status} for ${path}`)
      const gzip = await get(`${proxy.origin}${path}`, { ...accept, 'accept-encoding': 'gzip' })
      const br = await get(`${proxy.origin}${path}`, { ...accept, 'accept-encoding': 'br' })
      if (gzip.headers['content-encoding'] !== 'gzip' || !gunzipSync(gzip.body).equals(identity.body)) throw new Error('the gzip answer does not decode to the identity answer')
      if (br.headers['content-encoding'] !== 'br' || !brotliDecompressSync(br.body).equals(identity.body)) throw new Error('the br answer does not decode to the identity answer')

      // nginx: the same bytes from disk; the .gz beside the file is the proxy's own gzip answer.
      // Its own folder under the temporary directory: nginx's workers may run as another user (bench/lib/nginx.ts).
      const root = await mkdtemp(join(tmpdir(), 'bench-warm-static-'))
      cleanup.push(root)
      const file = join(root, 'js', decodeURIComponent(path.slice('/js/'.length)))
      await mkdir(join(file, '..'), { recursive: true })
      await writeFile(file, identity.body)
      await writeFile(`${file}.gz`, gzip.body)
      const nginx = await startNginx({ kind: 'static', root, defaultType: 'application/json', gzipStatic: true })
      const shape = (headers: Record<string, string>): LoadShape => ({ ...loadShapeFromEnv(headers), warmupSeconds: 2, latencyHistogram: true })
      const forms: [string, Record<string, string>, Buffer][] = [['identity', accept, identity.body], ['gzip', { ...accept, 'accept-encoding': 'gzip' }, gzip.body]]
      for (const [label, headers, body] of forms) {
        // nginx's origin when it serves exactly the proxy's bytes, else why not.
        let nginxAt: { origin: string } | string
        if (isUnavailable(nginx)) nginxAt = nginx.unavailable
        else {
          const check = await get(`${nginx.origin}${path}`, headers)
          nginxAt = check.status === 200 && check.body.equals(body)
            ? { origin: nginx.origin }
            : `nginx answered ${check.status} with other bytes (${check.body.byteLength} B; gzip_static missing from this nginx build?)`
        }
        // Alternating rounds, their order swapped each round: the background load of a
        // shared machine drifts within a minute and would otherwise favour one side.
        const runs: { proxy: MeasuredServer[], nginx: MeasuredServer[] } = { proxy: [], nginx: [] }
        for (let round = 0; round < rounds; round++) {
          const sides = round % 2 === 0 ? ['proxy', 'nginx'] as const : ['nginx', 'proxy'] as const
          for (const side of sides) {
            const server = side === 'proxy' ? proxy : nginxAt
            if (typeof server === 'string') continue
            const m = await measureServer(`${server.origin}${path}`, shape(headers), async () => undefined)
            notes.push(...loadWarnings(`${side} ${label}`, m.load))
            runs[side].push(m)
          }
        }
        const own = figuresOf(runs.proxy)
        const base: RoundFigures | string = typeof nginxAt === 'string' ? nginxAt : figuresOf(runs.nginx)
        if (rounds > 1) {
          const rps = (m: MeasuredServer): number => m.load.requestsPerSecond
          const p99 = (m: MeasuredServer): number => m.load.p99Ms
          notes.push(`${label} req/s per round: proxy ${perRound(runs.proxy, rps, 0)}, nginx ${perRound(runs.nginx, rps, 0)}; p99 ms per round: proxy ${perRound(runs.proxy, p99, 2)}, nginx ${perRound(runs.nginx, p99, 2)}`)
        }
        rows.push({
          metric: `warm ${name} packument, ${label} (${(body.byteLength / MB).toFixed(2)} MB) req/s`,
          project: { unit: 'req/s', better: 'higher', value: own.requestsPerSecond },
          baselines: { nginx: typeof base === 'string' ? base : { unit: 'req/s', better: 'higher', value: base.requestsPerSecond } },
          // Issue 18: a warm packument at 0.85x or more of nginx serving the same bytes from disk.
          goal: { baseline: 'nginx', goodness: 0.85, text: '>= 0.85x nginx' },
        })
        rows.push({
          metric: `warm ${name} packument, ${label} p99 latency`,
          project: { unit: 'ms', better: 'lower', value: own.p99Ms },
          baselines: { nginx: typeof base === 'string' ? base : { unit: 'ms', better: 'lower', value: base.p99Ms } },
        })
      }
      if (!isUnavailable(nginx)) await nginx.stop()
      for (const [label, body] of [['gzip', gzip.body], ['br', br.body]] as const) {
        rows.push({
          metric: `bytes on the wire per ${name} packument, ${label}`,
          project: { unit: 'MB', better: 'lower', value: body.byteLength / MB },
          baselines: { identity: { unit: 'MB', better: 'lower', value: identity.body.byteLength / MB } },
        })
      }
      const tool = await defaultLoadTool()
      notes.push(`proxy: the built service (one core) answering retained hits; nginx: one worker, the same identity bytes and the proxy's gzip bytes as ${name}.gz (gzip_static); ${loadShapeFromEnv().connections} connections, ${loadShapeFromEnv().durationSeconds} s per run after a 2 s warm-up, by ${tool}; ${rounds} alternating round(s) each (BENCH_WARM_ROUNDS), req/s their median, p99 over their requests pooled${tool === 'wrk' ? '' : ' (autocannon: the median of their p99s)'}`)
      return { title: `Warm packument (${name}): the proxy's retained answer, identity and gzip, vs nginx serving the same bytes from disk`, rows, notes }
    } finally {
      await proxy?.stop()
      await Promise.all([priv?.stop(), pub?.stop()])
      for (const d of [dir, ...cleanup]) await rm(d, { recursive: true, force: true })
    }
  },
}

export default scenario
