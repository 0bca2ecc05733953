/**
 * The memory plan mapped onto V8 (DESIGN.md "Memory and sizing"):
 *
 * - allocation area → the young generation of each pool worker
 *   (`resourceLimits.maxYoungGenerationSizeMb`);
 * - nursery → the sum of those over the pool, one worker per core;
 * - heap ceiling → the old-space limits of the workers plus the main thread.
 *   The nursery sits inside the heap ceiling (SPEC.md 8.2), so the old spaces
 *   share what the nursery leaves.
 * - The "one allocation area" that SPEC.md 8.2 takes off the heap ceiling is
 *   the main thread's own young generation, outside the ceiling. On the command
 *   line V8 takes it as a semi-space size: a young generation is three
 *   semi-spaces (two semi-spaces and a new large-object space of the same size).
 *
 * Old-space split (a choice; SPEC.md does not show one): the main thread holds
 * the cache, so it gets the cache budget plus one equal share; each worker gets
 * one share of the rest. A share is never below 32 MiB (workers) or 64 MiB
 * (main), which only matters for plans below the supported 1 GiB.
 *
 * With no heap ceiling, no old-space limit is set and V8's own default applies.
 *
 * Pool threads retire when idle (issue 18: after a flood the process kept
 * the pool's heaps, hundreds of MiB, for as long as it stayed quiet): one
 * thread stays so a quiet service pays no thread start on its next listing;
 * the others end after POOL_IDLE_TIMEOUT_MS without a task, and their V8
 * heaps go with them. The timeout is long
 * against a task (a 20 MB packument renders in about 150 ms) so that a
 * steady load never makes threads start and stop.
 *
 * Tasks per thread: one, Piscina's default. A render task never waits
 * inside its thread: its response charge is taken before the pool gets it
 * (engine/listing/prepaid-charge.ts). Until then a task waited inside its
 * thread while the gate paused that charge, each thread took up to its
 * share of the serve admission so the overshoot holder's render would find
 * a slot, and the waiting tasks' scanned documents stacked on the thread's
 * heap; under the flood bench the holder's render then stalled behind them
 * until their pauses timed out. Every task now only computes, so a second
 * one on the same thread would only hold a second document's heap.
 */
import { MiB, type MemoryPlan } from './plan.js'

export interface WorkerResourceLimits {
  readonly maxYoungGenerationSizeMb: number
  readonly maxOldGenerationSizeMb?: number
}

export interface V8Limits {
  /** Piscina `maxThreads`: one worker per core. */
  readonly poolThreads: number
  /** Piscina `minThreads`: the threads kept when idle. */
  readonly poolMinThreads: number
  /** Piscina `idleTimeout`: how long a thread past `poolMinThreads` stays without a task. */
  readonly poolIdleTimeoutMs: number
  /** Piscina `resourceLimits` for every worker. */
  readonly workerResourceLimits: WorkerResourceLimits
  /** Main thread `--max-old-space-size` in MiB; absent with no heap ceiling. */
  readonly mainMaxOldSpaceMb?: number
  /** Main thread `--max-semi-space-size` in MiB. */
  readonly mainMaxSemiSpaceMb: number
  /** The flags to start the main thread with (NODE_OPTIONS or execArgv). */
  readonly mainExecArgv: readonly string[]
}

/** The pool threads kept when idle (the header says why). */
export const POOL_MIN_THREADS = 1
export const POOL_IDLE_TIMEOUT_MS = 10_000
const WORKER_OLD_MIN_MB = 32
const MAIN_OLD_MIN_MB = 64

export function v8Limits(plan: MemoryPlan): V8Limits {
  const threads = plan.cores.value
  const areaMb = Math.floor(plan.allocationAreaBytes.value / MiB)
  const mainMaxSemiSpaceMb = Math.max(1, Math.floor(areaMb / 3))
  const semiFlag = `--max-semi-space-size=${mainMaxSemiSpaceMb}`
  const heap = plan.heapCeilingBytes.value
  if (heap === null) {
    return Object.freeze({
      poolThreads: threads,
      poolMinThreads: Math.min(POOL_MIN_THREADS, threads),
      poolIdleTimeoutMs: POOL_IDLE_TIMEOUT_MS,
      workerResourceLimits: Object.freeze({ maxYoungGenerationSizeMb: areaMb }),
      mainMaxSemiSpaceMb,
      mainExecArgv: Object.freeze([semiFlag]),
    })
  }
  const oldTotalMb = Math.floor((heap - plan.nurseryBytes.value) / MiB)
  const cacheMb = Math.floor(plan.cacheBudgetBytes.value / MiB)
  const workerOldMb = Math.max(WORKER_OLD_MIN_MB, Math.floor((oldTotalMb - cacheMb) / (threads + 1)))
  const mainMaxOldSpaceMb = Math.max(MAIN_OLD_MIN_MB, oldTotalMb - workerOldMb * threads)
  return Object.freeze({
    poolThreads: threads,
    poolMinThreads: Math.min(POOL_MIN_THREADS, threads),
    poolIdleTimeoutMs: POOL_IDLE_TIMEOUT_MS,
    workerResourceLimits: Object.freeze({ maxYoungGenerationSizeMb: areaMb, maxOldGenerationSizeMb: workerOldMb }),
    mainMaxOldSpaceMb,
    mainMaxSemiSpaceMb,
    mainExecArgv: Object.freeze([`--max-old-space-size=${mainMaxOldSpaceMb}`, semiFlag]),
  })
}
