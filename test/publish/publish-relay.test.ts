/**
 * The publish relay end to end (SPEC.md 1.4, 2.5, 4.3, 7.1): the real npm
 * CLI publishes through the proxy into a Verdaccio publication target (also
 * the proxy's private upstream), then installs the package back through the
 * proxy from the private leg. Every refusal leaves the target untouched.
 */
import { Readable } from 'node:stream'
import { request } from 'undici'
import t from 'tap'
import { npmInstall, runNpm } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { bytesOf, publishDocument } from './publish-documents.js'

/** The publish relay needs an edge token (it writes with its own target credential). */
const EDGE_TOKEN = 'edge-token-for-publish'

const MAX_BODY = 64 * 1024

/** The target's own document of `name`, read directly: its status and versions. */
async function atTarget(target: VerdaccioPeer, name: string): Promise<{ status: number, versions: Record<string, any> }> {
  const res = await request(`${target.origin}/${name.replace('/', '%2f')}`, { dispatcher: target.dispatcher })
  const text = await res.body.text()
  return { status: res.statusCode, versions: res.statusCode === 200 ? (JSON.parse(text) as { versions: Record<string, any> }).versions : {} }
}

t.test('publish relay through the proxy into Verdaccio', async (t) => {
  const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
  t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
  await publishFixture(pub, { name: 'public-taken', version: '1.0.0' })
  const targetToken = await priv.publisherToken()

  const proxy = await startTestProxy(t, {
    // The relay writes with the target's own token, so it needs an edge token to say who may publish.
    edgeToken: EDGE_TOKEN,
    document: {
      mounts: {
        js: {
          upstreams: {
            private: { url: priv.url },
            public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
          },
          publish: { target: priv.url, token: targetToken, scopes: ['@acme', 'acme-tool', 'public-taken', 'acme-later', 'acme-unread'], maxBodyBytes: MAX_BODY },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
  })
  // npm sends the edge token as its credential for the proxy; the proxy never passes it on (the target gets its own).
  const publisher = { registry: `${proxy.url}/js/`, authToken: EDGE_TOKEN }
  const reader = { registry: `${proxy.url}/js/`, authToken: EDGE_TOKEN }

  const publishWith = async (name: string, version = '1.0.0') => {
    const ws = await createClientWorkspace({})
    t.teardown(() => ws.remove())
    await writeFile(join(ws.dir, 'package.json'), JSON.stringify({ name, version, license: 'MIT' }))
    await writeFile(join(ws.dir, 'index.js'), `module.exports = ${JSON.stringify(`${name}@${version}`)}\n`)
    return runNpm(ws, publisher, ['publish', '--access', 'public'], { allowFailure: true })
  }

  await t.test('npm publish through the proxy, then npm install of it from the private leg', async (t) => {
    const run = await publishWith('@acme/relayed')
    t.equal(run.exitCode, 0, `npm publish succeeded\n${run.stderr}`)
    t.ok((await atTarget(priv, '@acme/relayed')).versions['1.0.0'], 'the target holds the version')
    t.match(proxy.logger.records.find((r) => r.message === 'publish relayed'), { data: { package: '@acme/relayed', status: 201 } })

    const ws = await createClientWorkspace({ '@acme/relayed': '1.0.0' })
    t.teardown(() => ws.remove())
    await npmInstall(ws, reader)
    t.match(await ws.installedManifest('@acme/relayed'), { name: '@acme/relayed', version: '1.0.0' })
  })

  await t.test('a name outside the scopes: 403, the target untouched', async (t) => {
    const run = await publishWith('@other/lib')
    t.not(run.exitCode, 0)
    t.match(run.stderr, /403/)
    t.equal((await atTarget(priv, '@other/lib')).status, 404)
    const raw = await proxy.fetch('PUT', '/js/left-pad', { body: bytesOf(publishDocument({ name: 'left-pad' })), headers: { 'content-type': 'application/json' } })
    t.equal(raw.status, 403)
    t.match(raw.json(), { error: /outside the configured publish scopes/ })
    t.equal((await atTarget(priv, 'left-pad')).status, 404)
  })

  await t.test('a route/document name mismatch: 403, neither name reaches the target', async (t) => {
    const res = await proxy.fetch('PUT', '/js/@acme%2fone', { body: bytesOf(publishDocument({ name: '@acme/two' })), headers: { 'content-type': 'application/json' } })
    t.equal(res.status, 403)
    t.match(res.json(), { error: String })
    t.equal((await atTarget(priv, '@acme/one')).status, 404)
    t.equal((await atTarget(priv, '@acme/two')).status, 404)
  })

  await t.test('a listed unscoped name: refused while the public upstream has it, relayed when it does not', async (t) => {
    const taken = await proxy.fetch('PUT', '/js/public-taken', { body: bytesOf(publishDocument({ name: 'public-taken' })), headers: { 'content-type': 'application/json' } })
    t.equal(taken.status, 403)
    t.match(taken.json(), { error: /public upstream has a package of this name/ })
    t.equal((await atTarget(priv, 'public-taken')).status, 404)
    const free = await proxy.fetch('PUT', '/js/acme-tool', { body: bytesOf(publishDocument({ name: 'acme-tool' })), headers: { 'content-type': 'application/json' } })
    t.equal(free.status, 201)
    t.ok((await atTarget(priv, 'acme-tool')).versions['1.0.0'])
  })

  await t.test('malformed JSON, a digest or length that disagrees: 400, nothing sent', async (t) => {
    const json = await proxy.fetch('PUT', '/js/@acme%2fbroken', { body: '{"name": "@acme/broken", ', headers: { 'content-type': 'application/json' } })
    t.equal(json.status, 400)
    t.match(json.json(), { error: /malformed/ })
    const digest = publishDocument({ name: '@acme/broken' })
    digest['versions']['1.0.0'].dist.shasum = 'f'.repeat(40)
    const wrong = await proxy.fetch('PUT', '/js/@acme%2fbroken', { body: bytesOf(digest), headers: { 'content-type': 'application/json' } })
    t.equal(wrong.status, 400)
    const length = publishDocument({ name: '@acme/broken' })
    length['_attachments']['@acme/broken-1.0.0.tgz'].length = 1
    t.equal((await proxy.fetch('PUT', '/js/@acme%2fbroken', { body: bytesOf(length), headers: { 'content-type': 'application/json' } })).status, 400)
    t.equal((await atTarget(priv, '@acme/broken')).status, 404)
  })

  await t.test('a body over publish.maxBodyBytes: 413, nothing sent', async (t) => {
    const big = bytesOf(publishDocument({ name: '@acme/big', tarball: Buffer.alloc(MAX_BODY, 7) }))
    const res = await proxy.fetch('PUT', '/js/@acme%2fbig', { body: big, headers: { 'content-type': 'application/json' } })
    t.equal(res.status, 413)
    t.match(res.json(), { error: /exceeds/ })
    // Chunked, so no declared length: counted as it arrives.
    const chunked = await request(`${proxy.url}/js/@acme%2fbig`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${EDGE_TOKEN}` },
      body: Readable.from((function* () { for (let i = 0; i < big.byteLength; i += 16_384) yield Buffer.from(big.subarray(i, i + 16_384)) })()),
    }).then(async (r) => ({ status: r.statusCode, body: await r.body.text() }), (error: Error) => ({ status: 0, body: error.message }))
    t.equal(chunked.status, 413, chunked.body)
    t.equal((await atTarget(priv, '@acme/big')).status, 404)
  })

  await t.test('npm deprecate and npm unpublish get a clear 501, never a half change', async (t) => {
    const ws = await createClientWorkspace({})
    t.teardown(() => ws.remove())
    const deprecate = await runNpm(ws, publisher, ['deprecate', '@acme/relayed@1.0.0', 'use something else'], { allowFailure: true })
    t.not(deprecate.exitCode, 0)
    t.match(deprecate.stderr, /501/)
    t.match(deprecate.stderr, /made at the publication target/)
    const one = await runNpm(ws, publisher, ['unpublish', '@acme/relayed@1.0.0', '--force'], { allowFailure: true })
    t.not(one.exitCode, 0)
    t.match(one.stderr, /501/)
    const all = await runNpm(ws, publisher, ['unpublish', '@acme/relayed', '--force'], { allowFailure: true })
    t.not(all.exitCode, 0)
    t.match(all.stderr, /501/)
    const tag = await runNpm(ws, publisher, ['dist-tag', 'add', '@acme/relayed@1.0.0', 'beta'], { allowFailure: true })
    t.not(tag.exitCode, 0)
    t.match(tag.stderr, /501/)
    const held = await atTarget(priv, '@acme/relayed')
    t.ok(held.versions['1.0.0'], 'the version is still at the target')
    t.equal(held.versions['1.0.0'].deprecated, undefined, 'not deprecated')
  })

  await t.test('an owned name never takes public versions (dependency confusion): not in the packument, not as an artifact', async (t) => {
    // acme-tool 1.0.0 was published through the relay (above); someone publishes a higher acme-tool publicly afterwards.
    await publishFixture(pub, { name: 'acme-tool', version: '9.9.9' })
    const doc = await proxy.get('/js/acme-tool')
    t.equal(doc.status, 200)
    const body = doc.json() as { versions: Record<string, unknown>, 'dist-tags': Record<string, string> }
    t.same(Object.keys(body.versions), ['1.0.0'], 'the public 9.9.9 is not merged in, though the rules would admit it')
    t.equal(body['dist-tags']['latest'], '1.0.0')
    const artifact = await proxy.get('/js/acme-tool/-/acme-tool-9.9.9.tgz')
    t.equal(artifact.status, 404, 'nor served by file name')
    await publishFixture(pub, { name: 'public-only', version: '1.0.0' })
    const unowned = await proxy.get('/js/public-only')
    t.equal(unowned.status, 200, 'a name outside the scopes still reads the public upstream')
    t.same(Object.keys((unowned.json() as { versions: Record<string, unknown> }).versions), ['1.0.0'])
  })

  await t.test('a public outage fails a listed unscoped name closed: 503', async (t) => {
    await pub.stop()
    const res = await proxy.fetch('PUT', '/js/acme-later', { body: bytesOf(publishDocument({ name: 'acme-later' })), headers: { 'content-type': 'application/json' } })
    t.equal(res.status, 503)
    t.ok(res.headers['retry-after'])
    t.equal((await atTarget(priv, 'acme-later')).status, 404)
    const owned = await proxy.fetch('PUT', '/js/@acme%2flater', { body: bytesOf(publishDocument({ name: '@acme/later' })), headers: { 'content-type': 'application/json' } })
    t.equal(owned.status, 201, 'an owned scope is never asked of the public upstream')
  })

  await t.test('an owned name with its private upstream down fails closed (503)', async (t) => {
    await priv.stop()
    // A name no earlier request read (acme-tool's answer is still retained, and a retained answer may serve).
    const res = await proxy.get('/js/acme-unread')
    t.equal(res.status, 503)
    t.ok(res.headers['retry-after'])
  })
})

t.test('no publication target: 405', async (t) => {
  const proxy = await startTestProxy(t)
  const res = await proxy.fetch('PUT', '/js/@acme%2flib', { body: bytesOf(publishDocument({ name: '@acme/lib' })), headers: { 'content-type': 'application/json' } })
  t.equal(res.status, 405)
  t.match(res.json(), { error: /not configured/ })
})
