import t from 'tap'
import { Admission, AdmissionGate, PAUSE_CAP_UPSTREAM_READ_MS, REQUEST_TIMEOUT_MS, type GateOptions } from '../../engine/memory/gate.js'
import { ManualTimers } from '../doubles/manual-timers.js'
import { computePlan, GiB, MiB } from '../../engine/memory/plan.js'
import { isServiceError, ServiceError } from '../../engine/errors.js'

interface Tracked<T> { state: 'pending' | 'resolved' | 'rejected', value?: T, error?: unknown }

function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { state: 'pending' }
  promise.then((value) => { tracked.state = 'resolved'; tracked.value = value }, (error: unknown) => { tracked.state = 'rejected'; tracked.error = error })
  return tracked
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

function makeGate(options: Partial<GateOptions> = {}): { gate: AdmissionGate, timers: ManualTimers } {
  const timers = new ManualTimers()
  const gate = new AdmissionGate({ budgetBytes: 10 * MiB, maxInFlight: 4, waitingRoom: 4, timers, ...options })
  return { gate, timers }
}

const READ = { timeoutMs: PAUSE_CAP_UPSTREAM_READ_MS }

t.test('SPEC.md 8 caps', async (t) => {
  t.equal(PAUSE_CAP_UPSTREAM_READ_MS, 50_000)
  t.equal(REQUEST_TIMEOUT_MS, 60_000)
})

t.test('entering takes a 1 MiB step and a slot; release returns both, once', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  t.ok(a instanceof Admission)
  t.equal(a.chargedBytes, MiB)
  t.match(gate.snapshot(), { chargedBytes: MiB, inFlight: 1, waiting: 0, queued: 0 })
  await a.charge(3 * MiB, READ)
  t.equal(gate.chargedBytes, 4 * MiB)
  a.release()
  a.release()
  t.equal(a.released, true)
  t.match(gate.snapshot(), { chargedBytes: 0, inFlight: 0 })
  t.equal(a.tryCharge(MiB), true, 'a late chunk after release charges nothing')
  t.equal(gate.chargedBytes, 0)
})

t.test('the fast path returns one shared resolved promise', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  t.equal(a.charge(100, READ), a.charge(100, READ))
  t.equal(a.tryCharge(100), true)
  t.equal(a.chargedBytes, MiB + 300)
})

t.test('a new request that cannot enter within 1 s is refused with 503 Retry-After: 1', async (t) => {
  const { gate, timers } = makeGate({ maxInFlight: 1 })
  const a = await gate.enter()
  const b = track(gate.enter())
  await flush()
  t.equal(b.state, 'pending')
  t.match(gate.snapshot(), { waiting: 1, queued: 1, shed: 0 })
  timers.advance(999)
  await flush()
  t.equal(b.state, 'pending')
  timers.advance(1)
  await flush()
  t.equal(b.state, 'rejected')
  t.ok(isServiceError(b.error, 'GATE_SHED'))
  const error = b.error as ServiceError
  t.equal(error.status, 503)
  t.equal(error.retryAfter, 1)
  t.match(gate.snapshot(), { waiting: 0, queued: 1, shed: 1, inFlight: 1 })
  a.release()
  t.equal(timers.pendingCount, 0)
})

t.test('a waiting request enters when a slot frees', async (t) => {
  const { gate, timers } = makeGate({ maxInFlight: 1 })
  const a = await gate.enter()
  const b = track(gate.enter())
  timers.advance(500)
  a.release()
  await flush()
  t.equal(b.state, 'resolved')
  t.match(gate.snapshot(), { waiting: 0, queued: 1, shed: 0, inFlight: 1, chargedBytes: MiB })
  t.equal(timers.pendingCount, 0, 'the entry wait timer was cleared')
})

t.test('a waiting request enters when memory frees for its step', async (t) => {
  const { gate } = makeGate({ budgetBytes: 4 * MiB })
  const a = await gate.enter()
  await a.charge(3 * MiB, READ)
  const b = track(gate.enter())
  await flush()
  t.equal(b.state, 'pending', 'no room for the entry step')
  a.release()
  await flush()
  t.equal(b.state, 'resolved')
})

t.test('a full waiting room sheds at once', async (t) => {
  const { gate } = makeGate({ maxInFlight: 1, waitingRoom: 1 })
  await gate.enter()
  const b = track(gate.enter())
  const c = track(gate.enter())
  await flush()
  t.equal(b.state, 'pending')
  t.equal(c.state, 'rejected')
  t.ok(isServiceError(c.error, 'GATE_SHED'))
  t.match(gate.snapshot(), { waiting: 1, shed: 1, queued: 1 })
})

t.test('aborting a waiting request rejects with the reason and sheds nothing', async (t) => {
  const { gate, timers } = makeGate({ maxInFlight: 1 })
  await gate.enter()
  const controller = new AbortController()
  const b = track(gate.enter(controller.signal))
  controller.abort(new Error('client went away'))
  await flush()
  t.equal(b.state, 'rejected')
  t.match(b.error, { message: 'client went away' })
  t.match(gate.snapshot(), { waiting: 0, shed: 0 })
  t.equal(timers.pendingCount, 0)
})

t.test('a started request pauses, keeping its slot, and resumes when memory frees', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ) // past the budget: a takes the overshoot right
  t.equal(a.overshooting, true)
  t.equal(gate.snapshot().overdraws, 1)
  const paused = track(b.charge(MiB, READ))
  await flush()
  t.equal(paused.state, 'pending')
  t.match(gate.snapshot(), { pausedNow: 1, pauses: 1, inFlight: 2 })
  t.equal(b.tryCharge(MiB), false, 'tryCharge says pause without charging')
  t.equal(b.chargedBytes, MiB)
  a.release()
  await flush()
  t.equal(paused.state, 'resolved')
  t.equal(b.chargedBytes, 2 * MiB)
  t.match(gate.snapshot(), { pausedNow: 0, pauses: 1, chargedBytes: 2 * MiB })
})

t.test('a paused charge fails after its cap', async (t) => {
  const { gate, timers } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ)
  const upstream = track(b.charge(MiB, { timeoutMs: PAUSE_CAP_UPSTREAM_READ_MS }))
  const render = track(b.charge(MiB, { timeoutMs: REQUEST_TIMEOUT_MS }))
  timers.advance(PAUSE_CAP_UPSTREAM_READ_MS - 1)
  await flush()
  t.equal(upstream.state, 'pending')
  timers.advance(1)
  await flush()
  t.equal(upstream.state, 'rejected')
  t.ok(isServiceError(upstream.error, 'GATE_PAUSE_TIMEOUT'))
  t.equal(render.state, 'pending')
  t.equal(gate.snapshot().pausedNow, 1, 'still paused on the render charge')
  timers.advance(REQUEST_TIMEOUT_MS - PAUSE_CAP_UPSTREAM_READ_MS)
  await flush()
  t.ok(isServiceError(render.error, 'GATE_PAUSE_TIMEOUT'))
  t.equal(b.chargedBytes, MiB, 'nothing was charged for the failed charges')
  t.match(gate.snapshot(), { pausedNow: 0, pauses: 2 })
  const uncapped = track(b.charge(MiB, { timeoutMs: Infinity }))
  t.equal(timers.pendingCount, 0, 'an infinite cap sets no timer')
  b.release()
  await flush()
  t.equal(uncapped.state, 'rejected', 'released while paused')
  a.release()
  t.equal(gate.chargedBytes, 0)
})

t.test('only one request at a time runs past the budget, until it ends', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  const c = await gate.enter()
  await a.charge(8 * MiB, READ) // 11 MiB charged of 10: a overshoots
  t.equal(a.overshooting, true)
  const bBig = track(b.charge(5 * MiB, READ))
  const cBig = track(c.charge(5 * MiB, READ))
  await flush()
  t.equal(bBig.state, 'pending')
  t.equal(cBig.state, 'pending')
  await a.charge(4 * MiB, READ)
  t.equal(a.overshooting, true, 'keeps the right')
  t.equal(gate.chargedBytes, 15 * MiB)
  t.equal(gate.snapshot().overdraws, 2)
  const d = track(gate.enter())
  await flush()
  t.equal(d.state, 'pending', 'no new request enters while a started one is paused')

  a.release() // 2 MiB charged; b's 5 fits (7 <= 10), c's 5 does not: c takes the right
  await flush()
  t.equal(bBig.state, 'resolved')
  t.equal(cBig.state, 'resolved')
  t.equal(b.overshooting, false)
  t.equal(c.overshooting, true)
  t.equal(gate.chargedBytes, 12 * MiB)
  t.equal(gate.snapshot().overdraws, 3)

  const bMore = track(b.charge(MiB, READ))
  await flush()
  t.equal(bMore.state, 'pending', 'b does not overshoot while c holds the right')
  c.release()
  await flush()
  t.equal(bMore.state, 'resolved', 'memory freed: b resumes within the budget')
  t.equal(b.overshooting, false)
  t.equal(d.state, 'resolved', 'then the waiting request enters')
})

t.test('charges are returned when a request is aborted mid-pause', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ)
  await b.charge(0, READ)
  const controller = new AbortController()
  const paused = track(b.charge(2 * MiB, { timeoutMs: 50_000, signal: controller.signal }))
  const reason = new Error('aborted by the client')
  controller.abort(reason)
  await flush()
  t.equal(paused.error, reason)
  t.equal(gate.snapshot().pausedNow, 0)
  b.release()
  t.equal(gate.chargedBytes, 10 * MiB, 'only a\'s charges remain')
  const already = track(a.charge(MiB, { timeoutMs: 1, signal: controller.signal }))
  await flush()
  t.equal(already.state, 'resolved', 'the holder is never paused, even with an aborted signal')
  a.release()
  t.equal(gate.chargedBytes, 0)
})

t.test('charges are returned when a request ends with an error while paused', async (t) => {
  const { gate, timers } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ)
  const paused = track(b.charge(2 * MiB, READ))
  const failure = new ServiceError('UPSTREAM_UNAVAILABLE')
  b.release(failure)
  await flush()
  t.equal(paused.error, failure, 'the paused charge rejects with the release reason')
  t.match(gate.snapshot(), { pausedNow: 0, inFlight: 1, chargedBytes: 10 * MiB })
  t.equal(timers.pendingCount, 0, 'the pause timer was cleared')
  a.release()
  t.match(gate.snapshot(), { chargedBytes: 0, inFlight: 0 })
})

t.test('releasing the holder passes the right to the oldest paused request', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ)
  const huge = track(b.charge(20 * MiB, READ))
  a.release()
  await flush()
  t.equal(huge.state, 'resolved', 'a charge bigger than the whole budget still proceeds')
  t.equal(b.overshooting, true)
})

t.test('a larger budget resumes paused charges; a smaller one pauses new ones', async (t) => {
  const { gate } = makeGate()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(9 * MiB, READ)
  const paused = track(b.charge(2 * MiB, READ))
  await flush()
  gate.setBudget(20 * MiB)
  await flush()
  t.equal(paused.state, 'resolved')
  gate.setBudget(5 * MiB)
  t.equal(b.tryCharge(MiB), false)
  gate.setBrakeLevel(2)
  t.match(gate.snapshot(), { budgetBytes: 5 * MiB, brakeLevel: 2 })
})

t.test('growth lanes: while memory is scarce, freed memory goes to the lane holders, not one chunk to every paused read', async (t) => {
  // Budget 20 MiB, 6 requests (6 MiB of entry steps), two lanes. Each reads in 1 MiB chunks.
  const { gate } = makeGate({ budgetBytes: 20 * MiB, maxInFlight: 6, waitingRoom: 0, growthLanes: 2 })
  const reqs = await Promise.all(Array.from({ length: 6 }, () => gate.enter()))
  // The first wave: every request reads until the budget is full (14 MiB of chunks).
  let chunks = 0
  while (chunks < 14) for (const r of reqs) if (chunks < 14 && r.tryCharge(MiB)) chunks++
  t.equal(gate.chargedBytes, 20 * MiB)
  t.equal(reqs[0]!.tryCharge(MiB), true, 'the first request that does not fit takes the overshoot right')
  const paused = reqs.slice(1).map((r) => track(r.charge(MiB, READ)))
  await flush()
  t.same(paused.map((p) => p.state), ['pending', 'pending', 'pending', 'pending', 'pending'])
  // The holder ends (5 MiB back). Without lanes all five chunks would resume; now two take the lanes, the
  // next oldest takes the free overshoot right, and the rest stay paused though their chunk would fit.
  reqs[0]!.release()
  await flush()
  t.same(paused.map((p) => p.state), ['resolved', 'resolved', 'resolved', 'pending', 'pending'])
  t.equal(reqs[1]!.tryCharge(MiB), true, 'a lane holder charges while others are paused, when it fits')
  t.equal(reqs[4]!.tryCharge(MiB), false, 'a request without a lane does not')
  // Memory no longer scarce (at most half the budget charged): the rest resume, without a lane.
  reqs[1]!.release()
  reqs[2]!.release()
  await flush()
  t.same(paused.map((p) => p.state), ['resolved', 'resolved', 'resolved', 'resolved', 'resolved'])
  for (const r of reqs) r.release()
  t.equal(gate.chargedBytes, 0)
})

t.test('growth lanes: a lane frees when its holder ends and goes to the oldest paused request that fits', async (t) => {
  const { gate } = makeGate({ budgetBytes: 10 * MiB, maxInFlight: 5, waitingRoom: 0, growthLanes: 1 })
  const [a, b, c, d, e] = await Promise.all(Array.from({ length: 5 }, () => gate.enter())) as [Admission, Admission, Admission, Admission, Admission]
  await a.charge(2 * MiB, READ)
  await b.charge(2 * MiB, READ)
  t.equal(c.tryCharge(2 * MiB), true, 'c takes the overshoot right')
  const waits = [b, d, e].map((x) => track(x.charge(MiB, READ)))
  c.release()
  await flush()
  t.same(waits.map((w) => w.state), ['resolved', 'resolved', 'pending'], 'b takes the one lane, d the free overshoot right; e waits')
  b.release()
  await flush()
  t.equal(waits[2]!.state, 'resolved', 'the lane went to e when b ended')
  for (const x of [a, d, e]) x.release()
  t.equal(gate.chargedBytes, 0)
})

t.test('a gate from the plan has one growth lane fewer than cores: with the overshoot holder, two documents grow on two cores', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const gate = AdmissionGate.fromPlan(plan, new ManualTimers())
  const X = 5 * MiB
  const admissions = await Promise.all(Array.from({ length: 6 }, () => gate.enter()))
  const [a, b, c, d, e, f] = admissions as [Admission, Admission, Admission, Admission, Admission, Admission]
  t.ok(a.tryCharge(Math.floor(gate.budgetBytes / 2)))
  t.ok(b.tryCharge(gate.budgetBytes - gate.chargedBytes))
  t.ok(c.tryCharge(X), 'c takes the overshoot right')
  const waits = [d, e, f].map((x) => track(x.charge(X, READ)))
  b.release()
  await flush()
  t.ok(gate.chargedBytes + X <= gate.budgetBytes && gate.chargedBytes * 2 > gate.budgetBytes, 'f would fit, and memory is scarce')
  t.same(waits.map((w) => w.state), ['resolved', 'pending', 'pending'], 'one lane on two cores, beside c holding the overshoot right')
  for (const x of admissions) x.release()
  t.equal(gate.chargedBytes, 0)
})

t.test('snapshot names every SPEC.md 6.3 figure', async (t) => {
  const { gate } = makeGate()
  t.same(Object.keys(gate.snapshot()).sort(), [
    'brakeLevel', 'budgetBytes', 'chargedBytes', 'inFlight', 'overdraws', 'pausedNow', 'pauses', 'queued', 'shed', 'waiting',
  ])
})

t.test('a gate from the plan', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const timers = new ManualTimers()
  const gate = AdmissionGate.fromPlan(plan, timers)
  t.match(gate.snapshot(), { budgetBytes: plan.startingBudgetBytes.value, brakeLevel: 0 })
  const admissions = await Promise.all(Array.from({ length: 32 }, () => gate.enter()))
  const extra = track(gate.enter())
  await flush()
  t.equal(extra.state, 'pending', 'slots are the serve admission')
  timers.advance(1000)
  await flush()
  t.ok(isServiceError(extra.error, 'GATE_SHED'))
  for (const a of admissions) a.release()
})

t.test('options are guarded', async (t) => {
  for (const bad of [{ maxInFlight: 0 }, { budgetBytes: -1 }, { entryStepBytes: 0 }, { entryWaitMs: 1.5 }, { growthLanes: 0 }]) {
    let caught: unknown
    try { makeGate(bad) } catch (error) { caught = error }
    t.ok(isServiceError(caught, 'CONFIG_INVALID'), JSON.stringify(bad))
  }
})
