/**
 * The one test suite every ObjectStore passes (STYLE.md rule 8): the
 * embedded filesystem store (fs-store.test.ts) and S3 (s3-store.test.ts).
 */
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { Test } from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { isPreconditionFailed, type ObjectHead, type ObjectStore } from '../../engine/store/object-store.js'

export interface StoreHarness {
  readonly store: ObjectStore
  /**
   * Lets enough time pass that a new write gets a later publication time:
   * advances a ManualClock for the embedded store; waits out S3's one-second
   * LastModified resolution for S3, whose clock is the server's.
   */
  tick(): Promise<void>
  close(): Promise<void>
}

export type StoreFactory = () => Promise<StoreHarness>

const PRECONDITION = { code: 'STORE_FAILURE', data: { reason: 'precondition-failed' } }

export interface SuiteOptions {
  /**
   * The store refuses a conditional put whose condition does not hold. False
   * for s3rver, which ignores If-Match on PUT (engine/store/object-store.ts):
   * only the writes whose condition holds are checked there.
   */
  readonly enforcesConditions: boolean
}

export function objectStoreSuite(t: Test, makeHarness: StoreFactory, options: SuiteOptions = { enforcesConditions: true }): void {
  const withStore = (name: string, body: (t: Test, h: StoreHarness) => Promise<void>): void => {
    t.test(name, async (t) => {
      const h = await makeHarness()
      t.teardown(() => h.close())
      await body(t, h)
    })
  }

  withStore('put, head, get and delete round trip the bytes and the metadata', async (t, { store }) => {
    const bytes = new TextEncoder().encode('advisory database bytes')
    const put = await store.put('advisories/js.db', bytes, { epss_status: 'available', 'row-count': '42' })
    t.match(put.etag, /\S/)

    const head = await found(t, store.head('advisories/js.db'))
    t.equal(head.etag, put.etag)
    t.equal(head.size, bytes.byteLength)
    t.same(head.metadata, { epss_status: 'available', 'row-count': '42' })
    t.ok(head.publishedAt instanceof Date)
    if (put.publishedAt !== undefined) t.equal(head.publishedAt?.getTime(), put.publishedAt.getTime())

    const got = await store.get('advisories/js.db')
    if (got === undefined) throw new Error('get found nothing')
    t.equal(got.etag, put.etag)
    t.equal(got.size, bytes.byteLength)
    t.same(got.metadata, head.metadata)
    t.equal(got.publishedAt?.getTime(), head.publishedAt?.getTime())
    t.equal(Buffer.concat(await collect(got.stream)).toString(), 'advisory database bytes')

    await store.delete('advisories/js.db')
    t.equal(await store.head('advisories/js.db'), undefined)
    t.equal(await store.get('advisories/js.db'), undefined)
  })

  withStore('a conditional put whose condition holds writes', async (t, { store }) => {
    const first = await store.put('policy/document.json', Buffer.from('{"a":1}'), {}, { ifNoneMatch: '*' })
    const second = await store.put('policy/document.json', Buffer.from('{"a":2}'), {}, { ifMatch: first.etag })
    const head = await found(t, store.head('policy/document.json'))
    t.equal(head.etag, second.etag)
    t.not(second.etag, first.etag)
  })

  if (options.enforcesConditions) {
    withStore('a conditional put whose condition fails writes nothing and says so', async (t, { store }) => {
      await t.rejects(store.put('policy/document.json', Buffer.from('x'), {}, { ifMatch: '"nope"' }), PRECONDITION, 'If-Match on an absent object')
      const first = await store.put('policy/document.json', Buffer.from('{"a":1}'), {})
      await t.rejects(store.put('policy/document.json', Buffer.from('x'), {}, { ifNoneMatch: '*' }), PRECONDITION, 'If-None-Match * on a present object')
      await t.rejects(store.put('policy/document.json', Buffer.from('x'), {}, { ifMatch: '"stale"' }), PRECONDITION, 'a stale If-Match')
      t.equal((await found(t, store.head('policy/document.json'))).etag, first.etag, 'the object is unchanged')
      // Two writers that read the same version: exactly one wins, the other learns it lost.
      const results = await Promise.allSettled([1, 2, 3, 4].map((n) => store.put('policy/document.json', Buffer.from(`{"w":${n}}`), {}, { ifMatch: first.etag })))
      t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one of four concurrent edits wins')
      t.ok(results.every((r) => r.status === 'fulfilled' || isPreconditionFailed(r.reason)), 'the others fail as preconditions')
    })
  }

  withStore('an absent object is undefined and deleting it succeeds', async (t, { store }) => {
    t.equal(await store.head('absent/key'), undefined)
    t.equal(await store.head('absent/key', { ifNoneMatch: '"abc"' }), undefined)
    t.equal(await store.get('absent/key'), undefined)
    await t.resolves(store.delete('absent/key'), 'deleting an absent object succeeds')
  })

  withStore('the ETag follows the content and a conditional head by ETag answers not modified', async (t, { store }) => {
    const first = await store.put('k', Buffer.from('one'), {})
    const second = await store.put('k', Buffer.from('two'), {})
    t.not(second.etag, first.etag, 'different bytes, different ETag')

    t.same(await store.head('k', { ifNoneMatch: second.etag }), { notModified: true, etag: second.etag })
    const changed = await found(t, store.head('k', { ifNoneMatch: first.etag }))
    t.equal(changed.etag, second.etag, 'a stale ETag gets the full head')
  })

  withStore('re-putting identical bytes keeps the ETag and moves the publication time (SPEC.md 2.9)', async (t, h) => {
    const bytes = Buffer.from('same bytes every run')
    const first = await h.store.put('pilot/js', bytes, { run: '1' })
    const before = await found(t, h.store.head('pilot/js'))
    await h.tick()
    const second = await h.store.put('pilot/js', bytes, { run: '2' })
    const after = await found(t, h.store.head('pilot/js'))
    t.equal(second.etag, first.etag)
    t.equal(after.etag, before.etag)
    t.ok(before.publishedAt !== undefined && after.publishedAt !== undefined)
    t.ok(after.publishedAt!.getTime() > before.publishedAt!.getTime(), 'publication time moved forward')
    t.same(after.metadata, { run: '2' }, 'metadata is replaced with the object')
  })

  withStore('list yields the keys under a prefix, in order', async (t, { store }) => {
    for (const key of ['b/1', 'a/2', 'a/1', 'ab', 'c']) await store.put(key, Buffer.from(key), {})
    t.same(await keys(store.list('a/')), ['a/1', 'a/2'])
    t.same(await keys(store.list('a')), ['a/1', 'a/2', 'ab'])
    t.same(await keys(store.list('')), ['a/1', 'a/2', 'ab', 'b/1', 'c'])
    t.same(await keys(store.list('zz')), [])
    await store.delete('a/1')
    t.same(await keys(store.list('a/')), ['a/2'])
  })

  withStore('a multi-megabyte object streams in and out intact', async (t, { store }) => {
    const size = 12 * 1024 * 1024 + 12345
    const source = pseudoRandom(size, 7)
    const putHash = createHash('sha256')
    const put = await store.put('big/object', Readable.from(chunked(source, 256 * 1024, putHash)), { kind: 'big' })

    const head = await found(t, store.head('big/object'))
    t.equal(head.size, size)
    t.equal(head.etag, put.etag)
    t.same(head.metadata, { kind: 'big' })

    const got = await store.get('big/object')
    if (got === undefined) throw new Error('get found nothing')
    const getHash = createHash('sha256')
    let chunks = 0
    let total = 0
    for await (const chunk of got.stream) {
      getHash.update(chunk as Buffer)
      total += (chunk as Buffer).byteLength
      chunks++
    }
    t.equal(total, size)
    t.equal(getHash.digest('hex'), putHash.digest('hex'), 'same bytes back')
    t.ok(chunks > 1, 'the body arrived as a stream of chunks, not one buffer')
  })

  withStore('a body stream that fails leaves the previous object in place', async (t, { store }) => {
    const original = await store.put('stable', Buffer.from('original'), { v: '1' })
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1024, 1))
        this.destroy(new Error('source broke'))
      },
    })
    await rejectsWithStoreFailure(t, store.put('stable', failing, { v: '2' }))
    const head = await found(t, store.head('stable'))
    t.equal(head.etag, original.etag)
    t.same(head.metadata, { v: '1' })
    const got = await store.get('stable')
    t.equal(Buffer.concat(await collect(got!.stream)).toString(), 'original')
  })

  withStore('keys that could escape the store or collide are refused', async (t, { store }) => {
    for (const key of ['', '../escape', 'a/../../b', '/absolute', 'a//b', 'a/', '.hidden', 'a/.hidden', 'back\\slash',
      'nul\0byte', 'percent%2Fslash', 'x'.repeat(101)]) {
      await rejectsWithStoreFailure(t, store.put(key, Buffer.from('x'), {}), `put ${JSON.stringify(key)}`)
      await rejectsWithStoreFailure(t, store.head(key), `head ${JSON.stringify(key)}`)
    }
    t.same(await keys(store.list('')), [], 'nothing was written')
  })

  withStore('metadata outside what S3 can carry is refused', async (t, { store }) => {
    const refused: Array<Record<string, string>> = [{ Upper: 'x' }, { 'sp ace': 'x' }, { ok: 'caf\u00e9' }, { ok: 'line\nbreak' }, { big: 'x'.repeat(3000) }]
    for (const metadata of refused) {
      await rejectsWithStoreFailure(t, store.put('m', Buffer.from('x'), metadata), JSON.stringify(metadata).slice(0, 40))
    }
  })
}

async function found(t: Test, result: Promise<unknown>): Promise<ObjectHead> {
  const value = await result
  if (value === undefined || (value as ObjectHead).notModified !== false) {
    t.fail('expected a full head', { value })
    throw new Error('expected a full head')
  }
  return value as ObjectHead
}

/**
 * tap's t.rejects cannot match a ServiceError: it redefines `name` on the
 * error, which is frozen. Assert on the code instead (STYLE.md rule 4).
 */
async function rejectsWithStoreFailure(t: Test, promise: Promise<unknown>, message = 'rejects with STORE_FAILURE'): Promise<void> {
  try {
    await promise
    t.fail(`${message}: it resolved`)
  } catch (error) {
    t.ok(isServiceError(error, 'STORE_FAILURE'), message, { error })
  }
}

async function collect(stream: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return chunks
}

async function keys(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = []
  for await (const key of iterable) out.push(key)
  return out
}

/** Deterministic incompressible-looking bytes (xorshift32). */
export function pseudoRandom(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size)
  let x = seed >>> 0 || 1
  for (let i = 0; i < size; i++) {
    x ^= x << 13; x >>>= 0
    x ^= x >>> 17
    x ^= x << 5; x >>>= 0
    out[i] = x & 0xff
  }
  return out
}

function * chunked(source: Buffer, size: number, hash: ReturnType<typeof createHash>): Generator<Buffer> {
  for (let offset = 0; offset < source.byteLength; offset += size) {
    const chunk = source.subarray(offset, offset + size)
    hash.update(chunk)
    yield chunk
  }
}
