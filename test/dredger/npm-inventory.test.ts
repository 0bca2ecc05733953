/**
 * NpmInventory against a real Verdaccio: listing a package's versions and
 * every package, removing one version with the npm unpublish exchanges
 * (tarball first, then the document), the last version (the whole package),
 * a version already gone, and the resume of a removal whose tarball delete
 * went through before a crash.
 */
import t from 'tap'
import { request } from 'undici'
import { NpmInventory, tarballFile, withoutVersion } from '../../engine/dredger/npm-inventory.js'
import { BearerToken } from '../../engine/secret.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'

const peer = await startVerdaccio({ role: 'private' })
t.teardown(() => peer.stop())
const token = await peer.publisherToken()
const inventory = new NpmInventory({ name: 'mirror_target', url: peer.url, token: new BearerToken(token), maxDocumentBytes: 1 << 20 })
t.teardown(() => inventory.close())

async function status(target: VerdaccioPeer, path: string): Promise<number> {
  const res = await request(`${target.origin}${path}`)
  await res.body.dump()
  return res.statusCode
}

async function doc(target: VerdaccioPeer, name: string): Promise<{ versions: Record<string, unknown>, 'dist-tags': Record<string, string> } | undefined> {
  const res = await request(`${target.origin}/${name.replace('/', '%2f')}`)
  const text = await res.body.text()
  return res.statusCode === 200 ? JSON.parse(text) as { versions: Record<string, unknown>, 'dist-tags': Record<string, string> } : undefined
}

for (const version of ['1.0.0', '1.0.1', '1.0.2']) await publishFixture(peer, { name: 'three', version })
await publishFixture(peer, { name: '@scope/lone', version: '2.0.0' })
await publishFixture(peer, { name: 'resume-me', version: '1.0.0' })
await publishFixture(peer, { name: 'resume-me', version: '1.0.1' })

t.test('lists a package\'s versions and every package', async (t) => {
  t.same([...await inventory.versions('three')].sort(), ['1.0.0', '1.0.1', '1.0.2'])
  t.same(await inventory.versions('never-published'), [], 'a package it does not hold has no versions')
  const names = await inventory.packages()
  t.ok(names.includes('three') && names.includes('@scope/lone') && names.includes('resume-me'), `listed ${names.join(', ')}`)
})

t.test('removes one version: its tarball and its document entry, the others stay', async (t) => {
  t.equal(await status(peer, '/three/-/three-1.0.1.tgz'), 200)
  t.equal(await inventory.remove('three', '1.0.1'), 'removed')
  const after = await doc(peer, 'three')
  t.same(Object.keys(after?.versions ?? {}).sort(), ['1.0.0', '1.0.2'])
  t.equal(after?.['dist-tags'].latest, '1.0.2')
  t.equal(await status(peer, '/three/-/three-1.0.1.tgz'), 404, 'the tarball is gone')
  t.equal(await status(peer, '/three/-/three-1.0.0.tgz'), 200, 'the others are served')
  t.equal(await status(peer, '/three/-/three-1.0.2.tgz'), 200)
  t.equal(await inventory.remove('three', '1.0.1'), 'absent', 'a second removal finds nothing')
})

t.test('removing the latest version moves latest to the highest left', async (t) => {
  t.equal(await inventory.remove('three', '1.0.2'), 'removed')
  const after = await doc(peer, 'three')
  t.same(Object.keys(after?.versions ?? {}), ['1.0.0'])
  t.equal(after?.['dist-tags'].latest, '1.0.0')
})

t.test('removing the last version removes the package', async (t) => {
  t.equal(await inventory.remove('@scope/lone', '2.0.0'), 'removed')
  t.equal(await doc(peer, '@scope/lone'), undefined)
  t.equal(await status(peer, '/@scope/lone/-/lone-2.0.0.tgz'), 404)
})

t.test('a removal whose tarball delete went through before a crash is finished', async (t) => {
  // The state a kill between the two writes leaves: the tarball deleted, the document still naming the version.
  const write = await request(`${peer.origin}/resume-me?write=true`, { headers: { authorization: `Bearer ${token}` } })
  const rev = (await write.body.json() as { _rev: string })._rev
  const del = await request(`${peer.origin}/resume-me/-/resume-me-1.0.1.tgz/-rev/${rev}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
  await del.body.dump()
  t.equal(del.statusCode, 201)
  t.ok((await doc(peer, 'resume-me'))?.versions['1.0.1'], 'the document still names it')
  t.equal(await inventory.remove('resume-me', '1.0.1'), 'removed')
  t.same(Object.keys((await doc(peer, 'resume-me'))?.versions ?? {}), ['1.0.0'])
})

t.test('without a token the registry refuses the write, and the version stays', async (t) => {
  const anonymous = new NpmInventory({ name: 'private_cache', url: peer.url, maxDocumentBytes: 1 << 20 })
  t.teardown(() => anonymous.close())
  await t.rejects(anonymous.remove('resume-me', '1.0.0'), { code: 'UPSTREAM_REFUSED' })
  t.ok((await doc(peer, 'resume-me'))?.versions['1.0.0'])
  t.equal(await status(peer, '/resume-me/-/resume-me-1.0.0.tgz'), 200, 'its tarball too')
})

t.test('the document npm unpublish PUTs, and the tarball file name', async (t) => {
  const body = JSON.parse(withoutVersion({
    _rev: '3-x', versions: { '1.0.0': {}, '2.0.0': {}, '1.5.0': {} },
    'dist-tags': { latest: '2.0.0', next: '2.0.0', old: '1.0.0' }, _attachments: { a: {} }, _revisions: [],
  }, '2.0.0')) as Record<string, unknown>
  t.same(Object.keys(body['versions'] as object), ['1.0.0', '1.5.0'])
  t.same(body['dist-tags'], { latest: '1.5.0', old: '1.0.0' })
  t.notOk('_attachments' in body)
  t.notOk('_revisions' in body)
  t.equal(tarballFile('http://elsewhere:1/@a/b/-/b-1.0.0.tgz', '@a/b', '1.0.0'), 'b-1.0.0.tgz')
  t.equal(tarballFile(undefined, '@a/b', '1.0.0'), 'b-1.0.0.tgz')
})

t.test('a minted credential is asked for on each request and sent as the bearer; a refusal is transient', async (t) => {
  let mints = 0
  const minted = new NpmInventory({
    name: 'private_cache', url: peer.url, maxDocumentBytes: 1 << 20,
    credential: { token: async () => { mints++; return new BearerToken(token) } },
  })
  t.teardown(() => minted.close())
  await publishFixture(peer, { name: 'minted', version: '1.0.0' })
  await publishFixture(peer, { name: 'minted', version: '1.0.1' })
  t.equal(await minted.remove('minted', '1.0.0'), 'removed', 'Verdaccio took the minted token for the unpublish writes')
  t.same(await minted.versions('minted'), ['1.0.1'])
  t.ok(mints >= 3, 'one token per request (read, tarball delete, document write)')

  const refused = new NpmInventory({
    name: 'private_cache', url: peer.url, maxDocumentBytes: 1 << 20,
    credential: { token: async () => { throw new Error('breaker open') } },
  })
  t.teardown(() => refused.close())
  await t.rejects(refused.versions('minted'), { code: 'UPSTREAM_UNAVAILABLE' })
})
