import t from 'tap'

import { CacheBudget } from '../../engine/cache/cache-budget.js'
import { StoreCounters } from '../../engine/cache/cache-counters.js'
import { RetentionStore } from '../../engine/cache/retention-store.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { isServiceError } from '../../engine/errors.js'

/** Values are strings whose accounted size is their length (keys are one character, adding 1). */
function setup(maxBytes: number, maxEntries: number, ttlMs = 60_000) {
  const clock = new ManualClock()
  const budget = new CacheBudget(maxBytes, maxEntries)
  const aCounters = new StoreCounters()
  const bCounters = new StoreCounters()
  const a = new RetentionStore<string>({ budget, clock, ttlMs, sizeOf: (v) => v.length, counters: aCounters })
  const b = new RetentionStore<string>({ budget, clock, ttlMs: ttlMs * 2, sizeOf: (v) => v.length, counters: bCounters })
  return { clock, budget, a, b, aCounters, bCounters }
}

const bytes = (n: number): string => 'x'.repeat(n - 1) // plus the one-character key: n accounted bytes

t.test('retains and accounts bytes and entries on the shared budget', async (t) => {
  const { budget, a, b } = setup(100, 10)
  t.equal(a.set('k', bytes(30)), 'retained')
  t.equal(b.set('k', bytes(20)), 'retained', 'the same key in the other store is another entry')
  t.equal(a.get('k'), bytes(30))
  t.equal(a.residentBytes, 30)
  t.equal(b.residentBytes, 20)
  t.equal(budget.residentBytes, 50)
  t.equal(budget.entries, 2)
  t.equal(a.set('k', bytes(10)), 'retained', 'replacing a key')
  t.equal(budget.residentBytes, 30)
  t.equal(budget.entries, 2)
  t.equal(a.delete('k'), true)
  t.equal(a.delete('k'), false)
  t.equal(budget.residentBytes, 20)
})

t.test('makes room by evicting only its own least recently used entries', async (t) => {
  const { budget, a, b } = setup(100, 10)
  a.set('1', bytes(30))
  a.set('2', bytes(30))
  b.set('x', bytes(30))
  a.get('1') // 2 is now a's least recently used
  t.equal(a.set('3', bytes(30)), 'retained')
  t.equal(a.get('2'), undefined, 'own LRU evicted')
  t.equal(a.get('1'), bytes(30), 'recently used kept')
  t.equal(b.get('x'), bytes(30), 'the other store untouched')
  t.equal(budget.residentBytes, 90)
})

t.test('when the other store holds the capacity the insert is refused and nothing is evicted', async (t) => {
  const { budget, a, b, aCounters, bCounters } = setup(100, 10)
  a.set('1', bytes(20))
  b.set('x', bytes(70))
  t.equal(a.set('2', bytes(40)), 'refused', '20 own + 10 free < 40')
  t.equal(a.get('1'), bytes(20), 'own entry not evicted for a refused insert')
  t.equal(b.get('x'), bytes(70))
  t.equal(aCounters.refused, 1)
  t.equal(bCounters.refused, 0)
  t.equal(budget.residentBytes, 90)
  t.equal(a.set('2', bytes(30)), 'retained', '20 own + 10 free fits 30, evicting own')
  t.equal(a.get('1'), undefined)
})

t.test('the entry bound is shared the same way', async (t) => {
  const { a, b, aCounters } = setup(1000, 2)
  b.set('x', bytes(5))
  b.set('y', bytes(5))
  t.equal(a.set('1', bytes(5)), 'refused', 'b holds every entry')
  t.equal(aCounters.refused, 1)
  t.equal(b.set('z', bytes(5)), 'retained', 'b evicts its own')
  t.equal(b.get('x'), undefined)
  t.equal(b.entries, 2)
})

t.test('a value above the aggregate byte bound causes no eviction', async (t) => {
  const { budget, a, aCounters } = setup(100, 10)
  a.set('1', bytes(50))
  a.set('2', bytes(50))
  t.equal(a.set('3', bytes(101)), 'refused')
  t.equal(aCounters.refused, 1)
  t.equal(a.entries, 2, 'nothing evicted')
  t.equal(budget.residentBytes, 100)
})

t.test('expiry on access, no timer', async (t) => {
  const { clock, budget, a } = setup(100, 10, 1000)
  a.set('1', bytes(10))
  clock.advance(999)
  t.equal(a.get('1'), bytes(10), 'alive just before its time')
  t.equal(budget.residentBytes, 10, 'access does not extend or drop it')
  clock.advance(1)
  t.equal(budget.residentBytes, 10, 'still accounted until accessed')
  t.equal(a.get('1'), undefined, 'expired on access')
  t.equal(budget.residentBytes, 0)
  t.equal(a.entries, 0)
})

t.test('a retaining insert removes expired entries of both stores', async (t) => {
  const { clock, budget, a, b } = setup(100, 10, 1000)
  a.set('1', bytes(40))
  b.set('x', bytes(40)) // b's time to live is 2000
  clock.advance(1000)
  a.set('2', bytes(10))
  t.equal(a.entries, 1, "a's expired entry removed")
  t.equal(b.entries, 1, "b's entry still alive")
  clock.advance(1000)
  t.equal(a.set('3', bytes(80)), 'retained', "b's expired entry no longer holds capacity")
  t.equal(b.entries, 0)
  t.equal(budget.residentBytes, 80, 'a evicted its own 2 (10 bytes) to fit 80 next to nothing')
})

t.test('a recently used entry still expires by insertion time', async (t) => {
  const { clock, a } = setup(100, 10, 1000)
  a.set('1', bytes(10))
  clock.advance(500)
  a.get('1')
  a.set('2', bytes(10))
  clock.advance(500)
  a.set('3', bytes(10))
  t.equal(a.get('1'), undefined)
  t.equal(a.get('2'), bytes(10))
})

t.test('zero bounds retain nothing', async (t) => {
  const { a, aCounters } = setup(0, 0)
  t.equal(a.set('1', ''), 'refused', 'even an empty value has its key accounted')
  t.equal(aCounters.refused, 1)
})

t.test('options are guarded', async (t) => {
  const codes: string[] = []
  const attempt = (fn: () => unknown) => { try { fn(); codes.push('none') } catch (e) { codes.push(isServiceError(e) ? e.code : 'other') } }
  attempt(() => new CacheBudget(-1, 1))
  attempt(() => new CacheBudget(1, 1.5))
  attempt(() => new RetentionStore({ budget: new CacheBudget(1, 1), clock: new ManualClock(), ttlMs: 0, sizeOf: () => 1, counters: new StoreCounters() }))
  t.same(codes, ['CONFIG_INVALID', 'CONFIG_INVALID', 'CONFIG_INVALID'])
})
