/**
 * The sampler follows the pool's heaps (issue 11): a pool-heavy flood, real
 * Piscina threads whose heaps fill while the main thread's does not, moves
 * the budget; a thread gone from the pool stops counting.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Piscina } from 'piscina'
import t from 'tap'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { computePlan, GiB } from '../../engine/memory/plan.js'
import { BRAKE_AT, BRAKE_CUT, BudgetSampler, HOLD_AT, readV8Heap } from '../../engine/memory/sampler.js'
import { ThreadHeapBoard } from '../../engine/memory/thread-heaps.js'
import { ManualTimers } from '../doubles/manual-timers.js'
import { heapReportWorkerData } from '../../workers/heap-report.js'
import type { HogResult, HogTask } from './fixtures/heap-hog-task.js'

const THREADS = 2

async function until(what: string, ready: () => boolean): Promise<void> {
  // Bounded polling, not a timing assertion: threads start when the machine lets them.
  for (let i = 0; i < 600; i++) {
    if (ready()) return
    await sleep(50)
  }
  throw new Error(`gave up waiting: ${what}`)
}

t.test('a pool-heavy flood moves the budget though the main heap does not', async (t) => {
  const board = new ThreadHeapBoard(THREADS * 2)
  const pool = new Piscina({
    filename: new URL('./fixtures/heap-hog-task.ts', import.meta.url).href,
    minThreads: THREADS,
    maxThreads: THREADS,
    // The 2 CPU / 1 GiB plan's shape, scaled down: a young generation a third of the old one.
    resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 32 },
    workerData: heapReportWorkerData(board),
  })
  pool.on('workerDestroy', (worker: { id: number }) => board.release(worker.id))
  t.teardown(() => pool.destroy())

  const plan = computePlan({ cgroup: { cpuCores: 2, memoryLimitBytes: GiB } })
  const timers = new ManualTimers()
  const gate = AdmissionGate.fromPlan(plan, timers)
  const sampler = new BudgetSampler({ gate, plan, timers, readThreadHeaps: () => board.readings() })

  await until('both pool threads report their heap', () => board.readings().length === THREADS)
  const calm = sampler.sample()
  t.equal(calm.brakeLevel, 0, 'idle threads: calm')
  t.ok(calm.budgetBytes > plan.startingBudgetBytes.value, 'calm grows the budget')
  const before = calm.budgetBytes

  // The flood: every pool thread fills its heap past the braking point.
  const results = await Promise.all(Array.from({ length: THREADS }, () => pool.run({ fill: 0.9 } satisfies HogTask) as Promise<HogResult>))
  for (const r of results) t.ok(r.usedBytes / r.limitBytes >= 0.9, 'a pool heap is 90% full')

  const main = readV8Heap()
  t.ok(main.usedBytes / main.limitBytes < HOLD_AT, 'the main thread\'s own heap reads calm')
  const braking = sampler.sample()
  t.ok(braking.pressure >= BRAKE_AT, `pressure from the pool's heaps (${braking.pressure.toFixed(2)})`)
  t.equal(braking.brakeLevel, 2)
  t.equal(braking.budgetBytes, Math.floor(before * BRAKE_CUT), 'the budget is cut')
  t.equal(gate.brakeLevel, 2)
  t.equal(calm.heaps.heaps, THREADS + 1, 'the main heap and one per pool thread')
  t.ok(braking.heaps.usedBytes > main.usedBytes, 'the reported sum includes the pool')

  // The threads leave the pool; their slots are freed and their heaps no longer count.
  await pool.destroy()
  t.same(board.readings(), [], 'every slot freed on workerDestroy')
  const after = sampler.sample()
  t.equal(after.heaps.heaps, 1, 'only the main heap')
  t.ok(after.pressure < HOLD_AT - 0.05)
  t.equal(after.brakeLevel, 0, 'calm again')
})
