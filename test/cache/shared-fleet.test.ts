/**
 * The shared metadata cache across a tier (issue 29 item 1, "Must show"):
 * a real `redis-server` (test/peers/redis.ts), three proxy processes (the
 * built service) sharing it, a scripted public registry over TLS and a
 * scripted private registry that is also the publish target.
 *
 * - 300 packument requests for 20 packages spread over the three cause
 *   exactly 20 public packument reads (one read and one render per package
 *   across the tier: the rest are hits or collapsed);
 * - all three restarted, the next request for each package is answered
 *   without any upstream read (the answers live in the server);
 * - a publish relayed by one replica, and a Dredger removal (the stamp move
 *   `service dredger` makes on a removal, server/roles/shared-cache.ts), are
 *   visible on every replica on its next request;
 * - the server killed mid-run: every request still answers correctly (from
 *   the origin), `service.metadata_cache.refused` counts, and the slowest
 *   answer is printed (no timing assertion: the machine is shared).
 *
 * Every process is started on 127.0.0.1 and killed by its pid at teardown.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { request } from 'undici'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { loadConfig } from '../../engine/config/load.js'
import { openSharedCache } from '../../server/roles/shared-cache.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { freePort } from '../helpers/ports.js'
import { prometheusEnv, runService, type ServiceRun } from '../helpers/service-process.js'
import { bytesOf, publishDocument } from '../publish/publish-documents.js'
import { scriptRegistry, type FixtureVersion } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { startRedis, type RedisPeer } from '../peers/redis.js'

/** Three boots at once on the shared 2-core machine. */
const BOOT_TIMEOUT_MS = 150_000
const PACKAGES: readonly FixtureVersion[] = Array.from({ length: 20 }, (_, i) => ({ name: `fleet-${i}`, version: '1.0.0' }))
const OWNED = '@acme/lib'
const OWNED_PATH = '/@acme%2flib'
const BASE_URL = 'http://proxy.tier.test/'
/** The publish relay needs edge tokens (SPEC.md 5.1): every request carries one. */
const EDGE_TOKEN = 'fleet-edge-token'
const AUTH = { authorization: `Bearer ${EDGE_TOKEN}` }

interface Proxy {
  readonly origin: string
  readonly metrics: string
  readonly run: ServiceRun
}

interface Peers {
  readonly ca: TestCa
  readonly publicRegistry: MisbehavingUpstream
  readonly privateRegistry: MisbehavingUpstream
  readonly redis: RedisPeer
  readonly dir: string
}

function privateDocument(versions: readonly string[]): Record<string, unknown> {
  const base = 'lib'
  return {
    name: OWNED,
    'dist-tags': { latest: versions[versions.length - 1] },
    time: Object.fromEntries(versions.map((v) => [v, '2020-01-01T00:00:00.000Z'])),
    versions: Object.fromEntries(versions.map((v) => [v, {
      name: OWNED,
      version: v,
      dist: { tarball: `http://private.test/${OWNED_PATH}/-/${base}-${v}.tgz`, integrity: `sha512-${Buffer.alloc(64, v.length).toString('base64')}` },
    }])),
  }
}

function scriptPrivate(registry: MisbehavingUpstream, versions: readonly string[]): void {
  registry.script(OWNED_PATH, { kind: 'respond', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(privateDocument(versions)) })
}

function serviceEnv(peers: Peers, port: number, metricsPort: number, index: number, rules = '[{"rule":"AllowIfOlderThan","seconds":0}]'): Record<string, string> {
  return {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_SERVER__BASE_URL: BASE_URL,
    SERVICE_SERVER__EDGE_TOKENS: `["${EDGE_TOKEN}"]`,
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_QUEUE__PATH: join(peers.dir, `queue-${index}`),
    SERVICE_STORE__PATH: join(peers.dir, `store-${index}`),
    SERVICE_CACHE__BACKEND: 'redis',
    SERVICE_CACHE__URL: peers.redis.url,
    // Above the default 100 ms: on the shared 2-core test machine a command can wait that long for a CPU, and each one that
    // times out is, rightly, one more origin read (it counts refused). The killed-server case fails at once either way.
    SERVICE_CACHE__TIMEOUT_MS: '1000',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${peers.publicRegistry.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: peers.ca.caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__URL: `${peers.privateRegistry.origin}/`,
    SERVICE_MOUNTS__JS__PUBLISH__TARGET: `${peers.privateRegistry.origin}/`,
    SERVICE_MOUNTS__JS__PUBLISH__SCOPES: '["@acme"]',
    SERVICE_MOUNTS__JS__RULES: rules,
    ...prometheusEnv(metricsPort),
  }
}

async function startFleet(t: Test, peers: Peers, rules?: string): Promise<Proxy[]> {
  const fleet = await Promise.all([0, 1, 2].map(async (index) => {
    const port = await freePort()
    const metricsPort = await freePort()
    const run = runService(t, ['proxy'], serviceEnv(peers, port, metricsPort, index, rules))
    return { origin: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, run }
  }))
  await Promise.all(fleet.map((p) => p.run.waitForOutput('proxy listening', BOOT_TIMEOUT_MS)))
  t.teardown(() => {
    if (t.passing()) return
    for (const p of fleet) t.comment(`${p.origin} stderr: ${p.run.stderr().slice(-3000)}\nstdout: ${p.run.stdout().split('\n').filter((l) => /shared cache|"error"/.test(l)).join('\n').slice(-3000)}`)
  })
  return fleet
}

async function stopFleet(fleet: readonly Proxy[]): Promise<void> {
  for (const p of fleet) p.run.child.kill('SIGTERM')
  await Promise.all(fleet.map((p) => p.run.exited))
}

/** GET requests for packuments the registry served, by path. */
function packumentReads(registry: MisbehavingUpstream, from: number): string[] {
  return registry.requests.slice(from).filter((r) => r.method === 'GET' && !r.url.includes('/-/')).map((r) => r.url)
}

async function getJson(origin: string, path: string): Promise<{ status: number, body: Record<string, any>, ms: number }> {
  const started = performance.now()
  const res = await request(`${origin}${path}`, { headers: AUTH, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const text = await res.body.text()
  const ms = performance.now() - started
  let body: Record<string, any> = {}
  try { body = JSON.parse(text) as Record<string, any> } catch { body = { text } }
  return { status: res.statusCode, body, ms }
}

async function refusedOn(proxy: Proxy): Promise<number> {
  const res = await request(proxy.metrics)
  const text = await res.body.text()
  let sum = 0
  for (const line of text.split('\n')) {
    if (line.startsWith('service_metadata_cache_refused')) sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

/** Runs `count` requests, `parallel` at a time, request i for package i % 20 on replica i % 3. */
async function spread(fleet: readonly Proxy[], count: number, parallel: number, check: (i: number, r: Awaited<ReturnType<typeof getJson>>) => void): Promise<number> {
  let next = 0
  let slowest = 0
  const lane = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const pkg = PACKAGES[i % PACKAGES.length] as FixtureVersion
      const r = await getJson((fleet[i % fleet.length] as Proxy).origin, `/js/${pkg.name}`)
      slowest = Math.max(slowest, r.ms)
      check(i, r)
    }
  }
  await Promise.all(Array.from({ length: parallel }, lane))
  return slowest
}

t.test('three proxies sharing a redis-server', { timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'shared-fleet-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const publicRegistry = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => publicRegistry.stop())
  // A registry that honours If-None-Match, so a kept document's revalidation is a 304.
  for (const [name, doc] of await scriptRegistry(publicRegistry, PACKAGES)) publicRegistry.script(doc.path, { kind: 'conditional', etag: `"${name}-r1"`, body: doc.body })
  const privateRegistry = await startMisbehavingUpstream()
  t.teardown(() => privateRegistry.stop())
  scriptPrivate(privateRegistry, ['1.0.0'])
  const redis = await startRedis(t)
  const peers: Peers = { ca, publicRegistry, privateRegistry, redis, dir }

  const outer = t
  let fleet = await startFleet(t, peers)

  const wrong: string[] = []
  const correct = (i: number, r: Awaited<ReturnType<typeof getJson>>): void => {
    const pkg = PACKAGES[i % PACKAGES.length] as FixtureVersion
    if (r.status !== 200 || r.body['name'] !== pkg.name || r.body['versions']?.[pkg.version] === undefined) wrong.push(`${pkg.name}: ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`)
  }

  await t.test('300 requests for 20 packages over 3 replicas: 20 public packument reads', async (t) => {
    const from = publicRegistry.requests.length
    await spread(fleet, 300, 12, correct)
    t.same(wrong, [], 'every answer is the package with its version')
    const reads = packumentReads(publicRegistry, from)
    t.equal(reads.length, 20, `exactly one public read per package (${reads.length})`)
    t.equal(new Set(reads).size, 20, 'one for each package')
    t.comment(`refused on the replicas: ${(await Promise.all(fleet.map(refusedOn))).join(', ')}`)
  })

  await t.test('all three restarted: answered without any upstream read', async (t) => {
    await stopFleet(fleet)
    // On the outer test: the fleet outlives this subtest.
    fleet = await startFleet(outer, peers)
    const publicFrom = publicRegistry.requests.length
    const privateFrom = privateRegistry.requests.length
    await spread(fleet, 20, 4, correct)
    t.same(wrong, [])
    t.same(packumentReads(publicRegistry, publicFrom), [], 'no public read')
    t.same(packumentReads(privateRegistry, privateFrom), [], 'no private read')
  })

  await t.test('all three restarted under other rules: each package re-rendered after a 304, no full read', async (t) => {
    await stopFleet(fleet)
    // Other rules are another generation: no retained answer serves; the kept documents (shared) make each read a conditional one.
    fleet = await startFleet(outer, peers, '[{"rule":"AllowIfOlderThan","seconds":1}]')
    const publicFrom = publicRegistry.requests.length
    await spread(fleet, 20, 4, correct)
    t.same(wrong, [])
    const reads = publicRegistry.requests.slice(publicFrom).filter((r) => r.method === 'GET' && !r.url.includes('/-/'))
    t.same(reads.filter((r) => r.headers['if-none-match'] === undefined).map((r) => r.url), [], 'no full public read')
    t.equal(new Set(reads.map((r) => r.url)).size, 20, `one conditional read per package (${reads.length} reads)`)
    const kept = await Promise.all(fleet.map(async (p) => {
      const text = await (await request(p.metrics)).body.text()
      return Number(/^service_packument_kept_documents(?:_total)?\{[^}]*result="revalidated"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0)
    }))
    t.equal(kept.reduce((a, b) => a + b, 0), reads.length, `every 304 served the kept document (${kept.join(', ')} by replica)`)
  })

  await t.test('an artifact whose version the public side supplied skips the private leg on every replica', async (t) => {
    const privateFrom = privateRegistry.requests.length
    // Package i was listed through replica i % 3: its artifact is asked of another one, which knows it from the shared record.
    for (const [i, pkg] of PACKAGES.slice(0, 6).entries()) {
      const res = await request(`${(fleet[(i + 1) % fleet.length] as Proxy).origin}/js/${pkg.name}/-/${pkg.name}-${pkg.version}.tgz`, { headers: AUTH, headersTimeout: 60_000, bodyTimeout: 60_000 })
      await res.body.dump()
      t.equal(res.statusCode, 200, `${pkg.name}: served from the public leg`)
    }
    t.same(privateRegistry.requests.slice(privateFrom).map((r) => r.url), [], 'the private registry was not asked')
  })

  await t.test('a publish and a Dredger removal are visible on every replica on its next request', async (t) => {
    for (const p of fleet) t.same(Object.keys((await getJson(p.origin, `/js/${OWNED_PATH.slice(1)}`)).body['versions'] ?? {}), ['1.0.0'], 'before: 1.0.0')
    // The private registry holds 2.0.0 once it takes the publish.
    scriptPrivate(privateRegistry, ['1.0.0', '2.0.0'])
    const put = await request(`${fleet[0]?.origin}/js/${OWNED_PATH.slice(1)}`, { method: 'PUT', body: bytesOf(publishDocument({ name: OWNED, version: '2.0.0' })), headers: { ...AUTH, 'content-type': 'application/json' } })
    await put.body.dump()
    t.ok(put.statusCode < 300, `the publish was relayed (${put.statusCode})`)
    for (const p of fleet) t.same(Object.keys((await getJson(p.origin, `/js/${OWNED_PATH.slice(1)}`)).body['versions'] ?? {}).sort(), ['1.0.0', '2.0.0'], 'after the publish: 2.0.0 on every replica')

    // The Dredger removes 2.0.0 from the private registry, then moves the package's stamp (what `service dredger` does on a removal).
    scriptPrivate(privateRegistry, ['1.0.0'])
    const loaded = loadConfig({ env: serviceEnv(peers, 1, 1, 9), npmRegistry: () => undefined })
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems))
    const shared = await openSharedCache(loaded.config, new RecordingLogger())
    t.ok(shared, 'the Dredger role opens the shared cache')
    await shared?.invalidation.invalidate('js', OWNED)
    await shared?.close()
    for (const p of fleet) t.same(Object.keys((await getJson(p.origin, `/js/${OWNED_PATH.slice(1)}`)).body['versions'] ?? {}), ['1.0.0'], 'after the removal: 2.0.0 gone on every replica')
  })

  await t.test('the server killed mid-run: every request answers from the origin, refused counts', async (t) => {
    const refusedBefore = (await Promise.all(fleet.map(refusedOn))).reduce((a, b) => a + b, 0)
    const publicFrom = publicRegistry.requests.length
    // Killed once 40 of the 120 answers are in: the rest are in flight or still to come.
    let killed: Promise<void> | undefined
    let answered = 0
    const slowestDuring = await spread(fleet, 120, 6, (i, r) => {
      correct(i, r)
      if (++answered === 40) killed = redis.kill()
    })
    await killed
    const slowestAfter = await spread(fleet, 60, 6, correct)
    t.same(wrong, [], 'every answer is the package with its version')
    const refusedAfter = (await Promise.all(fleet.map(refusedOn))).reduce((a, b) => a + b, 0)
    t.ok(refusedAfter > refusedBefore, `refused counts (${refusedBefore} -> ${refusedAfter})`)
    t.ok(packumentReads(publicRegistry, publicFrom).length > 0, 'served from the origin')
    t.ok(killed !== undefined, 'the server was killed mid-run')
    t.comment(`slowest answer of the run the server was killed in: ${slowestDuring.toFixed(0)} ms; of the run after: ${slowestAfter.toFixed(0)} ms (cache.timeoutMs 1000 here; each answer after the kill is an origin read and a render)`)
  })

  await stopFleet(fleet)
})
