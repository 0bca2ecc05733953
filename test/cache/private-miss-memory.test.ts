/**
 * The memory of private misses (issue 29 item 2, docs/cache.md "The private
 * registry's misses"): remembered for `cache.privateMissSeconds`, used as a
 * full-store hit, forgotten by an invalidation (a publish relayed here, a
 * mirror success), shared by a tier on the shared backend; and the
 * artifact route's public-sourced check over the packument service.
 */
import t from 'tap'
import { MetadataCache } from '../../engine/cache/metadata-cache.js'
import { MemoryBackend } from '../../engine/cache/memory-backend.js'
import { backendInvalidation, type SharedCacheBackend } from '../../engine/cache/shared-backend.js'
import { SharedTier } from '../../engine/cache/shared-tier.js'
import { ServiceError } from '../../engine/errors.js'
import type { ChargedFetch } from '../../engine/listing/charged-fetch.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { PackumentService, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import type { PackumentOutcome } from '../../engine/packument/pipeline.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { ManualClock } from '../doubles/manual-clock.js'

const MISS_MS = 300_000

function cacheOf(clock: ManualClock, options: { privateMissMs?: number, shared?: SharedTier } = {}): MetadataCache<SelectedArtifact> {
  return new MetadataCache<SelectedArtifact>({ maxBytes: 1_000_000, maxEntries: 100, clock, selectedVersionSize: () => 1, privateMissMs: options.privateMissMs ?? MISS_MS, shared: options.shared })
}

/** A private registry answering `answer`, counting what it was asked. */
function privateRegistry(answer: () => ChargedFetch = () => ({ kind: 'miss' })): { ask: () => Promise<ChargedFetch>, asked: () => number } {
  let asked = 0
  return { ask: async () => { asked++; return answer() }, asked: () => asked }
}

t.test('local: a miss is remembered for privateMissSeconds and counts a hit', async (t) => {
  const clock = new ManualClock()
  const cache = cacheOf(clock)
  const registry = privateRegistry()
  t.same(await cache.full.readPrivate('js', 'left-pad', registry.ask), { kind: 'miss' })
  t.same(await cache.full.readPrivate('js', 'left-pad', registry.ask), { kind: 'miss' })
  t.equal(registry.asked(), 1, 'the second read did not ask')
  t.match(cache.snapshot().full, { hit: 1, miss: 1, refused: 0, residentBytes: 0, entries: 0 })
  await cache.full.readPrivate('js', 'other', registry.ask)
  t.equal(registry.asked(), 2, 'per package')
  clock.advance(MISS_MS)
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 3, 'asked again once the memory ends')
  await cache.full.readPrivate('py', 'left-pad', registry.ask)
  t.equal(registry.asked(), 4, 'per ecosystem')
})

t.test('local: an invalidation (publish relayed, mirror success) forgets it at once', async (t) => {
  const clock = new ManualClock()
  const cache = cacheOf(clock)
  const registry = privateRegistry()
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  await cache.invalidate('js', 'left-pad')
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 2)
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 2, 'the new miss is remembered again')
})

t.test('local: a miss whose read spanned an invalidation is not remembered', async (t) => {
  const clock = new ManualClock()
  const cache = cacheOf(clock)
  let asked = 0
  const racing = async (): Promise<ChargedFetch> => {
    asked++
    // The publish lands while the private registry's 404 is on its way.
    await cache.invalidate('js', 'left-pad')
    return { kind: 'miss' }
  }
  await cache.full.readPrivate('js', 'left-pad', racing)
  await cache.full.readPrivate('js', 'left-pad', async () => { asked++; return { kind: 'miss' } })
  t.equal(asked, 2, 'the second read asked: the first miss may predate the publish')
})

t.test('only a miss is remembered; 0 turns the memory off', async (t) => {
  const clock = new ManualClock()
  for (const answer of [
    (): ChargedFetch => ({ kind: 'document', chunks: [new Uint8Array(2)], etag: undefined, lastModified: undefined, contentType: undefined }),
    (): ChargedFetch => ({ kind: 'failed', error: new ServiceError('UPSTREAM_UNAVAILABLE') }),
  ]) {
    const cache = cacheOf(clock)
    const registry = privateRegistry(answer)
    await cache.full.readPrivate('js', 'left-pad', registry.ask)
    await cache.full.readPrivate('js', 'left-pad', registry.ask)
    t.equal(registry.asked(), 2, `${answer().kind}: asked every time`)
  }
  const off = cacheOf(clock, { privateMissMs: 0 })
  const registry = privateRegistry()
  await off.full.readPrivate('js', 'left-pad', registry.ask)
  await off.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 2, 'privateMissSeconds 0: asked every time')
  t.match(off.snapshot().full, { hit: 0, miss: 2 })
})

t.test('shared: the tier uses one replica\'s miss, and an invalidation on any replica ends it for all', async (t) => {
  const clock = new ManualClock()
  const backend = new MemoryBackend(clock)
  const tier = (): SharedTier => new SharedTier({ backend, ttlMs: 86_400_000, maxValueBytes: 1 << 20, collapseWaitMs: 0 })
  const a = cacheOf(clock, { shared: tier() })
  const b = cacheOf(clock, { shared: tier() })
  const registry = privateRegistry()
  await a.full.readPrivate('js', 'left-pad', registry.ask)
  t.same(await b.full.readPrivate('js', 'left-pad', registry.ask), { kind: 'miss' })
  t.equal(registry.asked(), 1, 'the other replica used the remembered miss')
  t.match(b.snapshot().full, { hit: 1, miss: 0 })
  await a.invalidate('js', 'left-pad')
  await b.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 2, 'the stamp moved: asked again on the other replica')
  clock.advance(MISS_MS)
  await a.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 3, 'the shared memory ends with privateMissSeconds')
})

t.test('shared: a backend that fails asks the private registry and counts refused', async (t) => {
  const clock = new ManualClock()
  const failing = new Proxy(new MemoryBackend(clock), {
    get: (target, key) => (key === 'read' || key === 'write'
      ? async () => { throw new ServiceError('CACHE_BACKEND_FAILED') }
      : Reflect.get(target, key)),
  }) as SharedCacheBackend
  const cache = cacheOf(clock, { shared: new SharedTier({ backend: failing, ttlMs: 86_400_000, maxValueBytes: 1 << 20, collapseWaitMs: 0 }) })
  const registry = privateRegistry()
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  await cache.full.readPrivate('js', 'left-pad', registry.ask)
  t.equal(registry.asked(), 2)
  t.match(cache.snapshot().full, { hit: 0, miss: 2, refused: 2 })
})

/** A packument service over scripted in-process upstreams whose render selects one public version, `only-1.0.0.tgz`. */
function service(clock: ManualClock, privateAnswer: () => 'miss' | 'document' | 'failed', options: { owned?: boolean, shared?: SharedTier } = {}) {
  const cache = cacheOf(clock, options.shared === undefined ? {} : { shared: options.shared })
  let privateReads = 0
  const document = { kind: 'document', chunks: [new TextEncoder().encode('{}')], etag: undefined } as const
  const privateClient = {
    fetchDocument: async () => {
      privateReads++
      const kind = privateAnswer()
      if (kind === 'failed') throw new ServiceError('UPSTREAM_UNAVAILABLE')
      return kind === 'miss' ? { kind: 'miss', status: 404 } : document
    },
  } as unknown as UpstreamClient
  const publicClient = { fetchDocument: async () => document } as unknown as UpstreamClient
  const selected: SelectedArtifact = { version: '1.0.0', filename: 'only-1.0.0.tgz', tarball: 'https://public.invalid/only/-/only-1.0.0.tgz', integrity: undefined, shasum: undefined, publishedAt: undefined }
  const packuments = new PackumentService({
    ecosystem: 'js',
    privateClient,
    publicClient,
    cache,
    clock,
    generation: () => 1,
    observe: () => {},
    ...(options.owned === true ? { ownsName: () => true } : {}),
    render: async () => ({ body: new Uint8Array(3), etag: '"r"', selected: [selected], observations: [], dropped: [], advisoryAnswered: [], withholding: undefined, basisBytes: 0 }) as unknown as PackumentOutcome,
  })
  const gate = new AdmissionGate({ budgetBytes: 64 * 1024 * 1024, maxInFlight: 4, waitingRoom: 4 })
  const list = async (abbreviated: boolean): Promise<void> => {
    const admission = await gate.enter()
    try {
      await packuments.assemble({ packageName: 'only', abbreviated, admission, signal: new AbortController().signal })
    } finally {
      admission.release()
    }
  }
  return { cache, packuments, list, privateReads: () => privateReads }
}

t.test('public-sourced: the last render with a definite private answer selected the file', async (t) => {
  const clock = new ManualClock()
  const s = service(clock, () => 'miss')
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'nothing rendered yet')
  await s.list(false)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), true)
  t.equal(await s.packuments.publicSourced('only', 'only-2.0.0.tgz'), false, 'a file the render did not select')
  await s.list(true)
  t.equal(s.privateReads(), 1, 'the second form used the remembered miss')
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), true, 'still known after a render from the remembered miss')
  await s.cache.invalidate('js', 'only')
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'an invalidation (a mirror success) forgets it')
  await s.list(true)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), true)
  clock.advance(MISS_MS)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'and it ends with privateMissSeconds')
})

t.test('public-sourced: never after a render whose private read failed, nor for an owned name', async (t) => {
  const clock = new ManualClock()
  let answer: 'document' | 'failed' = 'document'
  const s = service(clock, () => answer)
  await s.list(false)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), true, 'a private document without the version is a definite answer')
  // The abbreviated form renders later, while the private registry fails: its records say nothing of the private side.
  answer = 'failed'
  await s.list(true)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'a failed private read says nothing of what it lacks')

  const owned = service(clock, () => 'miss', { owned: true })
  // An owned name's public document is never read: the private miss is the answer (404).
  await t.rejects(owned.list(false), { code: 'UPSTREAM_MISS' })
  await t.rejects(owned.list(true), { code: 'UPSTREAM_MISS' })
  t.equal(owned.privateReads(), 2, 'an owned name\'s miss is never remembered')
  t.equal(await owned.packuments.publicSourced('only', 'only-1.0.0.tgz'), false)
})

t.test('public-sourced, shared: one replica\'s render serves the tier; an invalidation anywhere or a failed private read ends it tier-wide', async (t) => {
  const clock = new ManualClock()
  const backend = new MemoryBackend(clock)
  const tier = (): SharedTier => new SharedTier({ backend, ttlMs: 86_400_000, maxValueBytes: 1 << 20, collapseWaitMs: 0 })
  let answerB: 'document' | 'failed' = 'document'
  // A private document without the version: a definite answer, and no remembered miss (replica b's private reads are its own).
  const a = service(clock, () => 'document', { shared: tier() })
  const b = service(clock, () => answerB, { shared: tier() })
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'nothing rendered yet')
  await a.list(false)
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), true, 'replica a\'s render skips the private leg on replica b')
  t.equal(await b.packuments.publicSourced('only', 'only-2.0.0.tgz'), false, 'a file the render did not select')

  // What `service mirror` and `service dredger` call after a publish or a removal: the package's stamp moves.
  await backendInvalidation(backend).invalidate('js', 'only')
  t.equal(await a.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'an invalidation by another role ends it on replica a')
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'and on replica b')
  await a.list(false)
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), true, 'known again after the next render')

  // Replica b renders the other form while the private registry fails: nothing is known of the private side, on any replica.
  answerB = 'failed'
  await b.list(true)
  t.equal(await a.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'a later render whose private read failed ends it on every replica')

  await b.cache.invalidate('js', 'only')
  await a.list(false)
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), true)
  clock.advance(MISS_MS)
  t.equal(await b.packuments.publicSourced('only', 'only-1.0.0.tgz'), false, 'it ends with privateMissSeconds')
})

t.test('public-sourced, shared: a failing backend says no (the private leg is asked) and counts refused', async (t) => {
  const clock = new ManualClock()
  const backend = new MemoryBackend(clock)
  let failing = false
  const flaky = new Proxy(backend, {
    get: (target, key, receiver) => {
      const value = Reflect.get(target, key, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => (failing && (key === 'read' || key === 'readField') ? Promise.reject(new ServiceError('CACHE_BACKEND_FAILED')) : (value as (...a: unknown[]) => unknown).apply(target, args))
    },
  }) as SharedCacheBackend
  const s = service(clock, () => 'miss', { shared: new SharedTier({ backend: flaky, ttlMs: 86_400_000, maxValueBytes: 1 << 20, collapseWaitMs: 0 }) })
  await s.list(false)
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), true)
  failing = true
  const before = s.cache.snapshot().full.refused
  t.equal(await s.packuments.publicSourced('only', 'only-1.0.0.tgz'), false)
  t.equal(s.cache.snapshot().full.refused, before + 1, 'counted refused')
})
