import t from 'tap'

import { RequestCollapser, type Load } from '../../engine/cache/collapse.js'

/** A load the test settles by hand; records the signal it was given. */
function deferred<V>() {
  let resolve!: (value: V) => void
  let reject!: (reason: unknown) => void
  const calls: AbortSignal[] = []
  const load: Load<V> = (signal) => {
    calls.push(signal)
    return new Promise<V>((res, rej) => { resolve = res; reject = rej })
  }
  return { load, calls, resolve: (v: V) => resolve(v), reject: (e: unknown) => reject(e) }
}

function counting() {
  const counts = { miss: 0, collapsed: 0 }
  return { counts, sink: { miss: () => { counts.miss++ }, collapsed: () => { counts.collapsed++ } } }
}

t.test('identical concurrent requests share one leader and its value', async (t) => {
  const { counts, sink } = counting()
  const values: [string, number][] = []
  const c = new RequestCollapser<number>({ counts: sink, onValue: (k, v) => values.push([k, v]) })
  const work = deferred<number>()
  const other = deferred<number>()
  const p1 = c.run('k', work.load)
  const p2 = c.run('k', other.load)
  const p3 = c.run('k', other.load)
  t.equal(c.inFlight, 1)
  work.resolve(7)
  t.same(await Promise.all([p1, p2, p3]), [7, 7, 7])
  t.equal(work.calls.length, 1)
  t.equal(other.calls.length, 0, 'followers never load')
  t.same(counts, { miss: 1, collapsed: 2 })
  t.same(values, [['k', 7]], 'the value is handed over once')
  t.equal(c.inFlight, 0)
})

t.test('different keys do not collapse', async (t) => {
  const { counts, sink } = counting()
  const c = new RequestCollapser<number>({ counts: sink })
  const a = deferred<number>()
  const b = deferred<number>()
  const pa = c.run('a', a.load)
  const pb = c.run('b', b.load)
  a.resolve(1)
  b.resolve(2)
  t.same(await Promise.all([pa, pb]), [1, 2])
  t.same(counts, { miss: 2, collapsed: 0 })
})

t.test('a failure is shared, and not retained', async (t) => {
  const values: number[] = []
  const c = new RequestCollapser<number>({ onValue: (_k, v) => values.push(v) })
  const work = deferred<number>()
  const p1 = c.run('k', work.load)
  const p2 = c.run('k', work.load)
  const failure = new Error('upstream 503')
  work.reject(failure)
  const results = await Promise.allSettled([p1, p2])
  t.same(results.map((r) => r.status), ['rejected', 'rejected'])
  t.equal((results[0] as PromiseRejectedResult).reason, failure)
  t.equal((results[1] as PromiseRejectedResult).reason, failure, 'the same failure')
  t.same(values, [])
  const again = deferred<number>()
  const p3 = c.run('k', again.load)
  again.resolve(3)
  t.equal(await p3, 3, 'the next request leads afresh')
})

t.test('a load that throws synchronously fails its waiters', async (t) => {
  const c = new RequestCollapser<number>()
  const p = c.run('k', () => { throw new Error('sync') })
  await t.rejects(p, /sync/)
  t.equal(c.inFlight, 0)
})

t.test('leader cancellation: a follower takes over and is counted once', async (t) => {
  const { counts, sink } = counting()
  const values: number[] = []
  const c = new RequestCollapser<number>({ counts: sink, onValue: (_k, v) => values.push(v) })
  const leaderWork = deferred<number>()
  const followerWork = deferred<number>()
  const leaderAbort = new AbortController()
  const p1 = c.run('k', leaderWork.load, leaderAbort.signal)
  const p2 = c.run('k', followerWork.load, new AbortController().signal)
  const p3 = c.run('k', followerWork.load)
  leaderAbort.abort(new Error('client went away'))
  await t.rejects(p1, /client went away/, 'the leader is released with its own reason')
  t.equal(leaderWork.calls[0]?.aborted, true, "the leader's work is aborted")
  t.equal(followerWork.calls.length, 1, 'the first follower took over with its own load')
  leaderWork.resolve(99) // late result of aborted work
  followerWork.resolve(5)
  t.same(await Promise.all([p2, p3]), [5, 5])
  t.same(values, [5], 'the late result of the aborted work is ignored')
  t.same(counts, { miss: 1, collapsed: 2 }, 'the follower that took over is not counted again')
})

t.test('a follower that aborts leaves the leader alone', async (t) => {
  const c = new RequestCollapser<number>()
  const work = deferred<number>()
  const followerAbort = new AbortController()
  const p1 = c.run('k', work.load)
  const p2 = c.run('k', work.load, followerAbort.signal)
  followerAbort.abort(new Error('gone'))
  await t.rejects(p2, /gone/)
  t.equal(work.calls[0]?.aborted, false)
  work.resolve(1)
  t.equal(await p1, 1)
})

t.test('when every waiter aborts the work is aborted and the key is free', async (t) => {
  const c = new RequestCollapser<number>()
  const work = deferred<number>()
  const ac = new AbortController()
  const p = c.run('k', work.load, ac.signal)
  ac.abort(new Error('bye'))
  await t.rejects(p, /bye/)
  t.equal(work.calls[0]?.aborted, true)
  t.equal(c.inFlight, 0)
  work.resolve(1)
  const next = deferred<number>()
  const p2 = c.run('k', next.load)
  next.resolve(2)
  t.equal(await p2, 2)
})

t.test('an already aborted signal is refused at once and counted nowhere', async (t) => {
  const { counts, sink } = counting()
  const c = new RequestCollapser<number>({ counts: sink })
  const ac = new AbortController()
  ac.abort(new Error('already'))
  await t.rejects(c.run('k', () => Promise.resolve(1), ac.signal), /already/)
  t.same(counts, { miss: 0, collapsed: 0 })
})

t.test('a throwing retention hook does not strand the waiters', async (t) => {
  const c = new RequestCollapser<number>({ onValue: () => { throw new Error('store write failed') } })
  t.equal(await c.run('k', () => Promise.resolve(4)), 4)
})
