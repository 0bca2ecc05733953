/**
 * The memory plan's other tenants (SPEC.md 8.2, last paragraph; issue 12):
 * the enqueue buffer, the in-memory queue, publish bodies and mirror-artifact
 * work, each with its origin; small automatic plans shed mirror-artifact
 * capacity before cache retention; `service check-config --json` and the
 * boot line report them.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { loadConfig } from '../../engine/config/load.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EMBEDDED_QUEUE_BOUNDS } from '../../engine/queue/embedded-queue-bounds.js'
import { computePlan, ENQUEUE_BUFFER_BYTES, ENQUEUE_MEMORY_BYTES_PER_ENTRY, ENQUEUE_MEMORY_ENTRIES, GiB, MiB, type MemoryPlan } from '../../engine/memory/plan.js'
import { describePlan, logPlan, MEMORY_PLAN_TRANSIENT_BUDGET, type PlanDescription } from '../../engine/memory/plan-report.js'
import { runCheckConfig } from '../../server/roles/check-config.js'

const mirrored = (cpu: number, mem: number, extra: Partial<Parameters<typeof computePlan>[0] & object> = {}): MemoryPlan =>
  computePlan({ cgroup: { cpuCores: cpu, memoryLimitBytes: mem }, work: { mirrorTarget: true }, ...extra })

t.test('SPEC.md 8.2\'s table is the same with a mirror target', async (t) => {
  for (const row of [[2, 1, 832, 176], [4, 1, 864, 184], [4, 2, 1728, 368], [8, 4, 3520, 752]] as const) {
    const plan = mirrored(row[0], row[1] * GiB)
    t.equal(plan.heapCeilingBytes.value, row[2] * MiB)
    t.equal(plan.liveTargetBytes.value, row[3] * MiB)
  }
})

t.test('2 CPU / 1 GiB with a mirror target: every tenant with its origin, mirror work shed to one job', async (t) => {
  const plan = mirrored(2, GiB)
  // The embedded queue's bound: 16 MiB of bodies and 10,000 jobs of 512 bytes of bookkeeping.
  t.equal(EMBEDDED_QUEUE_BOUNDS.maxBytes, 16 * MiB)
  t.same(plan.deductions.inMemoryQueueBytes, { value: 21 * MiB, origin: 'default' })
  t.same(plan.enqueueBuffer.bytes, { value: 8 * MiB, origin: 'default' })
  t.same(plan.enqueueBuffer.memoryEntries, { value: 16_384, origin: 'default' })
  t.same(plan.enqueueBuffer.memoryBytes, { value: 4 * MiB, origin: 'default' }, '16,384 claims of 256 bytes')
  t.same(plan.deductions.enqueueBufferBytes, { value: 12 * MiB, origin: 'default' }, 'the buffer\'s bound and the recent-enqueue memory')
  t.same(plan.deductions.queueTenantsBytes, { value: 33 * MiB, origin: 'default' })
  t.same(plan.deductions.publishBodiesBytes, { value: 0, origin: 'default' }, 'no publish relay in this build')
  t.same(plan.cacheBudgetBytes, { value: 64 * MiB, origin: 'derived' }, 'cache retention keeps its SPEC.md budget')
  t.equal(plan.mirror.wantedConcurrency, 4, 'two per core')
  // 176 - 64 - 26 - 32 leaves 54 MiB; half of it holds one 16 MiB job.
  t.same(plan.mirror.concurrency, { value: 1, origin: 'derived' })
  t.same(plan.mirror.jobAllowanceBytes, { value: 16 * MiB, origin: 'default' })
  t.same(plan.mirror.workBytes, { value: 16 * MiB, origin: 'derived' })
  t.same(plan.deductions.mirrorWorkBytes, plan.mirror.workBytes)
  t.same(plan.startingBudgetBytes, { value: 31 * MiB, origin: 'derived' }, '176 - 64 - 33 - 32 - 16')
  t.equal(plan.budgetFloorBytes.value, 22 * MiB)
  t.equal(plan.liveCeilingBytes.value, 144 * MiB)
})

t.test('a large plan runs every mirror job it wants', async (t) => {
  const plan = mirrored(8, 4 * GiB)
  t.same(plan.mirror.concurrency, { value: 8, origin: 'derived' }, 'two per core, at most 8')
  t.equal(plan.mirror.workBytes.value, 128 * MiB)
  t.equal(describePlan(plan).mirror.shed, false)
  t.equal(plan.startingBudgetBytes.value, 752 * MiB - Math.floor(752 * MiB * 0.3) - 33 * MiB - 56 * MiB - 128 * MiB)
})

t.test('small automatic plans shed mirror capacity before cache retention', async (t) => {
  let previous = 0
  for (let mem = GiB; mem <= 8 * GiB; mem += 512 * MiB) {
    const plain = computePlan({ cgroup: { cpuCores: 4, memoryLimitBytes: mem } })
    const plan = mirrored(4, mem)
    t.equal(plan.cacheBudgetBytes.value, plain.cacheBudgetBytes.value, `${mem / MiB} MiB: the cache budget is untouched by mirror work`)
    t.ok(plan.mirror.concurrency.value >= previous, `${mem / MiB} MiB: mirror capacity grows with memory`)
    t.ok(plan.mirror.concurrency.value >= 1, 'never below one job')
    t.ok(plan.startingBudgetBytes.value >= plan.budgetFloorBytes.value)
    previous = plan.mirror.concurrency.value
  }
  t.equal(describePlan(mirrored(4, GiB)).mirror.shed, true, '1 GiB sheds')
  t.equal(previous, 8, '8 GiB runs all it wants')
})

t.test('a mirror concurrency pin wins and is never shed; 0 means automatic', async (t) => {
  const pinned = mirrored(2, GiB, { pins: { mirrorConcurrency: 6 } })
  t.same(pinned.mirror.concurrency, { value: 6, origin: 'pin' })
  t.same(pinned.mirror.workBytes, { value: 96 * MiB, origin: 'pin' })
  t.equal(pinned.startingBudgetBytes.value, pinned.budgetFloorBytes.value, 'the transient budget falls to its floor')
  t.equal(describePlan(pinned).mirror.shed, false)
  t.equal(mirrored(2, GiB, { pins: { mirrorConcurrency: 0 } }).mirror.concurrency.origin, 'derived')
})

t.test('the SQS queue keeps no jobs in memory; the enqueue buffer stays', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB }, work: { mirrorTarget: true, queueKind: 'sqs' } })
  t.equal(plan.deductions.inMemoryQueueBytes.value, 0)
  t.equal(plan.deductions.queueTenantsBytes.value, 12 * MiB)
})

t.test('queue.enqueueBufferBytes pins the buffer; no recent-enqueue memory, no charge for it', async (t) => {
  const pinned = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB }, work: { mirrorTarget: true, enqueueBufferBytes: 2 * MiB, enqueueMemory: false } })
  t.same(pinned.enqueueBuffer.bytes, { value: 2 * MiB, origin: 'pin' })
  t.same([pinned.enqueueBuffer.memoryEntries.value, pinned.enqueueBuffer.memoryBytes.value], [0, 0])
  t.same(pinned.deductions.enqueueBufferBytes, { value: 2 * MiB, origin: 'pin' })
  t.equal(ENQUEUE_MEMORY_ENTRIES * ENQUEUE_MEMORY_BYTES_PER_ENTRY, 4 * MiB)
  const loaded = loadConfig({ env: { SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/' }, npmRegistry: () => undefined })
  if (!loaded.ok) throw new Error('the configuration did not load')
  t.equal(loaded.config.queue.enqueueBufferBytes, ENQUEUE_BUFFER_BYTES, 'the schema\'s default is the plan\'s')
  t.equal(loaded.config.queue.enqueueMemorySeconds, 300)
})

t.test('without a mirror target nothing is held for the queue or the mirror', async (t) => {
  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  t.same(plan.mirror, { concurrency: { value: 0, origin: 'default' }, jobAllowanceBytes: { value: 0, origin: 'default' }, workBytes: { value: 0, origin: 'default' }, wantedConcurrency: 0 })
  t.same([plan.enqueueBuffer.bytes.value, plan.enqueueBuffer.memoryBytes.value, plan.deductions.enqueueBufferBytes.value], [0, 0, 0])
  t.equal(plan.deductions.inMemoryQueueBytes.value, 0)
})

t.test('unbounded heap with a mirror target: the wanted concurrency', async (t) => {
  const plan = computePlan({ work: { mirrorTarget: true } })
  t.same(plan.mirror.concurrency, { value: 8, origin: 'default' })
  t.equal(plan.startingBudgetBytes.value, GiB, 'SPEC.md 8.1: 1 GiB without a heap ceiling')
})

t.test('the boot line names the tenants and the mirror plan', async (t) => {
  const logger = new RecordingLogger()
  logPlan(mirrored(2, GiB), logger)
  t.match(logger.find(MEMORY_PLAN_TRANSIENT_BUDGET)[0]?.data, {
    startingBudgetBytes: { value: 31 * MiB },
    deductions: {
      inMemoryQueueBytes: { value: 21 * MiB, origin: 'default' },
      enqueueBufferBytes: { value: 12 * MiB, origin: 'default' },
      publishBodiesBytes: { value: 0, origin: 'default' },
      mirrorWorkBytes: { value: 16 * MiB, origin: 'derived' },
    },
    mirror: { concurrency: { value: 1, origin: 'derived' }, wantedConcurrency: 4, shed: true, jobAllowanceBytes: { value: 16 * MiB } },
    enqueueBuffer: { bytes: { value: 8 * MiB }, memoryEntries: { value: 16_384 }, memoryBytes: { value: 4 * MiB } },
  })
})

t.test('service check-config --json predicts the mirror plan from the configuration', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cgroup-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  for (const [file, text] of Object.entries({ 'cgroup.controllers': 'cpu memory\n', 'memory.max': `${GiB}\n`, 'cpu.max': '200000 100000\n' })) await writeFile(join(dir, file), text)
  const run = async (env: Record<string, string>): Promise<PlanDescription> => {
    const loaded = loadConfig({
      env: { SERVICE_RUNTIME__CGROUP_PATH: dir, SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/', ...env },
      npmRegistry: () => undefined,
    })
    const out = new PassThrough()
    let text = ''
    out.on('data', (c) => { text += String(c) })
    const err = new PassThrough()
    let problems = ''
    err.on('data', (c) => { problems += String(c) })
    t.equal(await runCheckConfig(loaded, { json: true, out, err }), 0, problems)
    return (JSON.parse(text) as { plan: PlanDescription }).plan
  }
  const plain = await run({})
  t.equal(plain.mirror.concurrency.value, 0)
  t.equal(plain.transientBudget.startingBudgetBytes.value, 80 * MiB)
  const withMirror = await run({ SERVICE_MOUNTS__JS__MIRROR__TARGET: 'https://mirror.invalid/' })
  t.same(withMirror.mirror.concurrency, { value: 1, origin: 'derived' })
  t.same(withMirror.transientBudget.deductions.inMemoryQueueBytes, { value: 21 * MiB, origin: 'default' })
  t.equal(withMirror.transientBudget.startingBudgetBytes.value, 31 * MiB)
  t.equal(withMirror.heapCeilingBytes.value, 832 * MiB, 'the SPEC.md 8.2 row is unchanged')
  const pinned = await run({ SERVICE_MOUNTS__JS__MIRROR__TARGET: 'https://mirror.invalid/', SERVICE_LIMITS__MIRROR_CONCURRENCY: '3' })
  t.same(pinned.mirror.concurrency, { value: 3, origin: 'pin' })
})
