import t from 'tap'

import {
  assembledKey, MetadataCache, selectedVersionKey, type AssembledResponse,
} from '../../engine/cache/metadata-cache.js'
import { ManualClock } from '../doubles/manual-clock.js'

interface Selected { readonly version: string; readonly tarball: string }

function setup(maxBytes = 10_000, maxEntries = 100) {
  const clock = new ManualClock()
  const cache = new MetadataCache<Selected>({
    maxBytes, maxEntries, clock,
    selectedVersionSize: (v) => v.version.length + v.tarball.length,
    selectedVersionTtlMs: 60_000,
    assembledTtlMs: 30_000,
  })
  return { clock, cache }
}

const response = (n: number): AssembledResponse => ({ body: new Uint8Array(n), etag: '"e"' })

t.test('a miss leads and retains; the next request is a hit', async (t) => {
  const { cache } = setup()
  const key = selectedVersionKey('js', 'left-pad', 'left-pad-1.3.0.tgz')
  let loads = 0
  const load = async () => { loads++; return { version: '1.3.0', tarball: 'https://upstream.test/left-pad-1.3.0.tgz' } }
  t.same(await cache.version.load(key, load), { version: '1.3.0', tarball: 'https://upstream.test/left-pad-1.3.0.tgz' })
  t.same(await cache.version.load(key, load), { version: '1.3.0', tarball: 'https://upstream.test/left-pad-1.3.0.tgz' })
  t.equal(loads, 1)
  t.match(cache.snapshot().version, { hit: 1, miss: 1, collapsed: 0, refused: 0, entries: 1 })
  t.equal(cache.snapshot().version.residentBytes, key.length + '1.3.0'.length + 'https://upstream.test/left-pad-1.3.0.tgz'.length, 'key plus value bytes')
})

t.test('collapsed requests count once and share a failure, which is not retained', async (t) => {
  const { cache } = setup()
  const key = assembledKey('js', 'left-pad', 'full', 3)
  let fail!: (e: Error) => void
  const failing = () => new Promise<AssembledResponse>((_r, rej) => { fail = rej })
  const p = [cache.assembled.load(key, failing), cache.assembled.load(key, failing), cache.assembled.load(key, failing)]
  // A lookup is asynchronous (it may be a round trip to a shared backend): the leader's load starts a tick later.
  await new Promise((r) => setImmediate(r))
  fail(new Error('render failed'))
  const settled = await Promise.allSettled(p)
  t.same(settled.map((s) => s.status), ['rejected', 'rejected', 'rejected'])
  t.match(cache.snapshot().assembled, { hit: 0, miss: 1, collapsed: 2, refused: 0, entries: 0 })
})

t.test('the two stores share one bound; a refusal is counted per fetched value, not per follower', async (t) => {
  const { cache } = setup(1000, 100)
  const big = assembledKey('js', 'big', 'full', 1)
  t.equal(cache.assembled.set(big, response(900)), 'retained')
  const key = selectedVersionKey('js', 'p', 'p-1.0.0.tgz')
  let resolve!: (v: Selected) => void
  const load = () => new Promise<Selected>((r) => { resolve = r })
  const p = [cache.version.load(key, load), cache.version.load(key, load)]
  await new Promise((r) => setImmediate(r))
  resolve({ version: '1.0.0', tarball: 'x'.repeat(200) })
  await Promise.all(p)
  const s = cache.snapshot()
  t.match(s.version, { miss: 1, collapsed: 1, refused: 1, entries: 0, residentBytes: 0 }, 'served without retention')
  t.match(s.assembled, { entries: 1 }, 'the other store kept its entry')
  t.equal(s.residentBytes, s.assembled.residentBytes)
})

t.test('expiry on access after the store time to live', async (t) => {
  const { clock, cache } = setup()
  const key = assembledKey('js', 'left-pad', 'full', 1)
  cache.assembled.set(key, response(10))
  clock.advance(29_999)
  t.ok(await cache.assembled.peek(key))
  clock.advance(1)
  t.equal(await cache.assembled.peek(key), undefined)
  t.match(cache.snapshot(), { residentBytes: 0, entries: 0 })
})

t.test('the full-document store never retains: it counts each read as a miss', async (t) => {
  const { cache } = setup()
  cache.full.read()
  cache.full.read()
  t.same(cache.snapshot().full, { hit: 0, miss: 2, collapsed: 0, refused: 0, residentBytes: 0, entries: 0 })
  t.match(cache.snapshot(), { residentBytes: 0, entries: 0 }, 'nothing joins the shared bounds')
})

t.test('keys keep their parts apart', async (t) => {
  t.not(selectedVersionKey('js', 'a', 'b-c.tgz'), selectedVersionKey('js', 'a-b', 'c.tgz'))
  t.not(assembledKey('js', 'a', 'full', 1), assembledKey('js', 'a', 'full', 2), 'a new generation is a new key')
})
