import t from 'tap'
import { computePlan, GiB, MiB } from '../../engine/memory/plan.js'
import { POOL_IDLE_TIMEOUT_MS, POOL_MIN_THREADS, v8Limits } from '../../engine/memory/v8-limits.js'

t.test('2 CPU / 1 GiB', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const limits = v8Limits(plan)
  t.equal(limits.poolThreads, 2)
  t.equal(limits.workerResourceLimits.maxYoungGenerationSizeMb, 64, 'the allocation area')
  // Old spaces share the heap ceiling less the nursery: 832 - 128 = 704 MiB.
  // Workers: (704 - 64 cache) / 3 = 213; main: 704 - 2 * 213 = 278.
  t.equal(limits.workerResourceLimits.maxOldGenerationSizeMb, 213)
  t.equal(limits.mainMaxOldSpaceMb, 278)
  t.equal(limits.mainMaxOldSpaceMb! + 2 * limits.workerResourceLimits.maxOldGenerationSizeMb! + 2 * 64, 832, 'sums to the heap ceiling')
  t.equal(limits.mainMaxSemiSpaceMb, 21, 'one area of young generation is three semi-spaces')
  t.same(limits.mainExecArgv, ['--max-old-space-size=278', '--max-semi-space-size=21'])
})

t.test('every table row sums to its heap ceiling', async (t) => {
  for (const [cpu, mem] of [[2, 1], [4, 1], [4, 2], [8, 4]] as const) {
    const plan = computePlan({ cgroup: { cpuCores: cpu, memoryLimitBytes: mem * GiB } })
    const l = v8Limits(plan)
    const total = l.mainMaxOldSpaceMb! + cpu * (l.workerResourceLimits.maxOldGenerationSizeMb! + l.workerResourceLimits.maxYoungGenerationSizeMb)
    t.equal(total * MiB, plan.heapCeilingBytes.value, `${cpu}/${mem}`)
  }
})

t.test('unbounded heap: no old-space limit, young generation still set', async (t) => {
  const limits = v8Limits(computePlan({}))
  t.equal(limits.mainMaxOldSpaceMb, undefined)
  t.same(limits.workerResourceLimits, { maxYoungGenerationSizeMb: 64 })
  t.same(limits.mainExecArgv, ['--max-semi-space-size=21'])
  t.equal(limits.poolThreads, 8)
})

t.test('the pool: one thread kept when idle, the others retire', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const limits = v8Limits(plan)
  t.equal(limits.poolMinThreads, POOL_MIN_THREADS)
  t.equal(limits.poolMinThreads, 1)
  t.equal(limits.poolIdleTimeoutMs, POOL_IDLE_TIMEOUT_MS)
  t.ok(limits.poolIdleTimeoutMs >= 5_000, 'long against a task, so a steady load does not start and stop threads')

  const one = v8Limits(computePlan({ pins: { cores: 1, serveMaxInFlight: 5 }, cgroup: { memoryLimitBytes: GiB } }))
  t.equal(one.poolMinThreads, 1, 'never more kept than the pool has')
})
