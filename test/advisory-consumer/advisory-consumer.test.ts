import { Readable } from 'node:stream'
import t, { type Test } from 'tap'
import {
  ADVISORY_NO_PUBLICATION_TIME, ADVISORY_REJECTED, ADVISORY_SWAPPED, AdvisoryConsumer, type AdvisoryConsumerOptions,
} from '../../engine/advisory/consumer/advisory-consumer.js'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { PUSH_AGE_HALF_MAXIMUM } from '../../engine/advisory/consumer/push-age.js'
import { SYNC_FETCH_FAILED, SYNC_FETCH_RECOVERED, SYNC_FETCH_STILL_FAILING } from '../../engine/advisory/consumer/sync-fetch-failures.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { ServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { ObjectStore } from '../../engine/store/object-store.js'
import { MOUNT_STATE, Readiness } from '../../server/health/readiness.js'
import { artifact, tempStore } from './artifacts.js'

const KEY = advisoryObjectKey('js')
const MINUTE = 60_000
const DAY = 86_400_000
const MAX_AGE = 3 * 86_400

interface Rig {
  clock: ManualClock
  logger: RecordingLogger
  store: ObjectStore
  root: string
  slot: AdvisorySlot
  readiness: Readiness
  consumer: AdvisoryConsumer
}

async function rig(t: Test, options: Partial<AdvisoryConsumerOptions> & { wrap?: (s: ObjectStore) => ObjectStore } = {}): Promise<Rig> {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const { store: fsStore, root } = await tempStore(t, clock)
  const store = options.wrap === undefined ? fsStore : options.wrap(fsStore)
  const slot = new AdvisorySlot()
  const readiness = new Readiness()
  readiness.addMount('js', true)
  readiness.markStarted()
  const consumer = new AdvisoryConsumer({
    ecosystem: 'js', store, key: KEY, slot, requireEpss: false, maxAgeSeconds: MAX_AGE, clock, logger,
    onAccepted: () => readiness.markAdvisoryReady('js'),
    ...options,
  })
  t.teardown(() => consumer.stop())
  return { clock, logger, store, root, slot, readiness, consumer }
}

t.test('first sync: awaiting until an artifact is accepted, then ready; the swap line names the dates', async (t) => {
  const r = await rig(t)
  t.equal(await r.consumer.poll(), 'absent', 'nothing published yet')
  t.equal(r.slot.serving, undefined)
  t.equal(r.readiness.stateOf('js'), MOUNT_STATE.awaiting)
  t.same(r.logger.find(SYNC_FETCH_FAILED), [], 'an absent object is not a failed poll')

  const put = await r.store.put(KEY, artifact({ epssStatus: 'unavailable' }), {})
  r.clock.advance(MINUTE)
  t.equal(await r.consumer.poll(), 'swapped')
  t.equal(r.readiness.stateOf('js'), MOUNT_STATE.ready, 'a non-EPSS mount accepts epss_status=unavailable')
  t.equal(r.slot.generation, 1)
  t.equal(r.slot.serving?.etag, put.etag)
  t.equal(r.slot.database()?.publishedAt?.getTime(), put.publishedAt?.getTime(), 'the database carries the store publication time')
  t.equal(r.slot.serving?.publishedAt?.getTime(), put.publishedAt?.getTime())
  t.ok(r.slot.serving?.shared instanceof SharedArrayBuffer)
  t.same(r.slot.database()?.affecting('lodash', '4.17.20').map((m) => m.id).sort(), ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm'])

  const [swap, ...more] = r.logger.find(ADVISORY_SWAPPED)
  t.same(more, [], 'one line per swap')
  t.equal(swap?.level, 'info')
  t.match(swap?.data, {
    ecosystem: 'js', publishedAt: put.publishedAt?.toISOString(), osvSource: '127.0.0.1:9',
    newestAdvisoryAt: /^2025-/, epssScoreDate: '<unrecorded>', epssStatus: 'unavailable',
  })
  t.equal(await r.consumer.poll(), 'unchanged')
  t.equal(r.slot.generation, 1, 'an unchanged object is not swapped again')
  t.equal(r.logger.find(ADVISORY_SWAPPED).length, 1)
})

t.test('an EPSS-dependent mount rejects epss_status=unavailable and stays awaiting', async (t) => {
  const r = await rig(t, { requireEpss: true })
  const bad = await r.store.put(KEY, artifact({ epssStatus: 'unavailable' }), {})
  t.equal(await r.consumer.poll(), 'rejected')
  t.equal(r.slot.serving, undefined, 'the slot stays empty')
  t.equal(r.readiness.stateOf('js'), MOUNT_STATE.awaiting)
  const rejected = r.logger.find(ADVISORY_REJECTED)
  t.equal(rejected.length, 1)
  t.equal(rejected[0]?.level, 'error')
  t.match(rejected[0]?.data, { ecosystem: 'js', etag: bad.etag, reason: /epss_status is unavailable/ })

  r.clock.advance(MINUTE)
  t.equal(await r.consumer.poll(), 'rejected-again', 'the same rejected object is not downloaded again')
  t.equal(r.logger.find(ADVISORY_REJECTED).length, 1, 'nor logged again')

  await r.store.put(KEY, artifact({ epssStatus: 'available' }), {})
  t.equal(await r.consumer.poll(), 'swapped')
  t.equal(r.readiness.stateOf('js'), MOUNT_STATE.ready)
  t.equal(r.slot.database()?.metadata.epssStatus, 'available')
  t.match(r.logger.find(ADVISORY_SWAPPED)[0]?.data, { epssScoreDate: '2025-12-31T00:00:00.000Z' })
})

t.test('a rejected replacement keeps the accepted generation and cannot refresh its age', async (t) => {
  const r = await rig(t, { requireEpss: true })
  const good = artifact({ epssStatus: 'available' })
  const accepted = await r.store.put(KEY, good, {})
  t.equal(await r.consumer.poll(), 'swapped')
  const pushedAt = r.slot.serving?.publishedAt?.getTime()

  for (const [what, bytes] of [
    ['epss unavailable', artifact({ epssStatus: 'unavailable', compiledAt: new Date('2026-02-01T00:00:00Z') })],
    ['another ecosystem', artifact({ ecosystem: 'py' })],
    ['corrupt bytes', Buffer.from(good).fill(7, 200, 260)],
    ['not an artifact', Buffer.from('hello')],
  ] as const) {
    r.clock.advance(DAY / 4)
    const put = await r.store.put(KEY, bytes, {})
    t.equal(await r.consumer.poll(), 'rejected', what)
    t.equal(r.slot.serving?.etag, accepted.etag, `${what}: the accepted generation serves on`)
    t.equal(r.slot.serving?.publishedAt?.getTime(), pushedAt, `${what}: its age is not refreshed`)
    t.equal(r.slot.generation, 1)
    t.equal(r.readiness.stateOf('js'), MOUNT_STATE.ready, 'readiness never flaps back')
    // Pilot re-pushes the same rejected bytes: a later publication time, same ETag.
    r.clock.advance(MINUTE)
    const again = await r.store.put(KEY, bytes, {})
    t.equal(again.etag, put.etag)
    t.ok((again.publishedAt?.getTime() ?? 0) > (put.publishedAt?.getTime() ?? 0))
    t.equal(await r.consumer.poll(), 'rejected-again', `${what}: repeated HEADs of the rejected ETag`)
    t.equal(r.slot.serving?.publishedAt?.getTime(), pushedAt, `${what}: still not refreshed`)
  }
  t.equal(r.logger.find(ADVISORY_REJECTED).length, 4)
  t.match(r.logger.find(ADVISORY_REJECTED)[1]?.data, { reason: /ecosystem py, not js/, kept: accepted.etag })

  // The accepted bytes pushed again: same ETag, new publication time; the age is refreshed without a download.
  r.clock.advance(MINUTE)
  const repush = await r.store.put(KEY, good, {})
  t.equal(repush.etag, accepted.etag)
  const shared = r.slot.serving?.shared
  t.equal(await r.consumer.poll(), 'refreshed')
  t.equal(r.slot.serving?.publishedAt?.getTime(), repush.publishedAt?.getTime())
  t.equal(r.slot.database()?.publishedAt?.getTime(), repush.publishedAt?.getTime())
  t.equal(r.slot.serving?.shared, shared, 'the shared copy is kept')
  t.equal(r.slot.generation, 2, 'a new generation, so caches keyed by it see the new age')
})

t.test('a restart starts with an empty slot until its first poll, even with the artifact on disk', async (t) => {
  const r = await rig(t)
  await r.store.put(KEY, artifact(), {})
  t.equal(await r.consumer.poll(), 'swapped')
  await r.consumer.stop()

  const { FilesystemObjectStore } = await import('../../engine/store/filesystem-object-store.js')
  const store = await FilesystemObjectStore.open({ root: r.root, clock: r.clock })
  const slot = new AdvisorySlot()
  const readiness = new Readiness()
  readiness.addMount('js', true)
  const logger = new RecordingLogger()
  const consumer = new AdvisoryConsumer({
    ecosystem: 'js', store, key: KEY, slot, requireEpss: false, maxAgeSeconds: MAX_AGE, clock: r.clock, logger,
    onAccepted: () => readiness.markAdvisoryReady('js'),
  })
  t.teardown(() => consumer.stop())
  t.equal(slot.serving, undefined, 'empty before the first poll')
  t.equal(readiness.stateOf('js'), MOUNT_STATE.awaiting)
  t.equal(await consumer.poll(), 'swapped')
  t.equal(readiness.stateOf('js'), MOUNT_STATE.ready)
})

/** A store that fails on demand: `down` throws from head, `cut` serves a body that stops short. */
function flaky(inner: ObjectStore, state: { down: boolean; cut: boolean }): ObjectStore {
  return {
    put: (k, b, m) => inner.put(k, b, m),
    list: (p) => inner.list(p),
    delete: (k) => inner.delete(k),
    head: async (k, o) => {
      if (state.down) throw new ServiceError('STORE_FAILURE', { message: 'the store is down', cause: new Error('connect ECONNREFUSED 127.0.0.1:1') })
      return inner.head(k, o)
    },
    get: async (k) => {
      const body = await inner.get(k)
      if (body === undefined || !state.cut) return body
      body.stream.destroy()
      return { ...body, stream: Readable.from([Buffer.alloc(10)]) }
    },
  }
}

t.test('poll failures: the first logs, repeats are paced at 15 minutes, the first success recovers', async (t) => {
  const state = { down: true, cut: false }
  const r = await rig(t, { wrap: (s) => flaky(s, state) })
  t.equal(await r.consumer.poll(), 'failed')
  const failed = r.logger.find(SYNC_FETCH_FAILED)
  t.equal(failed.length, 1)
  t.equal(failed[0]?.level, 'error')
  t.match(failed[0]?.data, { ecosystem: 'js', key: KEY, code: 'STORE_FAILURE', cause: /ECONNREFUSED/ })

  for (let i = 0; i < 14; i++) {
    r.clock.advance(MINUTE)
    t.equal(await r.consumer.poll(), 'failed')
  }
  t.same(r.logger.find(SYNC_FETCH_STILL_FAILING), [], 'nothing more within 15 minutes')
  r.clock.advance(MINUTE)
  await r.consumer.poll()
  t.equal(r.logger.find(SYNC_FETCH_STILL_FAILING).length, 1, 'at 15 minutes')
  t.equal(r.logger.find(SYNC_FETCH_STILL_FAILING)[0]?.level, 'error')
  r.clock.advance(14 * MINUTE)
  await r.consumer.poll()
  t.equal(r.logger.find(SYNC_FETCH_STILL_FAILING).length, 1)
  r.clock.advance(MINUTE)
  await r.consumer.poll()
  t.equal(r.logger.find(SYNC_FETCH_STILL_FAILING).length, 2, 'and again 15 minutes later')
  t.equal(r.logger.find(SYNC_FETCH_FAILED).length, 1)

  // A body cut short is a failed fetch, not a rejected artifact: the next poll downloads it again.
  state.down = false
  state.cut = true
  await r.store.put(KEY, artifact(), {})
  t.equal(await r.consumer.poll(), 'failed')
  t.same(r.logger.find(ADVISORY_REJECTED), [])
  t.same(r.logger.find(SYNC_FETCH_RECOVERED), [])

  state.cut = false
  t.equal(await r.consumer.poll(), 'swapped')
  const recovered = r.logger.find(SYNC_FETCH_RECOVERED)
  t.equal(recovered.length, 1)
  t.equal(recovered[0]?.level, 'info')
  t.equal(await r.consumer.poll(), 'unchanged')
  t.equal(r.logger.find(SYNC_FETCH_RECOVERED).length, 1, 'once')

  state.down = true
  await r.consumer.poll()
  t.equal(r.logger.find(SYNC_FETCH_FAILED).length, 2, 'a new run of failures starts with the first line again')
  t.equal(r.slot.generation, 1, 'failures keep the serving generation')
})

t.test('push age: one error at half the maximum per crossing, re-armed by a fresh push', async (t) => {
  const r = await rig(t)
  const first = await r.store.put(KEY, artifact(), {})
  await r.consumer.poll()
  const half = (MAX_AGE * 1000) / 2
  r.clock.advance(half - MINUTE)
  await r.consumer.poll()
  t.same(r.logger.find(PUSH_AGE_HALF_MAXIMUM), [], 'below half')
  r.clock.advance(MINUTE)
  await r.consumer.poll()
  const lines = r.logger.find(PUSH_AGE_HALF_MAXIMUM)
  t.equal(lines.length, 1, 'at half')
  t.equal(lines[0]?.level, 'error')
  t.same(lines[0]?.data, { ecosystem: 'js', pushedAt: first.publishedAt?.toISOString(), ageSeconds: MAX_AGE / 2, maxAgeSeconds: MAX_AGE })
  for (let i = 0; i < 5; i++) {
    r.clock.advance(DAY / 4)
    await r.consumer.poll()
  }
  t.equal(r.logger.find(PUSH_AGE_HALF_MAXIMUM).length, 1, 'once per crossing, also past the maximum')

  // A fresh push brings the age under half: re-armed.
  await r.store.put(KEY, artifact({ compiledAt: new Date('2026-03-04T00:00:00Z') }), {})
  t.equal(await r.consumer.poll(), 'swapped')
  r.clock.advance(half)
  await r.consumer.poll()
  t.equal(r.logger.find(PUSH_AGE_HALF_MAXIMUM).length, 2, 'the next crossing logs again')

  // Failed polls still check the clock.
  const state = { down: false, cut: false }
  const r2 = await rig(t, { wrap: (s) => flaky(s, state) })
  await r2.store.put(KEY, artifact(), {})
  await r2.consumer.poll()
  state.down = true
  r2.clock.advance(half)
  t.equal(await r2.consumer.poll(), 'failed')
  t.equal(r2.logger.find(PUSH_AGE_HALF_MAXIMUM).length, 1, 'checked at every tick, failed or not')
})

t.test('an artifact with no publication time is swapped in, logged, and expired for the advisory denies', async (t) => {
  const timeless = (inner: ObjectStore): ObjectStore => ({
    put: (k, b, m) => inner.put(k, b, m),
    list: (p) => inner.list(p),
    delete: (k) => inner.delete(k),
    head: async (k, o) => {
      const h = await inner.head(k, o)
      return h === undefined || h.notModified ? h : { ...h, publishedAt: undefined }
    },
    get: async (k) => {
      const b = await inner.get(k)
      return b === undefined ? b : { ...b, publishedAt: undefined }
    },
  })
  const r = await rig(t, { wrap: timeless })
  const put = await r.store.put(KEY, artifact(), {})
  t.equal(await r.consumer.poll(), 'swapped')
  const lines = r.logger.find(ADVISORY_NO_PUBLICATION_TIME)
  t.equal(lines.length, 1)
  t.equal(lines[0]?.level, 'error')
  t.match(lines[0]?.data, { ecosystem: 'js', key: KEY, etag: put.etag })
  t.match(r.logger.find(ADVISORY_SWAPPED)[0]?.data, { publishedAt: '<unrecorded>' })
  t.equal(await r.consumer.poll(), 'unchanged', 'no publication time twice is no change')
  t.equal(lines.length, 1)

  const evaluator = createEvaluator([{ rule: 'DenyIfCve', onUnavailable: 'skip' }, { rule: 'AllowIfOlderThan', seconds: 0 }], {
    ecosystem: 'js', database: () => r.slot.database(), clock: r.clock, maxAgeSeconds: MAX_AGE,
  })
  const decision = evaluator.evaluate({ ecosystem: 'js', name: 'lodash', version: '4.17.21', publishedAt: new Date('2021-02-20T00:00:00Z') }, 'admission')
  t.equal(decision.verdict, 'expired', 'treated as expired; skip does not waive it')
})

t.test('start polls at once and on its interval; stop ends it', async (t) => {
  const r = await rig(t)
  await r.store.put(KEY, artifact(), {})
  const swapped = new Promise<void>((resolve) => {
    const check = setInterval(() => { if (r.slot.serving !== undefined) { clearInterval(check); resolve() } }, 5)
  })
  r.consumer.start(10)
  await swapped
  t.equal(r.readiness.stateOf('js'), MOUNT_STATE.ready)
  await r.consumer.stop()
  t.throws(() => r.consumer.start(0), RangeError)
})
