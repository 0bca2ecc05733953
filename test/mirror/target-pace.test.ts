/**
 * The mirror target's pace (engine/mirror/target-pace.ts) on a clock the
 * test moves: AIMD on answer times within 1 and the plan's concurrency,
 * halved once per round, and the outage pause: held jobs, one trial at a
 * time after 1, 2, 4... s (at most the cap), resumed on the first answer.
 */
import t from 'tap'
import { MIRROR_TARGET_PAUSED, MIRROR_TARGET_RESUMED, TargetPace, type TargetTicket } from '../../engine/mirror/target-pace.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { ManualTimers } from '../doubles/manual-timers.js'

function pace(options: { max?: number, slowMs?: number, onTrial?: () => void } = {}): { pace: TargetPace, timers: ManualTimers, logger: RecordingLogger } {
  const timers = new ManualTimers()
  const logger = new RecordingLogger()
  return {
    pace: new TargetPace({ maxConcurrency: options.max ?? 8, slowMs: options.slowMs, clock: timers.clock, timers, logger, authority: '127.0.0.1:1', mount: 'js', ...(options.onTrial === undefined ? {} : { onTrial: options.onTrial }) }),
    timers,
    logger,
  }
}

/** Settles pending promise callbacks. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('options are guarded', async (t) => {
  t.throws(() => new TargetPace({ maxConcurrency: 0 }), /maxConcurrency/)
  t.throws(() => new TargetPace({ maxConcurrency: 2, slowMs: -1 }), /slowMs/)
})

t.test('fast answers keep the limit at the plan\'s concurrency; slow ones halve it once per round, never below 1; it grows back by one per round', async (t) => {
  const { pace: p, timers } = pace({ max: 8 })
  const changes: number[] = []
  p.onChange(() => changes.push(p.limit))
  for (let i = 0; i < 20; i++) { p.sample(10); timers.advance(100) }
  t.equal(p.limit, 8, 'never above the ceiling')
  t.equal(p.snapshot().baselineMs, 10)
  // Automatic bound: 3 x 10 + 100 = 130 ms.
  p.sample(120)
  t.equal(p.limit, 8, '120 ms is within the automatic bound')
  // Four jobs in flight all see one congested moment: the limit halves once.
  timers.advance(1_000)
  for (let i = 0; i < 4; i++) p.sample(500)
  t.equal(p.limit, 4, 'answers to requests sent before the decrease do not decrease it again')
  timers.advance(1_000)
  p.sample(500)
  t.equal(p.limit, 2)
  timers.advance(1_000)
  p.sample(500)
  timers.advance(1_000)
  p.sample(500)
  t.equal(p.limit, 1, 'never below 1')
  t.equal(p.capacity, 1)
  t.match(p.snapshot(), { limit: 1, maxConcurrency: 8, paused: 0, slowAnswers: 7, decreases: 4 })
  let fast = 0
  while (p.limit < 8) { p.sample(10); fast++ }
  t.equal(fast, 28, 'back to 8 after 1 + 2 + ... + 7 fast answers (one per round)')
  t.same(changes, [4, 2, 1, 2, 3, 4, 5, 6, 7, 8])
})

t.test('a configured slow bound replaces the automatic one', async (t) => {
  const { pace: p } = pace({ max: 4, slowMs: 50 })
  p.sample(51)
  t.equal(p.limit, 2, 'the first answer over 50 ms halves')
  const { pace: auto } = pace({ max: 4 })
  auto.sample(5_000)
  t.equal(auto.limit, 4, 'automatic: the first answer is the baseline, never slow')
})

t.test('the baseline is the fastest answer of the last five minutes', async (t) => {
  const { pace: p, timers } = pace({ max: 4 })
  p.sample(10)
  timers.advance(6 * 60_000)
  p.sample(400)
  t.equal(p.snapshot().baselineMs, 400, 'an answer older than five minutes no longer counts')
  p.sample(900)
  t.equal(p.limit, 4, 'a target that got slower for good stops counting as slow once its old answers age out')
})

t.test('an outage: one warning, the jobs held, trials after 1, 2, 4 s (capped), resumed on the first answer with one info line', async (t) => {
  let trials = 0
  const { pace: p, timers, logger } = pace({ max: 4, onTrial: () => { trials++ } })
  const first = await p.admit()
  first.failed('no answer to the lookup')
  first.end()
  t.ok(p.paused)
  t.equal(p.capacity, 1, 'the consumer takes no more jobs while one is held')
  t.equal(p.limit, 2, 'a failure halves the limit too')
  t.match(logger.find(MIRROR_TARGET_PAUSED), [{ level: 'warn', data: { mount: 'js', target: '127.0.0.1:1', cause: 'no answer to the lookup', retryInMs: 1_000 } }])

  const admitted: TargetTicket[] = []
  const held = [p.admit(), p.admit(), p.admit()].map((promise) => promise.then((ticket) => { admitted.push(ticket); return ticket }))
  await flush()
  t.equal(admitted.length, 0, 'held while paused')
  timers.advance(999)
  await flush()
  t.equal(admitted.length, 0)
  timers.advance(1)
  await flush()
  t.equal(admitted.length, 1, 'one trial after 1 s')
  t.equal(trials, 1, 'a trial beats the heartbeat')
  admitted[0]!.failed('the lookup answered 503')
  admitted[0]!.end()
  timers.advance(1_999)
  await flush()
  t.equal(admitted.length, 1, 'the next trial waits 2 s')
  timers.advance(1)
  await flush()
  t.equal(admitted.length, 2)
  admitted[1]!.failed('no answer')
  admitted[1]!.end()
  timers.advance(4_000)
  await flush()
  t.equal(admitted.length, 3, 'then 4 s')
  // The third held job tries; the target answers: every other held job goes on at once.
  const late = p.admit()
  admitted[2]!.answered()
  admitted[2]!.end()
  await late
  t.notOk(p.paused)
  t.equal(p.snapshot().pauses, 1, 'one episode')
  t.equal(logger.find(MIRROR_TARGET_PAUSED).length, 1, 'one warning per episode')
  t.match(logger.find(MIRROR_TARGET_RESUMED), [{ level: 'info', data: { mount: 'js', pausedMs: 7_000 } }])
  await Promise.all(held)
})

t.test('the wait between trials stops growing at the cap', async (t) => {
  const timers = new ManualTimers()
  const p = new TargetPace({ maxConcurrency: 1, clock: timers.clock, timers, firstTrialMs: 1_000, maxTrialMs: 3_000 })
  const first = await p.admit()
  first.failed('down')
  first.end()
  const waits: number[] = []
  let last = timers.clock.now()
  for (let i = 0; i < 4; i++) {
    const next = p.admit()
    let ticket: TargetTicket | undefined
    void next.then((t) => { ticket = t })
    while (ticket === undefined) { timers.advance(250); await flush() }
    waits.push(timers.clock.now() - last)
    ticket.failed('down')
    ticket.end()
    last = timers.clock.now()
  }
  t.same(waits, [1_000, 2_000, 3_000, 3_000])
})

t.test('a trial that ends without a verdict lets the next held job try; a cancelled held job leaves', async (t) => {
  const { pace: p, timers } = pace({ max: 2 })
  const first = await p.admit()
  first.failed('down')
  first.end()
  const controller = new AbortController()
  const cancelled = p.admit(controller.signal)
  const a = p.admit()
  const b = p.admit()
  controller.abort(new Error('drained'))
  await t.rejects(cancelled, /drained/)
  timers.advance(1_000)
  const trial = await a
  trial.end()
  timers.advance(0)
  const next = await b
  t.ok(next, 'the next held job became the trial without a new wait')
  next.answered()
  next.end()
  t.notOk(p.paused)
})

t.test('close rejects the held jobs', async (t) => {
  const { pace: p } = pace()
  const first = await p.admit()
  first.failed('down')
  first.end()
  const held = p.admit()
  p.close(new Error('stopped'))
  await t.rejects(held, /stopped/)
})
