/**
 * The memory plan (SPEC.md 8.1, 8.2): cores, allocation area, nursery, heap
 * ceiling, live target, cache budget, transient budget, metadata ingest
 * ceiling and serve admission, computed from the pins and the cgroup reading.
 * Pure: the same inputs give the same plan, so `service check-config`
 * predicts exactly what the boot applies.
 *
 * Every figure carries its origin. Pins win and are never clamped (SPEC.md 8).
 *
 * Choices where SPEC.md says "not shown" (each is a constant below):
 * - Cores from the memory limit when no CPU limit is set: one core per
 *   512 MiB, between 1 and the ceiling. 512 MiB per core is the ratio at which
 *   the allocation area reaches its 64 MiB maximum, so such a plan never
 *   shrinks the area below what the memory would allow.
 * - With no heap ceiling at all, the allocation area is its 64 MiB maximum.
 * - Deductions from the live target: the cache budget, the queue tenants
 *   (in-memory queue and enqueue buffer, 16 MiB), and the idle process
 *   (24 MiB for the main thread plus 4 MiB per pool thread).
 * - Transient floor: an eighth of the live target, at least 16 MiB (a quarter
 *   of the 1 GiB start with no heap ceiling). Live ceiling: the live target
 *   less the idle process; while calm, transient work may borrow the room
 *   that cache and queue tenants do not use yet, and the sampler takes it back.
 * - Metadata ingest ceiling: half the live target in whole MiB, from 64 MiB
 *   (admits the largest real packuments, above 40 MB) to 256 MiB (V8 cannot
 *   hold a string much above 512 MiB); 128 MiB with no heap ceiling.
 * - Serve admission: 16 in flight per core, at most one per 2 MiB of the
 *   starting budget (entry steps alone never take more than half of it), at
 *   least 4. The waiting room holds twice the in-flight count.
 */
import { ServiceError } from '../errors.js'

export const MiB = 1024 * 1024
export const GiB = 1024 * MiB

export type Origin = 'pin' | 'cgroup' | 'derived' | 'default'

export interface Figure<T> {
  readonly value: T
  readonly origin: Origin
}

export interface PlanPins {
  /** `runtime.cores` / SERVICE_RUNTIME__CORES. */
  readonly cores?: number | undefined
  /** `runtime.maxHeapBytes` / SERVICE_RUNTIME__MAX_HEAP_BYTES. */
  readonly maxHeapBytes?: number | undefined
  /** SERVICE_RUNTIME__CORES_CEILING; 8 when unset. */
  readonly coresCeiling?: number | undefined
  /** `runtime.serveMaxInFlight`. */
  readonly serveMaxInFlight?: number | undefined
  /** `limits.maxResponseBytes`; 0 or unset means automatic. */
  readonly maxResponseBytes?: number | undefined
  /** `cache.maxBytes`; 0 or unset means automatic. */
  readonly cacheMaxBytes?: number | undefined
}

export interface PlanCgroup {
  readonly memoryLimitBytes?: number | undefined
  readonly cpuCores?: number | undefined
}

export interface PlanInputs {
  readonly pins?: PlanPins
  readonly cgroup?: PlanCgroup
  /** The host's CPU count (os.availableParallelism()); reported, never used to size. */
  readonly hostCpuCount?: number
}

export interface PlanDeductions {
  readonly cacheBytes: Figure<number>
  readonly queueTenantsBytes: Figure<number>
  readonly idleProcessBytes: Figure<number>
}

export interface MemoryPlan {
  /** The cgroup memory limit; null when none was found. */
  readonly memoryLimitBytes: Figure<number | null>
  readonly hostCpuCount: number | null
  readonly coresCeiling: Figure<number>
  readonly cores: Figure<number>
  /** True when a pin or a CPU limit fixed the core count (no boot warning). */
  readonly coresFixed: boolean
  readonly allocationAreaBytes: Figure<number>
  readonly nurseryBytes: Figure<number>
  /** null: unbounded (no memory limit and no pin). */
  readonly heapCeilingBytes: Figure<number | null>
  /** null with an unbounded heap. */
  readonly liveTargetBytes: Figure<number | null>
  readonly cacheBudgetBytes: Figure<number>
  readonly deductions: PlanDeductions
  readonly startingBudgetBytes: Figure<number>
  readonly budgetFloorBytes: Figure<number>
  readonly liveCeilingBytes: Figure<number>
  readonly maxResponseBytes: Figure<number>
  readonly serveMaxInFlight: Figure<number>
  readonly waitingRoom: Figure<number>
  /** SPEC.md 8: 1 MiB per request. */
  readonly entryStepBytes: number
  /** SPEC.md 8: 1 s, then 503 with Retry-After: 1. */
  readonly entryWaitMs: number
}

export const DEFAULT_CORES_CEILING = 8
export const MEMORY_PER_DERIVED_CORE = 512 * MiB
export const AREA_MIN = 4 * MiB
export const AREA_MAX = 64 * MiB
export const OUTSIDE_HEAP_MIN = 32 * MiB
export const CACHE_SHARE = 0.3
export const CACHE_MIN = 64 * MiB
export const QUEUE_TENANTS = 16 * MiB
export const IDLE_MAIN = 24 * MiB
export const IDLE_PER_THREAD = 4 * MiB
export const UNBOUNDED_BUDGET = 1 * GiB
export const BUDGET_FLOOR_MIN = 16 * MiB
export const INGEST_MIN = 64 * MiB
export const INGEST_MAX = 256 * MiB
export const INGEST_UNBOUNDED = 128 * MiB
export const IN_FLIGHT_PER_CORE = 16
export const IN_FLIGHT_MIN = 4
export const BUDGET_PER_IN_FLIGHT = 2 * MiB
export const WAITING_ROOM_PER_IN_FLIGHT = 2
export const ENTRY_STEP_BYTES = 1 * MiB
export const ENTRY_WAIT_MS = 1000
/** A heap ceiling never goes below the nursery plus this, however tiny the limit (below 1 GiB is unsupported). */
const TINY_HEAP_OLD_MIN = 32 * MiB

function fig<T>(value: T, origin: Origin): Figure<T> {
  return Object.freeze({ value, origin })
}

function positivePin(name: string, value: number | undefined, zeroIsAutomatic: boolean): number | undefined {
  if (value === undefined) return undefined
  if (zeroIsAutomatic && value === 0) return undefined
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ServiceError('CONFIG_INVALID', { message: `${name} must be a positive whole number, got ${String(value)}`, data: { key: name } })
  }
  return value
}

function wholeMiB(bytes: number): number {
  return Math.floor(bytes / MiB) * MiB
}

export function computePlan(inputs: PlanInputs = {}): MemoryPlan {
  const pins = inputs.pins ?? {}
  const cgroup = inputs.cgroup ?? {}
  const pinnedCores = positivePin('runtime.cores', pins.cores, false)
  const pinnedHeap = positivePin('runtime.maxHeapBytes', pins.maxHeapBytes, false)
  const pinnedCeiling = positivePin('runtime.coresCeiling', pins.coresCeiling, false)
  const pinnedInFlight = positivePin('runtime.serveMaxInFlight', pins.serveMaxInFlight, false)
  const pinnedResponse = positivePin('limits.maxResponseBytes', pins.maxResponseBytes, true)
  const pinnedCache = positivePin('cache.maxBytes', pins.cacheMaxBytes, true)

  const limit = cgroup.memoryLimitBytes !== undefined && cgroup.memoryLimitBytes > 0 ? cgroup.memoryLimitBytes : undefined
  const memoryLimitBytes = fig(limit ?? null, limit === undefined ? 'default' : 'cgroup')
  const coresCeiling = fig(pinnedCeiling ?? DEFAULT_CORES_CEILING, pinnedCeiling === undefined ? 'default' : 'pin')

  // SPEC.md 8.2: a pin, else the CPU limit (already floored by the reader),
  // else from the memory limit, else the ceiling. A CPU request is never used.
  let cores: Figure<number>
  if (pinnedCores !== undefined) cores = fig(pinnedCores, 'pin')
  else if (cgroup.cpuCores !== undefined) cores = fig(Math.max(1, Math.floor(cgroup.cpuCores)), 'cgroup')
  else if (limit !== undefined) cores = fig(Math.min(coresCeiling.value, Math.max(1, Math.floor(limit / MEMORY_PER_DERIVED_CORE))), 'derived')
  else cores = fig(coresCeiling.value, 'default')
  const n = cores.value

  // SPEC.md 8.2: "A tighter or limit-less heap ceiling you set takes the limit's place."
  const areaBase = pinnedHeap !== undefined && (limit === undefined || pinnedHeap < limit) ? pinnedHeap : limit
  const allocationAreaBytes = areaBase === undefined
    ? fig(AREA_MAX, 'default')
    : fig(Math.min(AREA_MAX, Math.max(AREA_MIN, wholeMiB(areaBase / 8 / n))), 'derived')
  const area = allocationAreaBytes.value
  const nurseryBytes = fig(area * n, allocationAreaBytes.origin === 'default' ? 'default' : 'derived')

  let heapCeilingBytes: Figure<number | null>
  if (pinnedHeap !== undefined) heapCeilingBytes = fig(pinnedHeap, 'pin')
  else if (limit !== undefined) {
    const outsideHeap = Math.max(Math.floor(limit / 8), OUTSIDE_HEAP_MIN)
    heapCeilingBytes = fig(Math.max(limit - outsideHeap - area, nurseryBytes.value + TINY_HEAP_OLD_MIN), 'derived')
  } else heapCeilingBytes = fig(null, 'default')
  const heap = heapCeilingBytes.value

  const liveTargetBytes = heap === null
    ? fig(null, 'default')
    : fig(Math.max(0, Math.floor((heap - nurseryBytes.value) / 4)), 'derived')
  const live = liveTargetBytes.value

  const cacheBudgetBytes = pinnedCache !== undefined
    ? fig(pinnedCache, 'pin')
    : live === null
      ? fig(CACHE_MIN, 'default')
      : fig(Math.max(CACHE_MIN, Math.floor(live * CACHE_SHARE)), 'derived')
  const deductions: PlanDeductions = Object.freeze({
    cacheBytes: cacheBudgetBytes,
    queueTenantsBytes: fig(QUEUE_TENANTS, 'default'),
    idleProcessBytes: fig(IDLE_MAIN + IDLE_PER_THREAD * n, 'derived'),
  })

  // SPEC.md 8.1: "a quarter of the heap that the nursery leaves, less the
  // cache budget, the queue tenants and the idle process. Without a heap
  // ceiling it starts at 1 GiB."
  let startingBudgetBytes: Figure<number>
  let budgetFloorBytes: Figure<number>
  let liveCeilingBytes: Figure<number>
  if (live === null) {
    startingBudgetBytes = fig(UNBOUNDED_BUDGET, 'default')
    budgetFloorBytes = fig(UNBOUNDED_BUDGET / 4, 'default')
    liveCeilingBytes = fig(UNBOUNDED_BUDGET, 'default')
  } else {
    const floorBytes = Math.max(BUDGET_FLOOR_MIN, Math.floor(live / 8))
    const start = Math.max(floorBytes, live - cacheBudgetBytes.value - QUEUE_TENANTS - deductions.idleProcessBytes.value)
    budgetFloorBytes = fig(floorBytes, 'derived')
    startingBudgetBytes = fig(start, 'derived')
    liveCeilingBytes = fig(Math.max(start, live - deductions.idleProcessBytes.value), 'derived')
  }

  const maxResponseBytes = pinnedResponse !== undefined
    ? fig(pinnedResponse, 'pin')
    : live === null
      ? fig(INGEST_UNBOUNDED, 'default')
      : fig(Math.min(INGEST_MAX, Math.max(INGEST_MIN, wholeMiB(live / 2))), 'derived')

  const serveMaxInFlight = pinnedInFlight !== undefined
    ? fig(pinnedInFlight, 'pin')
    : fig(Math.max(IN_FLIGHT_MIN, Math.min(IN_FLIGHT_PER_CORE * n, Math.floor(startingBudgetBytes.value / BUDGET_PER_IN_FLIGHT))), 'derived')
  const waitingRoom = fig(serveMaxInFlight.value * WAITING_ROOM_PER_IN_FLIGHT, 'derived')

  return Object.freeze({
    memoryLimitBytes,
    hostCpuCount: inputs.hostCpuCount ?? null,
    coresCeiling,
    cores,
    coresFixed: cores.origin === 'pin' || cores.origin === 'cgroup',
    allocationAreaBytes,
    nurseryBytes,
    heapCeilingBytes,
    liveTargetBytes,
    cacheBudgetBytes,
    deductions,
    startingBudgetBytes,
    budgetFloorBytes,
    liveCeilingBytes,
    maxResponseBytes,
    serveMaxInFlight,
    waitingRoom,
    entryStepBytes: ENTRY_STEP_BYTES,
    entryWaitMs: ENTRY_WAIT_MS,
  })
}
