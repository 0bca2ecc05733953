/**
 * Where the `js` mirror worker takes a job's gated manifest (issue 29 item
 * 3, engine/mirror/version-manifest.ts): from a packument the process holds
 * when it lists the version with the job's digests, else from one public
 * read (the authority). The held side is a test double
 * (test/doubles/held-packuments.ts) and the proxy's own retained answers
 * (`retainedAnswers` over an assembled store); the public side a scripted
 * source counting its reads.
 */
import t from 'tap'
import { assembledKey, type AssembledResponse } from '../../engine/cache/metadata-cache.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import { retainedAnswers } from '../../engine/mirror/retained-packuments.js'
import { ManifestReads, readGatedManifest, type ManifestSource } from '../../engine/mirror/version-manifest.js'
import type { FetchedDocument } from '../../engine/upstream/upstream-client.js'
import { HeldPackuments } from '../doubles/held-packuments.js'

const INTEGRITY = `sha512-${Buffer.alloc(64, 7).toString('base64')}`
const SHASUM = 'ab'.repeat(20)

const job: MirrorJob = {
  url: 'https://127.0.0.1:1/left-pad/-/left-pad-1.0.0.tgz', package: 'left-pad', version: '1.0.0', filename: 'left-pad-1.0.0.tgz', integrity: INTEGRITY, shasum: SHASUM, enqueuedAt: '2026-01-01T00:00:00Z',
}

function packument(dist: { integrity: string, shasum: string }, extra: Record<string, unknown> = {}): { name: string } & Record<string, unknown> {
  return { name: 'left-pad', versions: { '1.0.0': { name: 'left-pad', version: '1.0.0', description: 'pads', dist: { ...dist, tarball: 'http://127.0.0.1:2/js/left-pad/-/left-pad-1.0.0.tgz' }, ...extra } } }
}

/** The public upstream: serves `document`, counting reads and charged chunks. */
function publicSource(document: Record<string, unknown>): ManifestSource & { reads: number } {
  const source = {
    reads: 0,
    fetchDocument: async (): Promise<FetchedDocument> => {
      source.reads++
      const bytes = new TextEncoder().encode(JSON.stringify(document))
      return { kind: 'document', chunks: [bytes], bytes: bytes.byteLength }
    },
  }
  return source
}

t.test('a held packument listing the version with the job\'s digests: the manifest, no public read, counted by its source', async (t) => {
  const held = new HeldPackuments('shared')
  held.hold(packument({ integrity: INTEGRITY, shasum: SHASUM }, { license: 'MIT' }))
  const source = publicSource(packument({ integrity: INTEGRITY, shasum: SHASUM }))
  const reads = new ManifestReads()
  let charged = 0
  const found = await readGatedManifest({ source, retained: held, reads }, job, undefined, (chunk) => { charged += chunk.byteLength; return undefined })
  t.match(found, { kind: 'manifest', manifest: { name: 'left-pad', version: '1.0.0', license: 'MIT', dist: { integrity: INTEGRITY, shasum: SHASUM } } })
  t.equal(source.reads, 0, 'the public packument was not read again')
  t.ok(charged > 0, 'the held bytes scanned were charged like a read')
  t.same(reads.snapshot(), { retained: 0, shared: 1, public: 0 })
})

t.test('anything else held falls back to the public read: not held, the version missing, other digests, a failing backend', async (t) => {
  const cases: Array<[string, (held: HeldPackuments) => void]> = [
    ['not held', () => {}],
    ['the version missing', (held) => held.hold({ name: 'left-pad', versions: {} })],
    ['other digests (an older answer)', (held) => held.hold(packument({ integrity: `sha512-${Buffer.alloc(64, 9).toString('base64')}`, shasum: SHASUM }))],
    ['a failing backend', (held) => { held.hold(packument({ integrity: INTEGRITY, shasum: SHASUM })); held.failing = true }],
  ]
  for (const [name, arrange] of cases) {
    const held = new HeldPackuments('shared')
    arrange(held)
    const source = publicSource(packument({ integrity: INTEGRITY, shasum: SHASUM }))
    const reads = new ManifestReads()
    const found = await readGatedManifest({ source, retained: held, reads }, job)
    t.match(found, { kind: 'manifest', manifest: { version: '1.0.0' } }, name)
    t.equal(held.reads, 1, `${name}: the held side asked once`)
    t.equal(source.reads, 1, `${name}: one public read`)
    t.same(reads.snapshot(), { retained: 0, shared: 0, public: 1 }, name)
  }
})

t.test('the public read stays the authority: its mismatch is reported as before', async (t) => {
  const held = new HeldPackuments()
  const source = publicSource(packument({ integrity: `sha512-${Buffer.alloc(64, 9).toString('base64')}`, shasum: SHASUM }))
  const found = await readGatedManifest({ source, retained: held }, job)
  t.match(found, { kind: 'mismatch', detail: 'the manifest digests differ from the admitted ones' })
})

t.test('the proxy\'s retained answers: the identity full form under the current generation only', async (t) => {
  const store = new Map<string, AssembledResponse>()
  let generation = 4
  const retained = retainedAnswers({ retained: async (key) => store.get(key) }, 'js', () => generation)
  const body = new TextEncoder().encode(JSON.stringify(packument({ integrity: INTEGRITY, shasum: SHASUM })))
  store.set(assembledKey('js', 'left-pad', 'abbreviated', 4), { body, etag: '"a"' })
  t.equal(await retained.read('left-pad'), undefined, 'the abbreviated form is never used')
  store.set(assembledKey('js', 'left-pad', 'full', 4), { body, etag: '"f"', coding: 'gzip' })
  t.equal(await retained.read('left-pad'), undefined, 'nor a coded body')
  store.set(assembledKey('js', 'left-pad', 'full', 4), { body, etag: '"f"' })
  const held = await retained.read('left-pad')
  t.equal(held?.source, 'retained')
  const source = publicSource({})
  const reads = new ManifestReads()
  t.match(await readGatedManifest({ source, retained, reads }, job), { kind: 'manifest' })
  t.same(reads.snapshot(), { retained: 1, shared: 0, public: 0 })
  generation = 5
  t.equal(await retained.read('left-pad'), undefined, 'a new generation (database or rules) never serves the old answer')
})
