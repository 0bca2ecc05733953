import t from 'tap'
import { computePlan, GiB, MiB } from '../../engine/memory/plan.js'
import { isServiceError } from '../../engine/errors.js'

// SPEC.md 8.2's table, exactly.
const table = [
  { cpu: 2, mem: 1 * GiB, area: 64, nursery: 128, heap: 832, live: 176 },
  { cpu: 4, mem: 1 * GiB, area: 32, nursery: 128, heap: 864, live: 184 },
  { cpu: 4, mem: 2 * GiB, area: 64, nursery: 256, heap: 1728, live: 368 },
  { cpu: 8, mem: 4 * GiB, area: 64, nursery: 512, heap: 3520, live: 752 },
]

for (const row of table) {
  t.test(`${row.cpu} CPU / ${row.mem / GiB} GiB`, async (t) => {
    const plan = computePlan({ cgroup: { cpuCores: row.cpu, memoryLimitBytes: row.mem } })
    t.same(plan.cores, { value: row.cpu, origin: 'cgroup' })
    t.equal(plan.coresFixed, true)
    t.same(plan.memoryLimitBytes, { value: row.mem, origin: 'cgroup' })
    t.equal(plan.allocationAreaBytes.value, row.area * MiB)
    t.equal(plan.nurseryBytes.value, row.nursery * MiB)
    t.same(plan.heapCeilingBytes, { value: row.heap * MiB, origin: 'derived' })
    t.same(plan.liveTargetBytes, { value: row.live * MiB, origin: 'derived' })
  })
}

t.test('the same table with the cores pinned instead of read from the cgroup', async (t) => {
  for (const row of table) {
    const plan = computePlan({ pins: { cores: row.cpu }, cgroup: { memoryLimitBytes: row.mem } })
    t.same(plan.cores, { value: row.cpu, origin: 'pin' })
    t.equal(plan.liveTargetBytes.value, row.live * MiB)
  }
})

t.test('budgets of the 2 CPU / 1 GiB pod', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  // 30% of 176 MiB is 52.8 MiB: the 64 MiB minimum applies.
  t.same(plan.cacheBudgetBytes, { value: 64 * MiB, origin: 'derived' })
  t.same(plan.deductions.queueTenantsBytes, { value: 0, origin: 'default' }, 'no mirror target: no queue, no job')
  t.equal(plan.deductions.mirrorWorkBytes.value, 0)
  t.equal(plan.deductions.publishBodiesBytes.value, 0)
  t.equal(plan.deductions.idleProcessBytes.value, 32 * MiB)
  // 176 - 64 - 32
  t.same(plan.startingBudgetBytes, { value: 80 * MiB, origin: 'derived' })
  t.equal(plan.budgetFloorBytes.value, 22 * MiB)
  t.equal(plan.liveCeilingBytes.value, 144 * MiB)
  // Half the live target: admits a packument above 40 MB.
  t.same(plan.maxResponseBytes, { value: 88 * MiB, origin: 'derived' })
  t.ok(plan.maxResponseBytes.value > 40_000_000)
  t.same(plan.serveMaxInFlight, { value: 32, origin: 'derived' })
  t.equal(plan.waitingRoom.value, 64)
  t.equal(plan.entryStepBytes, MiB)
  t.equal(plan.entryWaitMs, 1000)
})

t.test('cache budget is 30% of the live target when that is above 64 MiB', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 8, memoryLimitBytes: 4 * GiB } })
  t.equal(plan.cacheBudgetBytes.value, Math.floor(752 * MiB * 0.3))
  t.equal(plan.startingBudgetBytes.value, 752 * MiB - Math.floor(752 * MiB * 0.3) - 56 * MiB)
  t.equal(plan.maxResponseBytes.value, 256 * MiB, 'capped at 256 MiB')
})

t.test('unlimited: no memory limit and no CPU limit', async (t) => {
  const plan = computePlan({ hostCpuCount: 2 })
  t.same(plan.memoryLimitBytes, { value: null, origin: 'default' })
  t.same(plan.cores, { value: 8, origin: 'default' }, 'the ceiling, never the host count')
  t.equal(plan.coresFixed, false)
  t.equal(plan.hostCpuCount, 2)
  t.same(plan.heapCeilingBytes, { value: null, origin: 'default' })
  t.same(plan.liveTargetBytes, { value: null, origin: 'default' })
  t.same(plan.allocationAreaBytes, { value: 64 * MiB, origin: 'default' })
  t.same(plan.startingBudgetBytes, { value: GiB, origin: 'default' }, 'SPEC.md 8.1: 1 GiB without a heap ceiling')
  t.same(plan.cacheBudgetBytes, { value: 64 * MiB, origin: 'default' })
  t.same(plan.maxResponseBytes, { value: 128 * MiB, origin: 'default' })
})

t.test('a cores ceiling pin caps the default', async (t) => {
  const plan = computePlan({ pins: { coresCeiling: 3 } })
  t.same(plan.cores, { value: 3, origin: 'default' })
  t.same(plan.coresCeiling, { value: 3, origin: 'pin' })
})

t.test('no CPU limit: cores come from the memory limit, capped by the ceiling', async (t) => {
  t.same(computePlan({ cgroup: { memoryLimitBytes: GiB } }).cores, { value: 2, origin: 'derived' })
  t.same(computePlan({ cgroup: { memoryLimitBytes: 4 * GiB } }).cores, { value: 8, origin: 'derived' })
  t.same(computePlan({ cgroup: { memoryLimitBytes: 16 * GiB } }).cores, { value: 8, origin: 'derived' })
  t.same(computePlan({ cgroup: { memoryLimitBytes: 256 * MiB } }).cores, { value: 1, origin: 'derived' })
  const derived = computePlan({ cgroup: { memoryLimitBytes: GiB } })
  t.equal(derived.coresFixed, false, 'boot warns')
  t.equal(derived.liveTargetBytes.value, 176 * MiB, 'a 1 GiB pod derives the 2-core row')
  t.same(computePlan({ pins: { coresCeiling: 4 }, cgroup: { memoryLimitBytes: 16 * GiB } }).cores, { value: 4, origin: 'derived' })
})

t.test('a fractional CPU limit is floored by the reader; the plan floors too', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2.5, memoryLimitBytes: GiB } })
  t.same(plan.cores, { value: 2, origin: 'cgroup' })
  t.equal(plan.liveTargetBytes.value, 176 * MiB)
  t.same(computePlan({ cgroup: { cpuCores: 0.5 } }).cores, { value: 1, origin: 'cgroup' }, 'never 0')
})

t.test('pins win and are never clamped', async (t) => {
  const plan = computePlan({
    pins: { cores: 64, serveMaxInFlight: 5000, maxResponseBytes: 12 * MiB, cacheMaxBytes: 3 * GiB },
    cgroup: { cpuCores: 2, memoryLimitBytes: GiB },
  })
  t.same(plan.cores, { value: 64, origin: 'pin' }, 'above the ceiling and the CPU limit')
  t.same(plan.serveMaxInFlight, { value: 5000, origin: 'pin' })
  t.equal(plan.waitingRoom.value, 10000)
  t.same(plan.maxResponseBytes, { value: 12 * MiB, origin: 'pin' }, 'an old 12 MiB pin still refuses larger metadata')
  t.same(plan.cacheBudgetBytes, { value: 3 * GiB, origin: 'pin' }, 'larger than the live target, kept')
  t.equal(plan.startingBudgetBytes.value, plan.budgetFloorBytes.value, 'the budget falls to its floor')
  const big = computePlan({ pins: { maxResponseBytes: 2 * GiB }, cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.same(big.maxResponseBytes, { value: 2 * GiB, origin: 'pin' }, 'larger pins win')
  const auto = computePlan({ pins: { maxResponseBytes: 0, cacheMaxBytes: 0 }, cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.equal(auto.maxResponseBytes.origin, 'derived', '0 means automatic')
  t.equal(auto.cacheBudgetBytes.origin, 'derived')
})

t.test('a heap pin is the heap ceiling; a tighter one takes the limit\'s place for the area', async (t) => {
  const tighter = computePlan({ pins: { maxHeapBytes: 512 * MiB }, cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.same(tighter.heapCeilingBytes, { value: 512 * MiB, origin: 'pin' })
  t.equal(tighter.allocationAreaBytes.value, 32 * MiB, '512 MiB / 8 / 2')
  t.equal(tighter.liveTargetBytes.value, (512 - 64) / 4 * MiB)

  const larger = computePlan({ pins: { maxHeapBytes: 2 * GiB }, cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.same(larger.heapCeilingBytes, { value: 2 * GiB, origin: 'pin' }, 'never clamped to the limit')
  t.equal(larger.allocationAreaBytes.value, 64 * MiB, 'area still from the limit')

  const limitless = computePlan({ pins: { maxHeapBytes: GiB, cores: 4 } })
  t.same(limitless.heapCeilingBytes, { value: GiB, origin: 'pin' })
  t.equal(limitless.allocationAreaBytes.value, 32 * MiB, 'a limit-less heap pin takes the limit\'s place')
  t.equal(limitless.liveTargetBytes.value, (1024 - 128) / 4 * MiB)
  t.equal(limitless.startingBudgetBytes.origin, 'derived', 'a heap ceiling exists, so no 1 GiB default')
})

t.test('the area is clamped to 4..64 MiB in whole MiB', async (t) => {
  t.equal(computePlan({ cgroup: { cpuCores: 64, memoryLimitBytes: GiB } }).allocationAreaBytes.value, 4 * MiB)
  t.equal(computePlan({ cgroup: { cpuCores: 3, memoryLimitBytes: GiB } }).allocationAreaBytes.value, 42 * MiB, '128/3 = 42.67 floors')
})

t.test('invalid pins are refused, not clamped', async (t) => {
  for (const pins of [{ cores: 0 }, { cores: 1.5 }, { maxHeapBytes: -1 }, { serveMaxInFlight: 0 }, { coresCeiling: 0 }]) {
    let caught: unknown
    try { computePlan({ pins }) } catch (error) { caught = error }
    t.ok(isServiceError(caught, 'CONFIG_INVALID'), JSON.stringify(pins))
  }
})

t.test('large artifact read buffers: a quarter of the room outside the heap in 512 KiB, at most 64', async (t) => {
  const at = (memoryLimitBytes?: number) => computePlan(memoryLimitBytes === undefined ? {} : { cgroup: { cpuCores: 2, memoryLimitBytes } }).artifactReadBuffers
  t.same(at(), { value: 64, origin: 'default' }, 'no memory limit: 64 (32 MiB)')
  t.same(at(256 * MiB), { value: 16, origin: 'derived' }, '256 MiB: 32 MiB outside the heap (the minimum), 8 MiB of buffers')
  t.same(at(512 * MiB), { value: 32, origin: 'derived' }, '512 MiB: 64 MiB outside, 16 MiB of buffers')
  t.same(at(GiB), { value: 64, origin: 'derived' }, '1 GiB: 128 MiB outside, 32 MiB of buffers')
  t.same(at(8 * GiB), { value: 64, origin: 'derived' }, 'never above 64')
  t.same(at(64 * MiB), { value: 16, origin: 'derived' }, 'a tiny limit still leaves the 32 MiB minimum outside')
  const pinnedHeap = computePlan({ pins: { maxHeapBytes: 512 * MiB } }).artifactReadBuffers
  t.same(pinnedHeap, { value: 64, origin: 'default' }, 'a heap pin without a limit says nothing about the room outside')
})

t.test('the plan is frozen', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.ok(Object.isFrozen(plan))
  t.ok(Object.isFrozen(plan.cores))
})

t.test('each pod of SPEC.md 8.2: the largest document its plan ingests', async (t) => {
  const ceilings = [
    { cpu: 2, mem: 1 * GiB, mib: 88 },
    { cpu: 4, mem: 1 * GiB, mib: 92 },
    { cpu: 4, mem: 2 * GiB, mib: 184 },
    { cpu: 8, mem: 4 * GiB, mib: 256 },
  ]
  for (const row of ceilings) {
    const plan = computePlan({ cgroup: { cpuCores: row.cpu, memoryLimitBytes: row.mem } })
    t.equal(plan.maxResponseBytes.value, row.mib * MiB, `${row.cpu} CPU / ${row.mem / GiB} GiB: ${row.mib} MiB (docs/memory.md's table)`)
  }
  const twoGiB = computePlan({ cgroup: { cpuCores: 4, memoryLimitBytes: 2 * GiB } })
  t.ok(twoGiB.maxResponseBytes.value >= 100 * 1000 * 1000, 'the 2 GiB pod admits a 100 MB document (npm\'s largest, test/memory/largest-document.large.ts serves one)')
})
