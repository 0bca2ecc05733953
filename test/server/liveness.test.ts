/**
 * Liveness (SPEC.md 2.6, 3.2) on a manual clock: without a mirror worker the
 * process is live with `lastPoll: null`; with one, /livez turns stalled 660 s
 * after the heartbeat was created when no poll or job succeeded, and 660 s
 * after the last success otherwise; each success restarts the allowance and
 * is reported as `lastPoll`.
 */
import t from 'tap'
import { Heartbeat, Liveness, LIVENESS_ALLOWANCE_MS } from '../../server/health/liveness.js'
import { ManualClock } from '../doubles/manual-clock.js'

t.test('no mirror worker: the listener alone', async (t) => {
  t.same(new Liveness().body(), { status: 'ok', lastPoll: null })
})

t.test('a worker that never succeeds stalls 660 s after its heartbeat was created', async (t) => {
  t.equal(LIVENESS_ALLOWANCE_MS, 660_000)
  const clock = new ManualClock()
  const liveness = new Liveness()
  liveness.attachMirrorHeartbeat(new Heartbeat(clock))
  clock.advance(659_999)
  t.same(liveness.body(), { status: 'ok', lastPoll: null }, 'still within the allowance, lastPoll null until a success')
  clock.advance(1)
  t.same(liveness.body(), { status: 'stalled', lastPoll: null })
})

t.test('each success restarts the allowance and is the lastPoll; progress makes it healthy again', async (t) => {
  const clock = new ManualClock()
  const heartbeat = new Heartbeat(clock)
  const liveness = new Liveness()
  liveness.attachMirrorHeartbeat(heartbeat)
  clock.advance(600_000)
  heartbeat.beat()
  const first = new Date(clock.now()).toISOString()
  clock.advance(659_999)
  t.same(liveness.body(), { status: 'ok', lastPoll: first }, '660 s counts from the last success, not from creation')
  clock.advance(1)
  t.same(liveness.body(), { status: 'stalled', lastPoll: first })
  clock.advance(5_000)
  heartbeat.beat()
  t.same(liveness.body(), { status: 'ok', lastPoll: new Date(clock.now()).toISOString() }, 'healthy again once the worker makes progress')
})
