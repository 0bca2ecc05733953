/**
 * GET /js/{package} against two real Verdaccio upstreams: a private one
 * (http, trusted) and a public one (https with a CA made for the test),
 * fixtures published with the real npm CLI (SPEC.md 4.2, 2.1-2.3).
 */
import t from 'tap'
import { request } from 'undici'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { startTestProxy, type TestProxy } from '../helpers/proxy.js'

interface Packument {
  name: string
  versions: Record<string, { name: string; version: string; dist: { tarball: string; integrity?: string; shasum?: string }; description?: string }>
  'dist-tags': Record<string, string>
  time?: Record<string, string>
}

const ABBREVIATED = 'application/vnd.npm.install-v1+json'

async function upstreamDocument(peer: VerdaccioPeer, name: string): Promise<Packument> {
  const res = await request(`${peer.origin}/${name.replace('/', '%2f')}`, { dispatcher: peer.dispatcher })
  return await res.body.json() as Packument
}

t.test('packument route over real upstreams', async (t) => {
  const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
  t.teardown(() => Promise.all([priv.stop(), pub.stop()]))

  await publishFixture(priv, { name: 'shared-pkg', version: '1.0.0', manifest: { description: 'private build' } })
  for (const version of ['1.0.0', '2.0.0', '2.1.0-beta.1', '3.0.0']) {
    await publishFixture(pub, { name: 'shared-pkg', version, manifest: { description: `public ${version}` }, ...(version.includes('-') ? { tag: 'next' } : {}) })
  }
  await publishFixture(pub, { name: '@scope/only-public', version: '1.0.0' })
  await publishFixture(pub, { name: 'all-denied', version: '1.0.0' })

  const proxy: TestProxy = await startTestProxy(t, {
    document: {
      mounts: {
        js: {
          upstreams: {
            private: { url: priv.url },
            public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
          },
          rules: [
            { rule: 'DenyIdentity', package: 'shared-pkg', versions: '3.0.0' },
            { rule: 'DenyIdentity', package: 'all-denied', versions: '*' },
            { rule: 'AllowIfOlderThan', seconds: 0 },
          ],
        },
      },
    },
  })
  const publicDoc = await upstreamDocument(pub, 'shared-pkg')
  const privateDoc = await upstreamDocument(priv, 'shared-pkg')

  t.test('HEAD mirrors GET: the same status and headers, no body', async (t) => {
    for (const accept of ['application/json', ABBREVIATED]) {
      const got = await proxy.get('/js/shared-pkg', { accept })
      const head = await proxy.fetch('HEAD', '/js/shared-pkg', { headers: { accept } })
      t.equal(head.status, 200, accept)
      t.equal(head.headers['etag'], got.headers['etag'], `${accept}: the same ETag`)
      t.equal(head.headers['content-type'], got.headers['content-type'], `${accept}: the same type`)
      t.equal(head.headers['content-length'], String(got.body.byteLength), `${accept}: the GET body's length`)
      t.equal(head.body.byteLength, 0, `${accept}: no body`)
    }
    const missing = await proxy.fetch('HEAD', '/js/no-such-package-anywhere')
    const missingGet = await proxy.get('/js/no-such-package-anywhere')
    t.equal(missing.status, missingGet.status, 'a miss has the status GET has')
    t.equal(missing.body.byteLength, 0)
  })

  t.test('merge, private wins, rewrite, integrity, latest, time', async (t) => {
    const res = await proxy.get('/js/shared-pkg')
    t.equal(res.status, 200)
    t.match(res.headers['content-type'], /^application\/json/)
    t.match(res.headers['etag'], /^"/, 'a strong ETag of our own')
    const doc = res.json() as Packument
    t.equal(doc.name, 'shared-pkg')
    t.same(Object.keys(doc.versions).sort(), ['1.0.0', '2.0.0', '2.1.0-beta.1'], 'the denied 3.0.0 is gone')
    t.equal(doc.versions['1.0.0']?.description, 'private build', 'private wins a version collision')
    t.equal(doc.versions['1.0.0']?.dist.integrity, privateDoc.versions['1.0.0']?.dist.integrity, 'private integrity kept')
    t.equal(doc.versions['2.0.0']?.dist.integrity, publicDoc.versions['2.0.0']?.dist.integrity, 'integrity byte for byte')
    t.equal(doc.versions['2.0.0']?.dist.shasum, publicDoc.versions['2.0.0']?.dist.shasum, 'shasum byte for byte')
    for (const [version, manifest] of Object.entries(doc.versions)) {
      t.equal(manifest.dist.tarball, `${proxy.url}/js/shared-pkg/-/shared-pkg-${version}.tgz`, `tarball of ${version} rewritten`)
    }
    t.equal(doc['dist-tags']['latest'], '2.0.0', 'latest repointed to the newest surviving non-prerelease')
    t.equal(doc['dist-tags']['next'], '2.1.0-beta.1')
    t.notOk('3.0.0' in (doc.time ?? {}), 'time dropped for the removed version')
    t.ok(doc.time?.['created'] !== undefined && doc.time?.['modified'] !== undefined, 'created and modified kept')
    t.ok(doc.time?.['2.0.0'] !== undefined)

    const again = await proxy.get('/js/shared-pkg', { 'if-none-match': String(res.headers['etag']) })
    t.equal(again.status, 304, 'If-None-Match matches')
    t.equal(again.body.length, 0)
  })

  t.test('abbreviated form keeps time', async (t) => {
    const res = await proxy.get('/js/shared-pkg', { accept: ABBREVIATED })
    t.equal(res.status, 200)
    t.match(res.headers['content-type'], ABBREVIATED)
    const doc = res.json() as Packument & { modified?: string }
    t.ok(doc.time?.['2.0.0'] !== undefined, 'time is kept for age gates')
    t.notOk('description' in (doc.versions['2.0.0'] ?? {}), 'abbreviated manifests carry install fields only')
    t.equal(doc.versions['2.0.0']?.dist.tarball, `${proxy.url}/js/shared-pkg/-/shared-pkg-2.0.0.tgz`)
  })

  t.test('scoped names, both spellings', async (t) => {
    for (const path of ['/js/@scope%2Fonly-public', '/js/@scope%2fonly-public', '/js/@scope/only-public']) {
      const res = await proxy.get(path)
      t.equal(res.status, 200, path)
      const doc = res.json() as Packument
      t.equal(doc.versions['1.0.0']?.dist.tarball, `${proxy.url}/js/@scope%2fonly-public/-/only-public-1.0.0.tgz`)
    }
  })

  t.test('statuses of SPEC.md 4.2', async (t) => {
    const missing = await proxy.get('/js/no-such-package')
    t.equal(missing.status, 404, 'a forwarded miss')
    t.type((missing.json() as { error: unknown }).error, 'string')
    const denied = await proxy.get('/js/all-denied')
    t.equal(denied.status, 403, 'every version withheld')
    const badName = await proxy.get('/js/..%2Fetc')
    t.equal(badName.status, 404, 'a bad name is a 404 envelope')
  })
})

t.test('502 for another package, 503 for a transient upstream failure', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  upstream.script('/wanted', { kind: 'another-package', document: { name: 'unwanted', versions: {}, 'dist-tags': {} } })
  upstream.script('/flaky', { kind: 'respond', status: 500, body: 'boom' })
  upstream.script('/broken-json', { kind: 'malformed-json' })
  const before = upstream.requests.length
  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        js: {
          upstreams: { public: { url: `${upstream.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
  })
  const wrong = await proxy.get('/js/wanted')
  t.equal(wrong.status, 502)
  const flaky = await proxy.get('/js/flaky')
  t.equal(flaky.status, 503)
  t.ok(flaky.headers['retry-after'] !== undefined, 'Retry-After on a 503')
  const broken = await proxy.get('/js/broken-json')
  t.equal(broken.status, 503, 'a malformed success is transient')
  const bad = await proxy.get('/js/%2e%2e')
  t.equal(bad.status, 404)
  t.equal(upstream.requests.length - before, 3, 'a bad name never reaches the upstream')
})
