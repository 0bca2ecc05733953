/**
 * The artifact route between two real Verdaccio registries, fixtures
 * published with the real npm CLI (PEERS.md): a private hit, a private miss
 * served by the public leg with one mirror job naming the authoritative
 * `dist.tarball`, a denied version refused on GET and HEAD, HEAD without a
 * job. The test's selectVersion reads the public packument through the
 * public client (the lead's real one reads the store first).
 */
import t from 'tap'
import { request } from 'undici'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import type { SelectedArtifact } from '../../server/routes/artifact-route.js'
import { decision, startArtifactRoute } from './harness.js'

interface Packument {
  versions?: Record<string, { dist?: { tarball?: string, integrity?: string, shasum?: string } }>
  time?: Record<string, string>
}

const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
await publishFixture(priv, { name: '@acme/inside', version: '1.0.0' })
await publishFixture(pub, { name: 'outside', version: '1.0.0' })
await publishFixture(pub, { name: 'outside', version: '2.0.0' })

function client(url: string, trusted: boolean): UpstreamClient {
  const c = new UpstreamClient({
    url, trusted, maxResponseBytes: 16 * 1024 * 1024, proxyId: 'proxy-test', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
    ...(trusted ? {} : { caPem: pub.ca!.caPem, allowInternalRanges: ['127.0.0.0/8'] }),
  })
  t.teardown(() => c.destroy())
  return c
}
const privateClient = client(priv.url, true)
const publicClient = client(pub.url, false)

async function selectVersion(name: string, filename: string): Promise<SelectedArtifact | undefined> {
  const doc = await publicClient.fetchDocument(name)
  if (doc.kind !== 'document') return undefined
  const packument = JSON.parse(Buffer.concat(doc.chunks).toString('utf8')) as Packument
  for (const [version, manifest] of Object.entries(packument.versions ?? {})) {
    const tarball = manifest.dist?.tarball
    if (tarball === undefined || !tarball.endsWith(`/-/${filename}`)) continue
    const time = packument.time?.[version]
    return { version, filename, tarball, integrity: manifest.dist?.integrity, shasum: manifest.dist?.shasum, publishedAt: time === undefined ? undefined : new Date(time) }
  }
  return undefined
}

async function direct(url: string, dispatcher = pub.dispatcher): Promise<Buffer> {
  const res = await request(url, { dispatcher })
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`)
  return Buffer.from(await res.body.arrayBuffer())
}

const route = await startArtifactRoute(t, {
  privateClient,
  publicClient,
  selectVersion,
  evaluate: (facts) => (facts.name === 'outside' && facts.version === '2.0.0' ? decision('deny', { rule: 'DenyIdentity', reason: 'identity' }) : decision('admit')),
})

t.test('a private hit streams the private bytes and makes no job', async (t) => {
  const res = await route.get('/js/@acme%2finside/-/inside-1.0.0.tgz')
  t.equal(res.status, 200)
  t.ok(res.body.equals(await direct(`${priv.origin}/@acme%2finside/-/inside-1.0.0.tgz`, priv.dispatcher)), 'the private tarball, verbatim')
  const twoSegments = await route.get('/js/@acme/inside/-/inside-1.0.0.tgz')
  t.equal(twoSegments.status, 200, 'the two-segment scoped form too')
  t.equal(route.selects(), 0, 'no public selection for a private hit')
  t.equal(route.counters.snapshot().relays.private.delivered, 2)
})

t.test('a private miss is served by the public leg, then one job names the authoritative tarball', async (t) => {
  const selection = await selectVersion('outside', 'outside-1.0.0.tgz')
  t.ok(selection?.integrity?.startsWith('sha512-'))
  const res = await route.get('/js/outside/-/outside-1.0.0.tgz')
  t.equal(res.status, 200)
  t.ok(res.body.equals(await direct(selection!.tarball)), 'the public tarball, verbatim')
  await route.enqueueCalls(1)
  t.equal(route.jobs.length, 1)
  t.match(route.jobs[0], { url: selection!.tarball, package: 'outside', version: '1.0.0', filename: 'outside-1.0.0.tgz', integrity: selection!.integrity, shasum: selection!.shasum })
  const head = await route.head('/js/outside/-/outside-1.0.0.tgz')
  t.equal(head.status, 200)
  t.equal(head.body.byteLength, 0)
  t.equal(head.headers['content-length'], String(res.body.byteLength))
  t.equal(route.jobs.length, 1, 'HEAD made no job')
})

t.test('a denied version is refused on GET and HEAD, with no job', async (t) => {
  const res = await route.get('/js/outside/-/outside-2.0.0.tgz')
  t.equal(res.status, 403)
  t.type(JSON.parse(res.body.toString()).error, 'string')
  const head = await route.head('/js/outside/-/outside-2.0.0.tgz')
  t.equal(head.status, 403)
  t.equal(head.body.byteLength, 0)
  t.ok(route.observed.some((o) => o.facts.version === '2.0.0' && o.decision.verdict === 'deny'))
  t.equal(route.jobs.length, 1)
})

t.test('a file neither upstream has is a forwarded miss', async (t) => {
  t.equal((await route.get('/js/outside/-/outside-9.9.9.tgz')).status, 404)
  t.equal((await route.get('/js/nowhere/-/nowhere-1.0.0.tgz')).status, 404)
})
