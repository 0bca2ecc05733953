/**
 * The mirror worker embedded in the proxy (`queue.kind: embedded` and a
 * mirror target), end to end with real peers only: Verdaccio as private
 * upstream and mirror target, a second Verdaccio as the public registry over
 * https, and the real npm CLI.
 *
 * - `npm install` of a public package through the proxy; the worker mirrors
 *   it; the next `npm install` with a fresh cache is served from the private
 *   leg (the public upstream sees no artifact request) and npm verifies the
 *   integrity, which is the public one byte for byte.
 * - A public artifact whose bytes do not match its `dist.integrity`: the
 *   client gets the bytes the upstream sent, the worker refuses to mirror
 *   it, and the target never holds it.
 */
import { createHash } from 'node:crypto'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { MIRROR_INTEGRITY_MISMATCH, MIRROR_JOB_MIRRORED } from '../../engine/mirror/mirror-worker.js'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { waitFor } from './wait-for.js'

interface Packument { versions?: Record<string, { dist?: { integrity?: string, shasum?: string, tarball?: string } }> }

async function packument(peer: VerdaccioPeer, name: string): Promise<{ status: number, doc: Packument }> {
  const res = await request(`${peer.origin}/${name.replace('/', '%2f')}`, { dispatcher: peer.dispatcher })
  const text = await res.body.text()
  return { status: res.statusCode, doc: res.statusCode === 200 ? JSON.parse(text) as Packument : {} }
}

/**
 * Artifact requests the public registry logged since `since` (its own
 * request log, level `http`). The peer keeps only the tail of its output, so
 * lines are picked by their timestamp, not counted from the start.
 */
function artifactRequestsSince(peer: VerdaccioPeer, file: string, since: number): number {
  let count = 0
  for (const line of peer.process.output.split('\n')) {
    let entry: { time?: number, msg?: string }
    try { entry = JSON.parse(line) as typeof entry } catch { continue }
    if ((entry.time ?? 0) >= since && entry.msg?.includes(`requested 'GET `) === true && entry.msg.includes(`/-/${file}`)) count++
  }
  return count
}

const [priv, pub] = await Promise.all([
  startVerdaccio({ role: 'private' }),
  // `http` level: Verdaccio logs each request it serves, so the test can see which artifacts it was asked for.
  startVerdaccio({ role: 'public', logLevel: 'http' }),
])
t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
await publishFixture(pub, { name: 'mirror-me', version: '1.0.0', files: { 'index.js': 'module.exports = "mirror-me"\n', 'data.bin': Buffer.alloc(200_000, 7) } })
await publishFixture(pub, { name: 'tampered', version: '1.0.0' })
const token = await priv.publisherToken()

const proxy = await startTestProxy(t, {
  document: {
    mounts: {
      js: {
        upstreams: {
          private: { url: priv.url },
          public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
        },
        mirror: { target: priv.url, token },
        rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
      },
    },
  },
})
const target = { registry: `${proxy.url}/js/` }
const processed = (): Record<string, number> => proxy.role.metrics()['service.mirror.jobs.processed'] as Record<string, number>
const relays = (): { private: Record<string, number>, public: Record<string, number> } =>
  (proxy.role.metrics()['service.artifact'] as { relays: { private: Record<string, number>, public: Record<string, number> } }).relays

t.test('installed through the proxy, mirrored, then served from the private leg with the same integrity', async (t) => {
  const publicIntegrity = (await packument(pub, 'mirror-me')).doc.versions?.['1.0.0']?.dist?.integrity
  t.match(publicIntegrity, /^sha512-/)
  t.equal((await packument(priv, 'mirror-me')).status, 404, 'the target does not hold it before')

  const beforeFirst = Date.now()
  const first = await createClientWorkspace({ 'mirror-me': '1.0.0' })
  t.teardown(() => first.remove())
  await npmInstall(first, target)
  t.match(await first.installedManifest('mirror-me'), { version: '1.0.0' })
  t.equal(relays().public['delivered'], 1, 'the first install came from the public leg')
  t.ok(artifactRequestsSince(pub, 'mirror-me-1.0.0.tgz', beforeFirst) >= 1, 'the public registry logged that artifact request')

  await waitFor(() => processed()['mirrored'] === 1, 'the worker mirrored the version')
  t.equal(proxy.logger.find(MIRROR_JOB_MIRRORED).length, 1)
  const mirrored = (await packument(priv, 'mirror-me')).doc.versions?.['1.0.0']?.dist
  t.equal(mirrored?.integrity, publicIntegrity, 'the target holds the version with the public integrity')
  t.equal(mirrored?.shasum, (await packument(pub, 'mirror-me')).doc.versions?.['1.0.0']?.dist?.shasum, 'and the public shasum')
  const heldBytes = await request(`${priv.origin}/mirror-me/-/mirror-me-1.0.0.tgz`)
  const held = Buffer.from(await heldBytes.body.arrayBuffer())
  const publicBytes = Buffer.from(await (await request(`${pub.origin}/mirror-me/-/mirror-me-1.0.0.tgz`, { dispatcher: pub.dispatcher })).body.arrayBuffer())
  t.ok(held.equals(publicBytes), 'the target holds the public bytes exactly')
  t.equal(`sha512-${createHash('sha512').update(held).digest('base64')}`, publicIntegrity)

  const beforeSecond = Date.now()
  const second = await createClientWorkspace({ 'mirror-me': '1.0.0' })
  t.teardown(() => second.remove())
  // A fresh workspace has a fresh npm cache: every byte is fetched again, and npm checks it against dist.integrity.
  await npmInstall(second, target)
  t.match(await second.installedManifest('mirror-me'), { version: '1.0.0' })
  t.equal(relays().private['delivered'], 1, 'the second install was served by the private leg')
  t.equal(relays().public['delivered'], 1, 'and not by the public one')
  t.equal(artifactRequestsSince(pub, 'mirror-me-1.0.0.tgz', beforeSecond), 0, 'the public upstream saw no artifact request')
  const served = await proxy.get('/js/mirror-me')
  const seen = (served.json() as Packument).versions?.['1.0.0']?.dist?.integrity
  t.equal(seen, publicIntegrity, 'the proxy shows the same integrity after mirroring')
})

t.test('a public artifact that does not match its integrity is relayed but never mirrored', async (t) => {
  // Replace the stored tarball behind Verdaccio's back: the packument keeps the original digests.
  const file = join(pub.storageDir, 'tampered', 'tampered-1.0.0.tgz')
  const forged = Buffer.from('these are not the bytes the integrity names')
  await writeFile(file, forged)
  const res = await proxy.get('/js/tampered/-/tampered-1.0.0.tgz')
  t.equal(res.status, 200)
  t.ok(res.body.equals(forged), 'the client gets the bytes the upstream sent (the client verifies)')

  await waitFor(() => (processed()['integrity_mismatch'] ?? 0) >= 1, 'the worker refused the job')
  const [line] = proxy.logger.find(MIRROR_INTEGRITY_MISMATCH)
  t.match(line, { level: 'error', data: { package: 'tampered', version: '1.0.0' } })
  t.equal((await packument(priv, 'tampered')).status, 404, 'the target never got the version')
  const stored = await readdir(priv.storageDir)
  t.notOk(stored.includes('tampered'), 'nor any file for it')
})
