import t from 'tap'
import { computePlan, GiB, MiB } from '../../engine/memory/plan.js'
import {
  CORES_REMEDY, describePlan, logPlan, MEMORY_PLAN_INGEST_CEILING, MEMORY_PLAN_TRANSIENT_BUDGET,
  RUNTIME_CORES_NOT_FIXED, RUNTIME_MAX_HEAP_UNBOUNDED, RUNTIME_SERVE_ADMISSION,
} from '../../engine/memory/plan-report.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

t.test('SPEC.md 6.2 message texts', async (t) => {
  t.equal(MEMORY_PLAN_TRANSIENT_BUDGET, 'memory plan: transient budget')
  t.equal(MEMORY_PLAN_INGEST_CEILING, 'memory plan: metadata ingest ceiling')
  t.equal(RUNTIME_SERVE_ADMISSION, 'runtime: serve admission')
  t.equal(RUNTIME_MAX_HEAP_UNBOUNDED, 'runtime: max heap unbounded')
  t.match(CORES_REMEDY, /SERVICE_RUNTIME__CORES/)
  t.match(CORES_REMEDY, /rounded up/)
})

t.test('a limited pod with a CPU limit: three info lines, no warning', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB }, hostCpuCount: 16 })
  const logger = new RecordingLogger()
  logPlan(plan, logger)
  t.same(logger.records.map((r) => [r.level, r.message]), [
    ['info', MEMORY_PLAN_TRANSIENT_BUDGET],
    ['info', MEMORY_PLAN_INGEST_CEILING],
    ['info', RUNTIME_SERVE_ADMISSION],
  ])
  const budget = logger.find(MEMORY_PLAN_TRANSIENT_BUDGET)[0]?.data
  t.match(budget, {
    startingBudgetBytes: { value: 80 * MiB, origin: 'derived' },
    liveTargetBytes: { value: 176 * MiB, origin: 'derived' },
    deductions: {
      cacheBytes: { value: 64 * MiB, origin: 'derived' },
      queueTenantsBytes: { value: 0, origin: 'default' },
      mirrorWorkBytes: { value: 0, origin: 'default' },
      idleProcessBytes: { value: 32 * MiB, origin: 'derived' },
    },
    floorBytes: { value: 22 * MiB },
    liveCeilingBytes: { value: 144 * MiB },
  })
  t.same(logger.find(MEMORY_PLAN_INGEST_CEILING)[0]?.data, { maxResponseBytes: { value: 88 * MiB, origin: 'derived' } })
  t.match(logger.find(RUNTIME_SERVE_ADMISSION)[0]?.data, {
    maxInFlight: { value: 32, origin: 'derived' }, waitingRoom: { value: 64 }, entryStepBytes: MiB, entryWaitMs: 1000,
  })
})

t.test('unlimited: the unbounded line and the cores warning', async (t) => {
  const plan = computePlan({ hostCpuCount: 2 })
  const logger = new RecordingLogger()
  logPlan(plan, logger)
  t.equal(logger.find(RUNTIME_MAX_HEAP_UNBOUNDED).length, 1)
  const warning = logger.find(RUNTIME_CORES_NOT_FIXED)
  t.equal(warning.length, 1)
  t.equal(warning[0]?.level, 'warn')
  t.equal(warning[0]?.data.remedy, CORES_REMEDY)
  t.match(logger.find(MEMORY_PLAN_TRANSIENT_BUDGET)[0]?.data, { startingBudgetBytes: { value: GiB, origin: 'default' } })
})

t.test('cores from the memory limit warn; a pin does not', async (t) => {
  const derived = new RecordingLogger()
  logPlan(computePlan({ cgroup: { memoryLimitBytes: GiB } }), derived)
  t.equal(derived.find(RUNTIME_CORES_NOT_FIXED).length, 1)
  t.equal(derived.find(RUNTIME_MAX_HEAP_UNBOUNDED).length, 0)
  const pinned = new RecordingLogger()
  logPlan(computePlan({ pins: { cores: 2 }, cgroup: { memoryLimitBytes: GiB } }), pinned)
  t.equal(pinned.find(RUNTIME_CORES_NOT_FIXED).length, 0)
})

t.test('describePlan is JSON-able and carries every origin', async (t) => {
  const description = describePlan(computePlan({ pins: { maxResponseBytes: 12 * MiB }, cgroup: { cpuCores: 4, memoryLimitBytes: 2 * GiB } }))
  const round = JSON.parse(JSON.stringify(description)) as typeof description
  t.same(round, description)
  t.same(round.metadataIngestCeiling.maxResponseBytes, { value: 12 * MiB, origin: 'pin' })
  t.same(round.cores, { value: 4, origin: 'cgroup', fixed: true })
  t.same(round.heapCeilingBytes, { value: 1728 * MiB, origin: 'derived' })
  t.same(round.warnings, [])
  t.equal(round.v8.poolThreads, 4)
  t.same(round.artifactRelay, { largeReadBuffers: { value: 64, origin: 'derived' }, largeReadBufferBytes: 512 * 1024 })
})
