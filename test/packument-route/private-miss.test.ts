/**
 * The private leg stops paying for known misses (issue 29 item 2,
 * docs/cache.md "The private registry's misses"), through the real proxy
 * role over real peers: a private Verdaccio (also the mirror target) that
 * logs every request it serves, a public Verdaccio over https.
 *
 * - A package the private registry lacks: its second listing (the other
 *   form) asks the private registry nothing, and counts a hit on the full
 *   store.
 * - An artifact of a version that listing took from the public side: the
 *   private leg is not asked.
 * - After the embedded mirror stored the version (its success forgets the
 *   package): the private registry is asked again for the listing, and the
 *   artifact is served by the private leg.
 */
import t, { type Test } from 'tap'
import { request } from 'undici'
import type { MetadataCacheSnapshot } from '../../engine/cache/metadata-cache.js'
import { startTestProxy } from '../helpers/proxy.js'
import { waitFor } from '../mirror/wait-for.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'

const ABBREVIATED = 'application/vnd.npm.install-v1+json'
const NAME = 'only-public'
const FILE = `${NAME}-1.0.0.tgz`

/** The request lines (`GET /path`) the peer logged, in order. */
function requested(peer: VerdaccioPeer): string[] {
  const lines: string[] = []
  for (const line of peer.process.output.split('\n')) {
    let entry: { msg?: string }
    try { entry = JSON.parse(line) as typeof entry } catch { continue }
    const match = /requested '(\w+ \S+)'/.exec(entry.msg ?? '')
    if (match?.[1] !== undefined) lines.push(match[1])
  }
  return lines
}

let windows = 0
/** Sends a request of its own to the peer and waits until its log shows it. */
async function sentinel(peer: VerdaccioPeer, path: string): Promise<void> {
  await (await request(`${peer.origin}${path}`)).body.dump()
  await waitFor(() => requested(peer).includes(`GET ${path}`), `the private registry logged ${path}`)
}

/**
 * The private registry's requests (`GET /…` lines) that include `name`,
 * made during `step`, between two requests of the test's own: the closing
 * one, waited for in the log, proves every earlier line is there (a count
 * of 0 is then no race with a late log line). The peer keeps only the tail
 * of its output: the window is found by its sentinels, not by counting.
 */
async function privateRequestsDuring(t: Test, peer: VerdaccioPeer, name: string, step: () => Promise<void>): Promise<string[]> {
  const window = ++windows
  await sentinel(peer, `/open-${window}`)
  await step()
  await sentinel(peer, `/close-${window}`)
  const lines = requested(peer)
  const start = lines.lastIndexOf(`GET /open-${window}`)
  t.ok(start >= 0, 'the window\'s opening request is still in the peer\'s output')
  return lines.slice(start + 1, lines.indexOf(`GET /close-${window}`)).filter((line) => line.startsWith('GET ') && line.includes(name))
}

const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private', logLevel: 'http' }), startVerdaccio({ role: 'public' })])
t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
await publishFixture(pub, { name: NAME, version: '1.0.0', files: { 'index.js': 'module.exports = 1\n' } })
const token = await priv.publisherToken()

const proxy = await startTestProxy(t, {
  document: {
    cache: { privateMissSeconds: 300 },
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
const cache = (): MetadataCacheSnapshot => proxy.role.metrics()['service.metadata_cache'] as MetadataCacheSnapshot
const relays = (): { private: Record<string, number>, public: Record<string, number> } =>
  (proxy.role.metrics()['service.artifact'] as { relays: { private: Record<string, number>, public: Record<string, number> } }).relays
const mirrored = (): number => (proxy.role.metrics()['service.mirror.jobs.processed'] as Record<string, number>)['mirrored'] ?? 0

t.test('a remembered private miss, a public-sourced artifact, then the mirror makes both ask again', async (t) => {
  const first = await privateRequestsDuring(t, priv, NAME, async () => {
    t.equal((await proxy.get(`/js/${NAME}`)).status, 200)
  })
  t.same(first, [`GET /${NAME}`], 'the first listing asked the private registry once')

  const fullBefore = cache().full
  const second = await privateRequestsDuring(t, priv, NAME, async () => {
    t.equal((await proxy.get(`/js/${NAME}`, { accept: ABBREVIATED })).status, 200)
  })
  t.same(second, [], 'the second listing (the other form) asked the private registry nothing')
  t.equal(cache().full.hit, fullBefore.hit + 1, 'the remembered miss counts a hit on the full store')
  t.equal(cache().full.miss, fullBefore.miss + 1, 'only the public document was read')

  const artifact = await privateRequestsDuring(t, priv, NAME, async () => {
    const got = await proxy.get(`/js/${NAME}/-/${FILE}`)
    t.equal(got.status, 200)
  })
  // The embedded mirror may read the target's packument meanwhile (the same registry): only artifact requests count here.
  t.same(artifact.filter((line) => line.includes('/-/')), [], 'the artifact of a public-sourced version skipped the private leg')
  t.same({ miss: relays().private['miss'] ?? 0, delivered: relays().public['delivered'] }, { miss: 0, delivered: 1 })

  await waitFor(() => mirrored() === 1, 'the embedded mirror stored the version')

  const relisted = await privateRequestsDuring(t, priv, NAME, async () => {
    t.equal((await proxy.get(`/js/${NAME}`, { accept: ABBREVIATED })).status, 200)
  })
  t.same(relisted, [`GET /${NAME}`], 'after the mirror stored a version, the listing asks the private registry again')

  const fromPrivate = await privateRequestsDuring(t, priv, NAME, async () => {
    t.equal((await proxy.get(`/js/${NAME}/-/${FILE}`)).status, 200)
  })
  t.same(fromPrivate, [`GET /${NAME}/-/${FILE}`], 'and the artifact is asked of the private leg')
  t.equal(relays().private['delivered'], 1, 'which serves it')
  t.equal(relays().public['delivered'], 1, 'the public leg was not asked again')
})

t.test('privateMissSeconds 0: every listing asks the private registry', async (t) => {
  const plain = await startTestProxy(t, {
    document: {
      cache: { privateMissSeconds: 0 },
      mounts: { js: { upstreams: { private: { url: priv.url }, public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } },
    },
  })
  await publishFixture(pub, { name: 'also-public', version: '1.0.0' })
  const lines = await privateRequestsDuring(t, priv, 'also-public', async () => {
    t.equal((await plain.get('/js/also-public')).status, 200)
    t.equal((await plain.get('/js/also-public', { accept: ABBREVIATED })).status, 200)
  })
  t.same(lines, ['GET /also-public', 'GET /also-public'])
})

t.test('a request forwarding its own credential to the private registry always asks it', async (t) => {
  const plain = await startTestProxy(t, {
    document: {
      cache: { privateMissSeconds: 300 },
      mounts: { js: { upstreams: { private: { url: priv.url }, public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } },
    },
  })
  await publishFixture(pub, { name: 'own-credential', version: '1.0.0' })
  t.equal((await plain.get('/js/own-credential')).status, 200)
  const path = '/js/own-credential/-/own-credential-1.0.0.tgz'
  const withCredential = await privateRequestsDuring(t, priv, 'own-credential', async () => {
    t.equal((await plain.get(path, { authorization: 'Bearer a-client-credential' })).status, 200)
  })
  t.same(withCredential, [`GET /own-credential/-/own-credential-1.0.0.tgz`], 'the client\'s credential may see more than the listing did: asked')
  const without = await privateRequestsDuring(t, priv, 'own-credential', async () => {
    t.equal((await plain.get(path)).status, 200)
  })
  t.same(without, [], 'without one: skipped')
})
