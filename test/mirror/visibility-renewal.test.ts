/**
 * Visibility renewal timing (SPEC.md 3.7, 8) on a manual clock: each renewal
 * asks for the same window a third of the way into what remains, the last
 * one asks only for what is left of twelve hours from the receive, and past
 * that the job is given up; a stale receipt gives up at once, three failures
 * in a row give up, a success in between resets the count.
 */
import t from 'tap'
import { RENEWAL_ATTEMPTS, VisibilityRenewal, type GiveUp } from '../../engine/mirror/visibility-renewal.js'
import { ServiceError } from '../../engine/errors.js'
import { QUEUE_LIMITS, QueueFailureReason } from '../../engine/queue/queue.js'
import { ManualTimers } from '../doubles/manual-timers.js'

interface Call { readonly at: number; readonly seconds: number }

function setup(windowSeconds: number, fail: (n: number) => Error | undefined = () => undefined) {
  const timers = new ManualTimers()
  const start = timers.clock.now()
  const calls: Call[] = []
  const givenUp: GiveUp[] = []
  const renewal = new VisibilityRenewal({
    queue: {
      changeVisibility: async (_handle: string, seconds: number) => {
        calls.push({ at: timers.clock.now() - start, seconds })
        const error = fail(calls.length)
        if (error !== undefined) throw error
      },
    },
    receiptHandle: 'r-1',
    windowSeconds,
    receivedAt: start,
    clock: timers.clock,
    timers,
    onGiveUp: (why) => givenUp.push(why),
  })
  // Each renewal settles on a microtask; let it before the next advance.
  const advance = async (ms: number) => { timers.advance(ms); for (let i = 0; i < 5; i++) await Promise.resolve() }
  return { timers, calls, givenUp, renewal, advance }
}

t.test('renews the same window a third of the way into what remains', async (t) => {
  const { calls, renewal, advance } = setup(120)
  await advance(39_999)
  t.same(calls, [], 'not before a third of the window')
  await advance(1)
  t.same(calls, [{ at: 40_000, seconds: 120 }], 'at 40 s of a 120 s window, asking for 120 s again')
  // The window now ends at 160 s; a third of the remaining 120 s is 40 s later.
  await advance(40_000)
  t.same(calls.map((c) => c.at), [40_000, 80_000])
  t.equal(renewal.renewals, 2)
  renewal.stop()
  await advance(600_000)
  t.equal(calls.length, 2, 'nothing after stop')
})

t.test('never past twelve hours per receipt: the last renewal asks for what is left, then the job is given up', async (t) => {
  const lifetime = QUEUE_LIMITS.maxVisibilitySeconds * 1000
  t.equal(lifetime, 12 * 3600 * 1000)
  const { calls, givenUp, advance } = setup(3600)
  for (let i = 0; i < 200 && givenUp.length === 0; i++) await advance(600_000)
  t.ok(calls.length > 1)
  for (const call of calls) t.ok(call.at + call.seconds * 1000 <= lifetime, `renewal at ${call.at} ms reaches no later than twelve hours`)
  const last = calls[calls.length - 1] as Call
  t.ok(last.seconds < 3600, 'the last renewal asked only for what was left')
  t.match(givenUp, [{ reason: QueueFailureReason.VISIBILITY_LIMIT }], 'then given up at the limit')
})

t.test('a stale receipt gives up at once; three failures in a row give up; a success resets the count', async (t) => {
  const stale = setup(120, () => new ServiceError('QUEUE_FAILURE', { data: { reason: QueueFailureReason.RECEIPT_HANDLE_STALE, transport: 'ReceiptHandleIsInvalid' } }))
  await stale.advance(40_000)
  t.match(stale.givenUp, [{ reason: QueueFailureReason.RECEIPT_HANDLE_STALE, transport: 'ReceiptHandleIsInvalid' }])

  const transient = () => new ServiceError('QUEUE_FAILURE', { data: { reason: 'renewal-failed', transport: 'ECONNRESET' } })
  // Fails 1, succeeds 2, then fails 3, 4, 5.
  const flaky = setup(1200, (n) => (n === 2 ? undefined : transient()))
  for (let i = 0; i < 1000 && flaky.givenUp.length === 0; i++) await flaky.advance(10_000)
  t.equal(flaky.calls.length, 1 + 1 + RENEWAL_ATTEMPTS, 'the success in between reset the count of failures')
  t.match(flaky.givenUp, [{ reason: 'renewal-failed', transport: 'ECONNRESET' }])
})
