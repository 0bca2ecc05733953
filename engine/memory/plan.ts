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
 * - Deductions from the live target (SPEC.md 8.1 and the last paragraph of
 *   8.2), each a figure with its origin:
 *   - the runtime reserve, i.e. the idle process: 24 MiB for the main thread
 *     plus 4 MiB per pool thread;
 *   - the cache budget (SPEC.md 8.1 fixes it: 30% of the live target, at
 *     least 64 MiB);
 *   - the queue tenants, only when some mount has a mirror target (otherwise
 *     no queue is opened and no job is made): the in-memory queue, the
 *     embedded queue's own bound (engine/queue/embedded-queue-bounds.ts:
 *     16 MiB of bodies plus 512 bytes of bookkeeping for each of its 10,000
 *     jobs, 21 MiB in whole MiB; nothing with `queue.kind: sqs`), and the
 *     proxy's enqueue side (engine/mirror/enqueue-buffer.ts): the buffer's
 *     own bound, `queue.enqueueBufferBytes` (8 MiB by default; it charges
 *     each job twice its body plus 1 KiB against it, so it holds about 4,500
 *     jobs of a typical 400-byte body, 480 of the largest), plus the local
 *     recent-enqueue memory when `queue.enqueueMemorySeconds` is not 0
 *     (engine/mirror/enqueue-memory.ts: 16,384 claims at 256 bytes each,
 *     a 64-character key, its time and the map's slot, 4 MiB); 12 MiB in all;
 *   - publish bodies: nothing reserved: a publish body is transient work,
 *     charged to the memory gate chunk by chunk while it is read and again
 *     before it is parsed (server/routes/publish-route.ts), bounded by
 *     `publish.maxBodyBytes`, so it waits or pauses like any other request
 *     instead of holding a standing reserve for a rare write;
 *   - mirror-artifact work, only with a mirror target: `mirror.concurrency`
 *     jobs of `mirror.jobAllowanceBytes` (16 MiB: the worker streams the
 *     artifact, publish-body.ts, so one job holds its target lookup document
 *     and the bytes in flight, never the whole artifact). Automatic
 *     concurrency is 2 per core, at most 8, but no more jobs than fit in
 *     half of what the live target leaves after the deductions above (the
 *     other half stays with the transient budget), and never below 1. So a
 *     small automatic plan sheds mirror-artifact capacity first; cache
 *     retention keeps its SPEC.md budget, whatever mirror work wants.
 *     A `limits.mirrorConcurrency` pin wins and is never shed.
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
 * - Artifact read buffers (engine/upstream/http1/artifact-connection.ts):
 *   the large read buffers the proxy's artifact connections may borrow at
 *   once, process-wide. They live outside the heap, so they come out of the
 *   room the heap ceiling leaves (an eighth of the limit, at least 32 MiB):
 *   a quarter of it in 512 KiB buffers, at most 64 (so 16 to 64, 8 to
 *   32 MiB); 64 with no memory limit. Relays are not charged to the gate (SPEC.md 8.1), so
 *   this is a bound, not a deduction.
 */
import { ServiceError } from '../errors.js'
import { EMBEDDED_QUEUE_BOUNDS } from '../queue/embedded-queue-bounds.js'
import { DEFAULT_LARGE_READ_BUFFERS, LARGE_READ_BUFFER_BYTES } from '../upstream/http1/artifact-connection.js'
import { ADMISSION_CHARGES } from './admission-charges.js'

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
  /** `limits.mirrorConcurrency`; 0 or unset means automatic. */
  readonly mirrorConcurrency?: number | undefined
}

/** What this configuration makes the process hold beside the serve path. */
export interface PlanWork {
  /** Some mount has a mirror target: the queue opens, jobs are enqueued and a mirror worker runs (SPEC.md 1.6). */
  readonly mirrorTarget?: boolean | undefined
  /** `queue.kind`: the embedded queue keeps its pending jobs in memory; SQS keeps none. Default embedded. */
  readonly queueKind?: 'embedded' | 'sqs' | undefined
  /** `queue.enqueueBufferBytes`: the bound of the proxy's enqueue buffer. Default ENQUEUE_BUFFER_BYTES. */
  readonly enqueueBufferBytes?: number | undefined
  /** `queue.enqueueMemorySeconds` is not 0: the local recent-enqueue memory is kept. Default true. */
  readonly enqueueMemory?: boolean | undefined
}

export interface PlanCgroup {
  readonly memoryLimitBytes?: number | undefined
  readonly cpuCores?: number | undefined
}

export interface PlanInputs {
  readonly pins?: PlanPins
  readonly cgroup?: PlanCgroup
  readonly work?: PlanWork
  /** The host's CPU count (os.availableParallelism()); reported, never used to size. */
  readonly hostCpuCount?: number
}

export interface PlanDeductions {
  readonly cacheBytes: Figure<number>
  /** SPEC.md 8.1's queue tenants: the in-memory queue plus the enqueue buffer. */
  readonly queueTenantsBytes: Figure<number>
  readonly inMemoryQueueBytes: Figure<number>
  readonly enqueueBufferBytes: Figure<number>
  readonly publishBodiesBytes: Figure<number>
  /** mirror.workBytes. */
  readonly mirrorWorkBytes: Figure<number>
  /** The runtime reserve (SPEC.md 8.2): the idle process (SPEC.md 8.1). */
  readonly idleProcessBytes: Figure<number>
}

/** Mirror-artifact work (SPEC.md 8.2); what the mirror worker reads to size itself. */
export interface MirrorPlan {
  /** Mirror jobs at once; 0 without a mirror target. */
  readonly concurrency: Figure<number>
  /** Memory one mirror job may hold at once; 0 without a mirror target. */
  readonly jobAllowanceBytes: Figure<number>
  /** concurrency × jobAllowanceBytes: what the plan deducts for mirror work. */
  readonly workBytes: Figure<number>
  /** The automatic concurrency before shedding (equal to concurrency when nothing was shed, or pinned). */
  readonly wantedConcurrency: number
}

/** The proxy's enqueue side: the buffer between the artifact route and the queue, and the recent-enqueue memory. */
export interface EnqueueBufferPlan {
  /** The buffer's bound (engine/mirror/enqueue-buffer.ts `maxBytes`); 0 without a mirror target. */
  readonly bytes: Figure<number>
  /** Claims the local recent-enqueue memory keeps (engine/mirror/enqueue-memory.ts); 0 without one. */
  readonly memoryEntries: Figure<number>
  readonly memoryBytes: Figure<number>
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
  readonly mirror: MirrorPlan
  readonly enqueueBuffer: EnqueueBufferPlan
  readonly startingBudgetBytes: Figure<number>
  readonly budgetFloorBytes: Figure<number>
  readonly liveCeilingBytes: Figure<number>
  readonly maxResponseBytes: Figure<number>
  readonly serveMaxInFlight: Figure<number>
  readonly waitingRoom: Figure<number>
  /** Large artifact read buffers lent at once, process-wide (the header says how many). */
  readonly artifactReadBuffers: Figure<number>
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
/** The share of the outside-heap room that large artifact read buffers may take. */
export const READ_BUFFER_SHARE = 0.25
/** The most lent at once, and what an unplanned pool lends (artifact-connection.ts). */
export const READ_BUFFERS_MAX = DEFAULT_LARGE_READ_BUFFERS
export const CACHE_SHARE = 0.3
export const CACHE_MIN = 64 * MiB
/** Heap per pending embedded-queue job beside its body: the entry, its id and key, map and heap slots. */
export const QUEUE_ENTRY_OVERHEAD = 512
export const IN_MEMORY_QUEUE_BYTES = Math.ceil((EMBEDDED_QUEUE_BOUNDS.maxBytes + EMBEDDED_QUEUE_BOUNDS.maxJobs * QUEUE_ENTRY_OVERHEAD) / MiB) * MiB
/** `queue.enqueueBufferBytes`'s default (engine/config/schema.ts states it too). */
export const ENQUEUE_BUFFER_BYTES = 8 * MiB
/** The local recent-enqueue memory: claims kept, and what each costs (a 64-character key, its time, the map's slot). */
export const ENQUEUE_MEMORY_ENTRIES = 16_384
export const ENQUEUE_MEMORY_BYTES_PER_ENTRY = 256
export const MIRROR_JOB_ALLOWANCE = 16 * MiB
export const MIRROR_JOBS_PER_CORE = 2
export const MIRROR_CONCURRENCY_MAX = 8
/** Mirror work may take at most this share of what the live target leaves after the other deductions. */
export const MIRROR_SHARE = 0.5
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

/** The enqueue buffer's bound and the local recent-enqueue memory, only with a mirror target (no job is made otherwise). */
function enqueuePlan(mirrorTarget: boolean, work: PlanWork): EnqueueBufferPlan {
  const pinned = positivePin('queue.enqueueBufferBytes', work.enqueueBufferBytes, false)
  const entries = mirrorTarget && work.enqueueMemory !== false ? ENQUEUE_MEMORY_ENTRIES : 0
  return Object.freeze({
    bytes: !mirrorTarget ? fig(0, 'default') : pinned === undefined || pinned === ENQUEUE_BUFFER_BYTES ? fig(ENQUEUE_BUFFER_BYTES, 'default') : fig(pinned, 'pin'),
    memoryEntries: fig(entries, 'default'),
    memoryBytes: fig(entries * ENQUEUE_MEMORY_BYTES_PER_ENTRY, 'default'),
  })
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
  const pinnedMirror = positivePin('limits.mirrorConcurrency', pins.mirrorConcurrency, true)
  const work = inputs.work ?? {}
  const mirrorTarget = work.mirrorTarget === true

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

  const outsideHeap = limit === undefined ? undefined : Math.max(Math.floor(limit / 8), OUTSIDE_HEAP_MIN)
  let heapCeilingBytes: Figure<number | null>
  if (pinnedHeap !== undefined) heapCeilingBytes = fig(pinnedHeap, 'pin')
  else if (limit !== undefined && outsideHeap !== undefined) {
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
  const idleProcessBytes = fig(IDLE_MAIN + IDLE_PER_THREAD * n, 'derived')
  const inMemoryQueueBytes = fig(mirrorTarget && work.queueKind !== 'sqs' ? IN_MEMORY_QUEUE_BYTES : 0, 'default')
  const enqueueBuffer = enqueuePlan(mirrorTarget, work)
  const enqueueBytes = fig(enqueueBuffer.bytes.value + enqueueBuffer.memoryBytes.value, enqueueBuffer.bytes.origin)
  const queueTenantsBytes = fig(inMemoryQueueBytes.value + enqueueBytes.value, enqueueBytes.origin)
  // Publish bodies are charged to the gate while in flight (publish-route.ts), not reserved here.
  const publishBodiesBytes = fig(0, 'default')
  const fixed = cacheBudgetBytes.value + queueTenantsBytes.value + publishBodiesBytes.value + idleProcessBytes.value
  const mirror = mirrorPlan(mirrorTarget, pinnedMirror, n, live === null ? null : live - fixed)
  const deductions: PlanDeductions = Object.freeze({
    cacheBytes: cacheBudgetBytes,
    queueTenantsBytes,
    inMemoryQueueBytes,
    enqueueBufferBytes: enqueueBytes,
    publishBodiesBytes,
    mirrorWorkBytes: mirror.workBytes,
    idleProcessBytes,
  })

  // SPEC.md 8.1: "a quarter of the heap that the nursery leaves, less the
  // cache budget, the queue tenants and the idle process. Without a heap
  // ceiling it starts at 1 GiB." Less, too, the publish bodies and the
  // mirror-artifact work of SPEC.md 8.2.
  let startingBudgetBytes: Figure<number>
  let budgetFloorBytes: Figure<number>
  let liveCeilingBytes: Figure<number>
  if (live === null) {
    startingBudgetBytes = fig(UNBOUNDED_BUDGET, 'default')
    budgetFloorBytes = fig(UNBOUNDED_BUDGET / 4, 'default')
    liveCeilingBytes = fig(UNBOUNDED_BUDGET, 'default')
  } else {
    const floorBytes = Math.max(BUDGET_FLOOR_MIN, Math.floor(live / 8))
    const start = Math.max(floorBytes, live - fixed - mirror.workBytes.value)
    budgetFloorBytes = fig(floorBytes, 'derived')
    startingBudgetBytes = fig(start, 'derived')
    liveCeilingBytes = fig(Math.max(start, live - idleProcessBytes.value), 'derived')
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
  const artifactReadBuffers = outsideHeap === undefined
    ? fig(READ_BUFFERS_MAX, 'default')
    : fig(Math.min(READ_BUFFERS_MAX, Math.floor((outsideHeap * READ_BUFFER_SHARE) / LARGE_READ_BUFFER_BYTES)), 'derived')

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
    mirror,
    enqueueBuffer,
    startingBudgetBytes,
    budgetFloorBytes,
    liveCeilingBytes,
    maxResponseBytes,
    serveMaxInFlight,
    waitingRoom,
    artifactReadBuffers,
    entryStepBytes: ADMISSION_CHARGES.entryStepBytes,
    entryWaitMs: ENTRY_WAIT_MS,
  })
}

/**
 * Mirror-artifact work (the header says why): `room` is what the live target
 * leaves after every other deduction (null with an unbounded heap).
 */
function mirrorPlan(target: boolean, pinned: number | undefined, cores: number, room: number | null): MirrorPlan {
  if (!target) {
    return Object.freeze({ concurrency: fig(0, 'default'), jobAllowanceBytes: fig(0, 'default'), workBytes: fig(0, 'default'), wantedConcurrency: 0 })
  }
  const wanted = Math.min(MIRROR_CONCURRENCY_MAX, MIRROR_JOBS_PER_CORE * cores)
  let concurrency: Figure<number>
  if (pinned !== undefined) concurrency = fig(pinned, 'pin')
  else if (room === null) concurrency = fig(wanted, 'default')
  else concurrency = fig(Math.max(1, Math.min(wanted, Math.floor((Math.max(0, room) * MIRROR_SHARE) / MIRROR_JOB_ALLOWANCE))), 'derived')
  return Object.freeze({
    concurrency,
    jobAllowanceBytes: fig(MIRROR_JOB_ALLOWANCE, 'default'),
    workBytes: fig(concurrency.value * MIRROR_JOB_ALLOWANCE, concurrency.origin === 'pin' ? 'pin' : 'derived'),
    wantedConcurrency: pinned ?? wanted,
  })
}
