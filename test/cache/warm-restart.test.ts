/**
 * Warm restarts on the local backend (issue 29 item 4, docs/cache.md
 * "Kept upstream documents"): a proxy process (the built service) reads N
 * packuments from a scripted public registry over TLS that honours
 * If-None-Match; it is stopped and started again on the same
 * `cache.warmPath`, and the next request for each package is a conditional
 * read answered 304 (no full read), rendered from the kept document. A kept
 * file corrupted while the proxy was down is discarded (counted, never
 * served: that package is read in full), and a smaller `cache.warmMaxBytes`
 * at the next start holds: the folder is trimmed to it at boot and stays
 * within it.
 *
 * Every process is started on 127.0.0.1 and killed by its pid at teardown.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { request } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
import { freePort } from '../helpers/ports.js'
import { prometheusEnv, runService, type ServiceRun } from '../helpers/service-process.js'
import { scriptRegistry, type FixtureVersion } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'

const PACKAGES: readonly FixtureVersion[] = Array.from({ length: 12 }, (_, i) => ({ name: `warm-${i}`, version: `1.0.${i}` }))
const BOOT_TIMEOUT_MS = 120_000

interface Proxy {
  readonly origin: string
  readonly metrics: string
  readonly run: ServiceRun
}

async function startProxy(t: Test, registry: MisbehavingUpstream, caFile: string, dir: string, extra: Record<string, string> = {}): Promise<Proxy> {
  const port = await freePort()
  const metricsPort = await freePort()
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_SERVER__BASE_URL: 'http://proxy.warm.test/',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_QUEUE__PATH: join(dir, 'queue'),
    SERVICE_STORE__PATH: join(dir, 'store'),
    SERVICE_CACHE__WARM_PATH: join(dir, 'warm'),
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${registry.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
    ...prometheusEnv(metricsPort),
    ...extra,
  })
  await run.waitForOutput('proxy listening', BOOT_TIMEOUT_MS)
  return { origin: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, run }
}

async function stopProxy(proxy: Proxy): Promise<void> {
  proxy.run.child.kill('SIGTERM')
  await proxy.run.exited
}

/** The packument reads the registry served since `from`: full (no If-None-Match) and conditional ones, by package. */
function reads(registry: MisbehavingUpstream, from: number): { full: string[], conditional: string[] } {
  const documents = registry.requests.slice(from).filter((r) => r.method === 'GET' && !r.url.includes('/-/'))
  return {
    full: documents.filter((r) => r.headers['if-none-match'] === undefined).map((r) => r.url.slice(1)).sort(),
    conditional: documents.filter((r) => r.headers['if-none-match'] !== undefined).map((r) => r.url.slice(1)).sort(),
  }
}

async function requestAll(proxy: Proxy, order: readonly FixtureVersion[] = PACKAGES): Promise<string[]> {
  const wrong: string[] = []
  for (const pkg of order) {
    const res = await request(`${proxy.origin}/js/${pkg.name}`, { headersTimeout: 60_000, bodyTimeout: 60_000 })
    const body = await res.body.json() as { name?: string, versions?: Record<string, unknown> }
    if (res.statusCode !== 200 || body.name !== pkg.name || body.versions?.[pkg.version] === undefined) wrong.push(`${pkg.name}: ${res.statusCode}`)
  }
  return wrong
}

async function keptCounts(proxy: Proxy): Promise<Record<string, number>> {
  const text = await (await request(proxy.metrics)).body.text()
  const counts: Record<string, number> = {}
  for (const line of text.split('\n')) {
    const m = /^service_packument_kept_documents(?:_total)?\{[^}]*result="([a-z]+)"[^}]*\} (\d+)/.exec(line)
    if (m !== null) counts[m[1] as string] = Number(m[2])
  }
  return counts
}

/** The kept files and their bytes, once `count` are there (the writes run behind the answers). */
async function keptFiles(dir: string, count: number): Promise<{ name: string, bytes: number }[]> {
  for (let i = 0; ; i++) {
    const names = (await readdir(dir)).filter((n) => n.endsWith('.doc'))
    if (names.length >= count || i >= 100) return Promise.all(names.map(async (name) => ({ name, bytes: (await stat(join(dir, name))).size })))
    await sleep(100)
  }
}

t.test('a restarted proxy on the local backend revalidates what it kept', { timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'warm-restart-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const registry = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => registry.stop())
  const documents = await scriptRegistry(registry, PACKAGES)
  for (const [name, doc] of documents) registry.script(doc.path, { kind: 'conditional', etag: `"${name}-r1"`, body: doc.body })
  const warm = join(dir, 'warm')

  let proxy = await startProxy(t, registry, ca.caFile, dir)
  let from = registry.requests.length
  t.same(await requestAll(proxy), [], 'first boot: every answer is the package with its version')
  t.same(reads(registry, from).full, PACKAGES.map((p) => p.name).sort(), 'first boot: one full read per package')
  const files = await keptFiles(warm, PACKAGES.length)
  t.equal(files.length, PACKAGES.length, 'one kept file per package')
  await stopProxy(proxy)

  // A byte of one body flipped, as a disk error or a torn copy would.
  const corrupted = files[0] as { name: string }
  const bytes = await readFile(join(warm, corrupted.name))
  bytes[bytes.length - 2] = (bytes[bytes.length - 2] as number) ^ 0x20
  await writeFile(join(warm, corrupted.name), bytes)

  proxy = await startProxy(t, registry, ca.caFile, dir)
  from = registry.requests.length
  t.same(await requestAll(proxy), [], 'after the restart: every answer is the package with its version')
  const after = reads(registry, from)
  t.equal(after.full.length, 1, `after the restart: one full read, for the corrupted file's package (${after.full.join(', ')})`)
  t.equal(after.conditional.length, PACKAGES.length - 1, 'every other package: one conditional read')
  t.same([...after.conditional, ...after.full].sort(), PACKAGES.map((p) => p.name).sort(), 'one read per package')
  const counts = await keptCounts(proxy)
  t.equal(counts['revalidated'], PACKAGES.length - 1, 'each 304 served the render from the kept document')
  t.equal(counts['corrupt'], 1, 'the corrupted file was counted and discarded')
  t.comment(`kept documents after the restart: ${JSON.stringify(counts)}`)
  const again = await keptFiles(warm, PACKAGES.length)
  t.equal(again.length, PACKAGES.length, 'the corrupted package was kept again from its full read')
  await stopProxy(proxy)

  // A bound that holds about half of them: trimmed at boot, and kept within while serving.
  const largest = Math.max(...again.map((f) => f.bytes))
  const bound = 8 * largest - 1
  const total = again.reduce((n, f) => n + f.bytes, 0)
  t.ok(total > bound, `the files (${total} bytes) exceed the smaller bound (${bound})`)
  proxy = await startProxy(t, registry, ca.caFile, dir, { SERVICE_CACHE__WARM_MAX_BYTES: String(bound) })
  const trimmed = await keptFiles(warm, 0)
  t.ok(trimmed.reduce((n, f) => n + f.bytes, 0) <= bound, 'trimmed to the bound at boot')
  from = registry.requests.length
  // Newest first: the kept ones are the most recently used, asked for before a full read's write can evict them.
  t.same(await requestAll(proxy, [...PACKAGES].reverse()), [], 'under the smaller bound: every answer is right')
  const bounded = reads(registry, from)
  t.equal(bounded.conditional.length + bounded.full.length, PACKAGES.length, 'one read per package')
  t.equal(bounded.conditional.length, trimmed.length, 'the kept ones revalidated, the trimmed ones read in full')
  await sleep(500)
  const last = await keptFiles(warm, 0)
  t.ok(last.reduce((n, f) => n + f.bytes, 0) <= bound, `the folder stays within the bound (${last.reduce((n, f) => n + f.bytes, 0)} <= ${bound})`)
  t.ok(((await keptCounts(proxy))['evicted'] ?? 0) > 0, 'evictions counted')
  await stopProxy(proxy)
})
