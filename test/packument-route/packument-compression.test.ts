/**
 * Compressed packument answers (issue 17 item 1) through the real proxy role
 * over a real Verdaccio: br and gzip by `Accept-Encoding`, a distinct ETag
 * per coding, `Vary: Accept, Accept-Encoding`, HEAD and 304 per
 * representation, and a warm hit that serves the retained coded bytes
 * (a store hit, no new entry, no new render).
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import type { MetadataCacheSnapshot } from '../../engine/cache/metadata-cache.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { startTestProxy } from '../helpers/proxy.js'

const ABBREVIATED = 'application/vnd.npm.install-v1+json'

const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
for (const version of ['1.0.0', '1.1.0', '2.0.0']) {
  await publishFixture(priv, { name: 'coded', version, manifest: { description: `a description long enough to be worth coding ${'x'.repeat(400)}` } })
}
const proxy = await startTestProxy(t, {
  document: { mounts: { js: { upstreams: { private: { url: priv.url }, public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } } } } },
})
const cache = (): MetadataCacheSnapshot => proxy.role.metrics()['service.metadata_cache'] as MetadataCacheSnapshot

const identity = await proxy.get('/js/coded')
t.equal(identity.status, 200)
t.equal(identity.headers['content-encoding'], undefined, 'no Accept-Encoding: identity')
t.equal(identity.headers['vary'], 'Accept, Accept-Encoding, npm-command')
const identityEtag = String(identity.headers['etag'])

for (const [coding, decode] of [['gzip', gunzipSync], ['br', brotliDecompressSync]] as const) {
  t.test(`${coding}: coded bytes of the same document, its own ETag, HEAD and 304 per representation`, async (t) => {
    const res = await proxy.get('/js/coded', { 'accept-encoding': coding === 'gzip' ? 'gzip, deflate' : 'gzip, deflate, br' })
    t.equal(res.status, 200)
    t.equal(res.headers['content-encoding'], coding)
    t.equal(res.headers['vary'], 'Accept, Accept-Encoding, npm-command')
    t.equal(res.headers['etag'], identityEtag.replace(/"$/, `-${coding}"`))
    t.same(decode(res.body), identity.body, 'decodes to the identity answer')
    t.ok(res.body.byteLength < identity.body.byteLength, 'fewer bytes on the wire')

    const head = await proxy.fetch('HEAD', '/js/coded', { headers: { 'accept-encoding': coding } })
    t.equal(head.headers['content-encoding'], coding)
    t.equal(head.headers['content-length'], String(res.body.byteLength), "HEAD carries the coded body's length")

    const same = await proxy.get('/js/coded', { 'accept-encoding': coding, 'if-none-match': String(res.headers['etag']) })
    t.equal(same.status, 304, 'the coded ETag revalidates the coded representation')
    const other = await proxy.get('/js/coded', { 'accept-encoding': coding, 'if-none-match': identityEtag })
    t.equal(other.status, 200, 'the identity ETag does not match a coded answer')
  })
}

t.test('a warm coded hit serves the retained bytes: a hit, no new entry, no render', async (t) => {
  const first = await proxy.get('/js/coded', { accept: ABBREVIATED, 'accept-encoding': 'gzip' })
  t.equal(first.headers['content-encoding'], 'gzip')
  const before = cache()
  const again = await proxy.get('/js/coded', { accept: ABBREVIATED, 'accept-encoding': 'gzip' })
  const after = cache()
  t.same(again.body, first.body)
  t.equal(after.assembled.hit, before.assembled.hit + 1, 'one hit')
  t.equal(after.assembled.miss, before.assembled.miss, 'no miss')
  t.equal(after.assembled.entries, before.assembled.entries, 'nothing new retained')
  t.equal(after.full.miss, before.full.miss, 'no upstream read')
})

t.test('a cold coded request is one miss: the identity render; the coded form is retained beside it', async (t) => {
  await publishFixture(priv, { name: 'coded-cold', version: '1.0.0', manifest: { description: 'y'.repeat(2000) } })
  const before = cache()
  const res = await proxy.get('/js/coded-cold', { 'accept-encoding': 'br' })
  t.equal(res.headers['content-encoding'], 'br')
  const after = cache()
  t.equal(after.assembled.miss, before.assembled.miss + 1, 'counted once')
  t.equal(after.assembled.hit, before.assembled.hit)
  t.equal(after.assembled.entries, before.assembled.entries + 2, 'identity and br retained')
  const plain = await proxy.get('/js/coded-cold')
  t.equal(plain.headers['content-encoding'], undefined)
  t.same(brotliDecompressSync(res.body), plain.body)
})

t.test('small answers and refusals of every coding go as identity', async (t) => {
  const missing = await proxy.get('/js/no-such-package-here', { 'accept-encoding': 'gzip, br' })
  t.equal(missing.status, 404)
  t.equal(missing.headers['content-encoding'], undefined, 'an envelope under 1 KiB is not coded')
  const refused = await proxy.get('/js/coded', { 'accept-encoding': 'identity;q=0, *;q=0' })
  t.equal(refused.status, 200)
  t.equal(refused.headers['content-encoding'], undefined, 'nothing acceptable: identity, not 406')
  const onlyIdentity = await proxy.get('/js/coded', { 'accept-encoding': 'deflate' })
  t.equal(onlyIdentity.headers['content-encoding'], undefined, 'deflate is not offered')
})
