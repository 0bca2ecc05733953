/**
 * The one suite every shared cache backend passes (STYLE.md rule 8): the
 * process's memory (memory-backend.test.ts) and a real redis-server
 * (redis-backend.test.ts). It pins the contract of engine/cache/shared-backend.ts:
 * stamped reads and writes, invalidation by stamp, records of fields, time
 * to live, leases with their release told to watchers, and claims.
 */
import type { Test } from 'tap'
import type { SharedCacheBackend } from '../../engine/cache/shared-backend.js'

export interface BackendHarness {
  readonly backend: SharedCacheBackend
  /** Lets `ms` pass on the backend's clock: a ManualClock, or real time for Redis. */
  elapse(ms: number): Promise<void>
  close(): Promise<void>
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const text = (value: Buffer | undefined): string | undefined => value?.toString('utf8')

export function sharedBackendSuite(t: Test, makeHarness: () => Promise<BackendHarness>): void {
  const withBackend = (name: string, body: (t: Test, h: BackendHarness) => Promise<void>): void => {
    t.test(name, async (t) => {
      const h = await makeHarness()
      t.teardown(() => h.close())
      await body(t, h)
    })
  }

  withBackend('a value is read back under the stamp it was written under; a current copy is not sent again', async (t, { backend }) => {
    const absent = await backend.read('js|a', 'doc')
    t.same(absent, { stamp: '0', current: false, value: undefined })
    await backend.write('js|a', absent.stamp, 'doc', bytes('one'), 60_000)
    const read = await backend.read('js|a', 'doc')
    t.equal(read.stamp, '0')
    t.equal(read.current, false)
    t.equal(text(read.value), 'one')
    t.same(await backend.read('js|a', 'doc', '0'), { stamp: '0', current: true, value: undefined })
    t.equal(text((await backend.read('js|a', 'doc', '7')).value), 'one', 'a copy of another stamp is not current')
    t.equal((await backend.read('js|a', 'other')).value, undefined, 'names are apart')
    t.equal((await backend.read('js|b', 'doc')).value, undefined, 'groups are apart')
  })

  withBackend('a bump makes every value of the group unreachable, even one written late under the old stamp', async (t, { backend }) => {
    const { stamp } = await backend.read('js|a', 'doc')
    await backend.write('js|a', stamp, 'doc', bytes('old'), 60_000)
    await backend.write('js|b', '0', 'doc', bytes('other'), 60_000)
    await backend.writeFields('js|a', stamp, 'versions', new Map([['a-1.0.0.tgz', bytes('r1')]]), 60_000)
    await backend.bump('js|a')
    const after = await backend.read('js|a', 'doc', stamp)
    t.not(after.stamp, stamp)
    t.equal(after.current, false, 'the old stamp is no longer current')
    t.equal(after.value, undefined)
    t.equal((await backend.readField('js|a', 'versions', 'a-1.0.0.tgz')).value, undefined)
    // A render that started before the invalidation writes under the stamp it read: no one reads it.
    await backend.write('js|a', stamp, 'doc', bytes('late'), 60_000)
    t.equal((await backend.read('js|a', 'doc')).value, undefined)
    t.equal(text((await backend.read('js|b', 'doc')).value), 'other', 'another group keeps its values')
    await backend.write('js|a', after.stamp, 'doc', bytes('new'), 60_000)
    t.equal(text((await backend.read('js|a', 'doc')).value), 'new')
  })

  withBackend('a record of fields: written together or one by one, read one field at a time', async (t, { backend }) => {
    await backend.writeFields('py|p', '0', 'files', new Map([['p-1.whl', bytes('one')], ['p-2.whl', bytes('two')]]), 60_000)
    await backend.writeFields('py|p', '0', 'files', new Map([['p-3.whl', bytes('three')]]), 60_000)
    await backend.writeFields('py|p', '0', 'files', new Map(), 60_000)
    t.equal(text((await backend.readField('py|p', 'files', 'p-1.whl')).value), 'one')
    t.equal(text((await backend.readField('py|p', 'files', 'p-3.whl')).value), 'three')
    t.equal((await backend.readField('py|p', 'files', 'p-4.whl')).value, undefined)
    t.same(await backend.readField('py|p', 'files', 'p-1.whl', '0'), { stamp: '0', current: true, value: undefined })
  })

  withBackend('values and records expire after their time to live', async (t, { backend, elapse }) => {
    await backend.write('js|a', '0', 'doc', bytes('brief'), 150)
    await backend.writeFields('js|a', '0', 'versions', new Map([['f', bytes('v')]]), 150)
    t.equal(text((await backend.read('js|a', 'doc')).value), 'brief')
    await elapse(400)
    t.equal((await backend.read('js|a', 'doc')).value, undefined)
    t.equal((await backend.readField('js|a', 'versions', 'f')).value, undefined)
  })

  withBackend('a lease is held by one caller; its release tells every watcher, and frees it', async (t, { backend }) => {
    const first = await backend.lease('js|a', 60_000)
    t.ok(first)
    t.equal(await backend.lease('js|a', 60_000), undefined, 'held')
    t.ok(await backend.lease('js|b', 60_000), 'another key is free')
    const one = backend.watch('js|a')
    const two = backend.watch('js|a')
    const cancelled = backend.watch('js|a')
    cancelled.cancel()
    let cancelledHeard = false
    void cancelled.settled.then(() => { cancelledHeard = true })
    await backend.release(first!, 'done')
    t.equal(await one.settled, 'done')
    t.equal(await two.settled, 'done')
    t.ok(await backend.lease('js|a', 60_000), 'released: free again')
    await new Promise((resolve) => setTimeout(resolve, 50))
    t.equal(cancelledHeard, false, 'a cancelled watch hears nothing')
  })

  withBackend('a lease expires; a holder whose lease expired cannot release the next holder\'s', async (t, { backend, elapse }) => {
    const first = await backend.lease('js|a', 150)
    t.ok(first)
    await elapse(400)
    const second = await backend.lease('js|a', 60_000)
    t.ok(second, 'expired: taken by the next')
    const watch = backend.watch('js|a')
    await backend.release(first!, 'failed')
    t.equal(await watch.settled, 'failed', 'the late release is still told')
    t.equal(await backend.lease('js|a', 60_000), undefined, 'but the second holder keeps its lease')
    await backend.release(second!, 'done')
  })

  withBackend('a claim is granted once until it expires', async (t, { backend, elapse }) => {
    t.equal(await backend.claim('job|a-1.0.0.tgz', 150), true)
    t.equal(await backend.claim('job|a-1.0.0.tgz', 150), false)
    t.equal(await backend.claim('job|b-1.0.0.tgz', 150), true)
    await elapse(400)
    t.equal(await backend.claim('job|a-1.0.0.tgz', 150), true, 'expired: claimable again')
  })

  withBackend('a claim given back is claimable again at once', async (t, { backend }) => {
    t.equal(await backend.claim('job|c-1.0.0.tgz', 60_000), true)
    await backend.unclaim('job|c-1.0.0.tgz')
    t.equal(await backend.claim('job|c-1.0.0.tgz', 60_000), true)
    t.equal(await backend.claim('job|c-1.0.0.tgz', 60_000), false)
    await backend.unclaim('job|never-claimed.tgz')
  })
}
