import t from 'tap'
import { BudgetSampler, nextBrakeLevel, readV8Heap, SAMPLE_INTERVAL_MS, type HeapReading } from '../../engine/memory/sampler.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { ManualTimers } from '../doubles/manual-timers.js'
import { computePlan, GiB, MiB } from '../../engine/memory/plan.js'

function rig(options: { limited?: boolean } = {}) {
  const plan = options.limited === false ? computePlan({}) : computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const timers = new ManualTimers()
  const gate = AdmissionGate.fromPlan(plan, timers)
  const heap = { usedBytes: 10 * MiB, limitBytes: 100 * MiB }
  let inUse: number | undefined = 100 * MiB
  const sampler = new BudgetSampler({
    gate, plan, timers,
    readHeap: (): HeapReading => ({ ...heap }),
    readMemoryInUse: () => inUse,
  })
  return { plan, timers, gate, heap, sampler, setInUse: (bytes: number | undefined) => { inUse = bytes } }
}

t.test('brake levels rise at 0.70 and 0.85 and fall 5 points lower', async (t) => {
  t.equal(nextBrakeLevel(0, 0.5), 0)
  t.equal(nextBrakeLevel(0, 0.69), 0)
  t.equal(nextBrakeLevel(0, 0.70), 1)
  t.equal(nextBrakeLevel(0, 0.85), 2)
  t.equal(nextBrakeLevel(1, 0.86), 2)
  t.equal(nextBrakeLevel(2, 0.82), 2, 'holds braking until below 0.80')
  t.equal(nextBrakeLevel(2, 0.79), 1)
  t.equal(nextBrakeLevel(1, 0.67), 1, 'holds holding until below 0.65')
  t.equal(nextBrakeLevel(1, 0.64), 0)
  t.equal(nextBrakeLevel(2, 0.1), 0)
})

t.test('calm grows the budget to the live ceiling', async (t) => {
  const { sampler, gate, plan } = rig()
  const first = sampler.sample()
  t.equal(first.brakeLevel, 0)
  t.ok(first.budgetBytes > plan.startingBudgetBytes.value)
  for (let i = 0; i < 40; i++) sampler.sample()
  t.equal(gate.budgetBytes, plan.liveCeilingBytes.value)
})

t.test('holding keeps the budget; braking cuts it to the floor; calm brings it back', async (t) => {
  const { sampler, gate, heap, plan } = rig()
  heap.usedBytes = 75 * MiB
  const held = sampler.sample()
  t.equal(held.brakeLevel, 1)
  t.equal(held.budgetBytes, plan.startingBudgetBytes.value)
  heap.usedBytes = 90 * MiB
  const braking = sampler.sample()
  t.equal(braking.brakeLevel, 2)
  t.equal(braking.budgetBytes, Math.floor(plan.startingBudgetBytes.value * 0.75))
  t.equal(gate.brakeLevel, 2)
  t.equal(gate.snapshot().brakeLevel, 2)
  for (let i = 0; i < 20; i++) sampler.sample()
  t.equal(gate.budgetBytes, plan.budgetFloorBytes.value, 'never below the floor')
  heap.usedBytes = 82 * MiB
  t.equal(sampler.sample().brakeLevel, 2, 'hysteresis')
  heap.usedBytes = 50 * MiB
  const calm = sampler.sample()
  t.equal(calm.brakeLevel, 0)
  t.ok(calm.budgetBytes > plan.budgetFloorBytes.value)
})

t.test('the cgroup working set against the memory limit also brakes', async (t) => {
  const { sampler, setInUse } = rig()
  setInUse(0.9 * GiB)
  const s = sampler.sample()
  t.equal(s.brakeLevel, 2)
  t.ok(s.pressure >= 0.9 - 1e-9)
  setInUse(undefined)
  t.equal(sampler.sample().brakeLevel, 0, 'an unreadable cgroup counts for nothing')
})

t.test('without a memory limit only the heap counts', async (t) => {
  const { sampler, setInUse, gate } = rig({ limited: false })
  setInUse(100 * GiB)
  const s = sampler.sample()
  t.equal(s.brakeLevel, 0)
  t.equal(gate.budgetBytes, GiB, '1 GiB start is also the ceiling')
})

t.test('a budget cut pauses started requests; growth resumes them', async (t) => {
  const { sampler, gate, heap } = rig()
  const a = await gate.enter()
  const b = await gate.enter()
  await a.charge(60 * MiB, { timeoutMs: 50_000 }) // 62 of 64 MiB
  heap.usedBytes = 95 * MiB
  sampler.sample() // 48 MiB
  await a.charge(MiB, { timeoutMs: 50_000 }) // a takes the overshoot right
  let resumed = false
  const paused = b.charge(MiB, { timeoutMs: 50_000 }).then(() => { resumed = true })
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(resumed, false)
  t.equal(gate.snapshot().pausedNow, 1)
  heap.usedBytes = 10 * MiB
  for (let i = 0; i < 3; i++) sampler.sample()
  await paused
  t.equal(resumed, true)
  a.release()
  b.release()
})

t.test('start samples ten times a second on the injected timer; stop ends it', async (t) => {
  const { sampler, timers, heap, gate } = rig()
  t.equal(SAMPLE_INTERVAL_MS, 100)
  sampler.start()
  sampler.start()
  t.equal(timers.pendingCount, 1, 'one timer however often started')
  heap.usedBytes = 99 * MiB
  timers.advance(99)
  t.equal(gate.brakeLevel, 0)
  timers.advance(1)
  t.equal(gate.brakeLevel, 2)
  t.equal(sampler.brakeLevel, 2)
  sampler.stop()
  t.equal(timers.pendingCount, 0)
})

t.test('the default heap reader reads this thread\'s V8 heap', async (t) => {
  const reading = readV8Heap()
  t.ok(reading.usedBytes > 0)
  t.ok(reading.limitBytes > reading.usedBytes)
})

t.test('the pool threads\' heaps count, each against its own limit', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const gate = AdmissionGate.fromPlan(plan, new ManualTimers())
  let threads: HeapReading[] = [{ usedBytes: 10 * MiB, limitBytes: 200 * MiB }, { usedBytes: 10 * MiB, limitBytes: 200 * MiB }]
  const sampler = new BudgetSampler({
    gate, plan,
    readHeap: () => ({ usedBytes: 10 * MiB, limitBytes: 300 * MiB }),
    readThreadHeaps: () => threads,
  })
  const calm = sampler.sample()
  t.equal(calm.brakeLevel, 0)
  t.same(calm.heaps, { usedBytes: 30 * MiB, limitBytes: 700 * MiB, heaps: 3, fullest: 10 / 200 })
  // One thread near its limit: the sum (210 of 700 MiB) reads calm, the thread does not.
  threads = [{ usedBytes: 180 * MiB, limitBytes: 200 * MiB }, { usedBytes: 10 * MiB, limitBytes: 200 * MiB }]
  const braking = sampler.sample()
  t.equal(braking.brakeLevel, 2)
  t.equal(braking.pressure, 0.9)
  t.equal(sampler.heaps.usedBytes, 200 * MiB)
  threads = []
  t.equal(sampler.sample().heaps.heaps, 1, 'no pool reporting: the main heap alone')
})
