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
 * BENCH_CONNECTIONS size the load.
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import YAML from 'yaml'
import { FIXTURE_PACKUMENTS, readPackument, type FixturePackumentName } from '../peers/shared-data.js'
import { ChildPeer } from '../peers/child-peer.js'
import { startVerdaccio, type VerdaccioPeer } from '../peers/verdaccio.js'
import { loadShapeFromEnv, measureServer } from '../lib/baselines.js'
import { loadWarnings, type MeasuredServer } from '../lib/load-rows.js'
import { freePort, isUnavailable, startNginx } from '../lib/nginx.js'
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
  await writeFile(config, YAML.stringify({
    server: { host: '127.0.0.1', port, baseUrl: `http://127.0.0.1:${port}` },
    runtime: { cores: 1 },
    observability: { logLevel: 'warn' },
    queue: { path: join(dir, 'queue') },
    store: { path: join(dir, 'store') },
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
      const shape = (headers: Record<string, string>) => ({ ...loadShapeFromEnv(headers), warmupSeconds: 2 })
      const forms: [string, Record<string, string>, Buffer][] = [['identity', accept, identity.body], ['gzip', { ...accept, 'accept-encoding': 'gzip' }, gzip.body]]
      for (const [label, headers, body] of forms) {
        const own = await measureServer(`${proxy.origin}${path}`, shape(headers), async () => undefined)
        notes.push(...loadWarnings(`proxy ${label}`, own.load))
        let base: MeasuredServer | string
        if (isUnavailable(nginx)) base = nginx.unavailable
        else {
          const check = await get(`${nginx.origin}${path}`, headers)
          base = check.status === 200 && check.body.equals(body)
            ? await measureServer(`${nginx.origin}${path}`, shape(headers), async () => undefined)
            : `nginx answered ${check.status} with other bytes (${check.body.byteLength} B; gzip_static missing from this nginx build?)`
          if (typeof base !== 'string') notes.push(...loadWarnings(`nginx ${label}`, base.load))
        }
        const baseline = typeof base === 'string' ? base : { unit: 'req/s', better: 'higher' as const, value: base.load.requestsPerSecond }
        rows.push({
          metric: `warm ${name} packument, ${label} (${(body.byteLength / MB).toFixed(2)} MB) req/s`,
          project: { unit: 'req/s', better: 'higher', value: own.load.requestsPerSecond },
          baselines: { nginx: baseline },
          // Issue 18: a warm packument at 0.85x or more of nginx serving the same bytes from disk.
          goal: { baseline: 'nginx', goodness: 0.85, text: '>= 0.85x nginx' },
        })
        rows.push({
          metric: `warm ${name} packument, ${label} p99 latency`,
          project: { unit: 'ms', better: 'lower', value: own.load.p99Ms },
          baselines: { nginx: typeof base === 'string' ? base : { unit: 'ms', better: 'lower', value: base.load.p99Ms } },
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
      notes.push(`proxy: the built service (one core) answering retained hits; nginx: one worker, the same identity bytes and the proxy's gzip bytes as ${name}.gz (gzip_static); ${loadShapeFromEnv().connections} connections, ${loadShapeFromEnv().durationSeconds} s after a 2 s warm-up`)
      return { title: `Warm packument (${name}): the proxy's retained answer, identity and gzip, vs nginx serving the same bytes from disk`, rows, notes }
    } finally {
      await proxy?.stop()
      await Promise.all([priv?.stop(), pub?.stop()])
      for (const d of [dir, ...cleanup]) await rm(d, { recursive: true, force: true })
    }
  },
}

export default scenario
