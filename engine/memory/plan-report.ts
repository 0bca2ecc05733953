/**
 * What `service check-config` prints and what the boot logs about the memory
 * plan (SPEC.md 6.2, 8.2): "`service check-config` predicts the plan and boot
 * reports what was applied". Both read the same `describePlan` object.
 */
import type { Logger } from '../log/logger.js'
import type { Figure, MemoryPlan } from './plan.js'
import { LARGE_READ_BUFFER_BYTES } from '../upstream/http1/artifact-connection.js'
import { v8Limits, type V8Limits } from './v8-limits.js'

/** SPEC.md 6.2, info at boot: starting budget, live target, deductions, floor, live ceiling. */
export const MEMORY_PLAN_TRANSIENT_BUDGET = 'memory plan: transient budget'
/** SPEC.md 6.2, info at boot: the effective body limit. */
export const MEMORY_PLAN_INGEST_CEILING = 'memory plan: metadata ingest ceiling'
/** SPEC.md 6.2, info at boot. */
export const RUNTIME_SERVE_ADMISSION = 'runtime: serve admission'
/** SPEC.md 6.2, at boot when no cgroup memory limit was found (logged at warn: an absorbed problem). */
export const RUNTIME_MAX_HEAP_UNBOUNDED = 'runtime: max heap unbounded'
/**
 * SPEC.md 8.2, warn at boot when neither a pin nor a CPU limit fixed the core
 * count. The wording is ours (SPEC.md fixes only that it warns and says so).
 */
export const RUNTIME_CORES_NOT_FIXED = 'runtime: cores not fixed by a CPU limit'
export const CORES_REMEDY = 'set SERVICE_RUNTIME__CORES from the orchestrator\'s CPU request, rounded up to whole cores'
export const UNBOUNDED_REMEDY = 'no cgroup v2 memory.max limit; set SERVICE_RUNTIME__MAX_HEAP_BYTES and SERVICE_RUNTIME__CORES by hand'

export interface FigureDescription<T> {
  readonly value: T
  readonly origin: Figure<T>['origin']
}

export interface PlanDescription {
  readonly memoryLimitBytes: FigureDescription<number | null>
  readonly hostCpuCount: number | null
  readonly cores: FigureDescription<number> & { readonly fixed: boolean }
  readonly coresCeiling: FigureDescription<number>
  readonly allocationAreaBytes: FigureDescription<number>
  readonly nurseryBytes: FigureDescription<number>
  readonly heapCeilingBytes: FigureDescription<number | null>
  readonly liveTargetBytes: FigureDescription<number | null>
  readonly cacheBudgetBytes: FigureDescription<number>
  readonly transientBudget: {
    readonly startingBudgetBytes: FigureDescription<number>
    readonly liveTargetBytes: FigureDescription<number | null>
    readonly deductions: {
      readonly cacheBytes: FigureDescription<number>
      readonly queueTenantsBytes: FigureDescription<number>
      readonly inMemoryQueueBytes: FigureDescription<number>
      readonly enqueueBufferBytes: FigureDescription<number>
      readonly publishBodiesBytes: FigureDescription<number>
      readonly mirrorWorkBytes: FigureDescription<number>
      readonly idleProcessBytes: FigureDescription<number>
    }
    readonly floorBytes: FigureDescription<number>
    readonly liveCeilingBytes: FigureDescription<number>
  }
  /** What the mirror worker reads to size itself (plan.mirror). */
  readonly mirror: {
    readonly concurrency: FigureDescription<number>
    readonly wantedConcurrency: number
    /** True when a small automatic plan ran fewer mirror jobs than it wanted. */
    readonly shed: boolean
    readonly jobAllowanceBytes: FigureDescription<number>
    readonly workBytes: FigureDescription<number>
  }
  readonly enqueueBuffer: {
    readonly bytes: FigureDescription<number>
    readonly memoryEntries: FigureDescription<number>
    readonly memoryBytes: FigureDescription<number>
  }
  readonly metadataIngestCeiling: { readonly maxResponseBytes: FigureDescription<number> }
  readonly serveAdmission: {
    readonly maxInFlight: FigureDescription<number>
    readonly waitingRoom: FigureDescription<number>
    readonly entryStepBytes: number
    readonly entryWaitMs: number
  }
  /** Large artifact read buffers lent at once, process-wide, and the size of one. */
  readonly artifactRelay: {
    readonly largeReadBuffers: FigureDescription<number>
    readonly largeReadBufferBytes: number
  }
  readonly v8: V8Limits
  readonly warnings: readonly string[]
}

function d<T>(f: Figure<T>): FigureDescription<T> {
  return { value: f.value, origin: f.origin }
}

/** Every figure with its origin, JSON-able. */
export function describePlan(plan: MemoryPlan): PlanDescription {
  const warnings: string[] = []
  if (!plan.coresFixed) warnings.push(`${RUNTIME_CORES_NOT_FIXED}: ${CORES_REMEDY}`)
  if (plan.memoryLimitBytes.value === null) warnings.push(`${RUNTIME_MAX_HEAP_UNBOUNDED}: ${UNBOUNDED_REMEDY}`)
  return {
    memoryLimitBytes: d(plan.memoryLimitBytes),
    hostCpuCount: plan.hostCpuCount,
    cores: { ...d(plan.cores), fixed: plan.coresFixed },
    coresCeiling: d(plan.coresCeiling),
    allocationAreaBytes: d(plan.allocationAreaBytes),
    nurseryBytes: d(plan.nurseryBytes),
    heapCeilingBytes: d(plan.heapCeilingBytes),
    liveTargetBytes: d(plan.liveTargetBytes),
    cacheBudgetBytes: d(plan.cacheBudgetBytes),
    transientBudget: {
      startingBudgetBytes: d(plan.startingBudgetBytes),
      liveTargetBytes: d(plan.liveTargetBytes),
      deductions: {
        cacheBytes: d(plan.deductions.cacheBytes),
        queueTenantsBytes: d(plan.deductions.queueTenantsBytes),
        inMemoryQueueBytes: d(plan.deductions.inMemoryQueueBytes),
        enqueueBufferBytes: d(plan.deductions.enqueueBufferBytes),
        publishBodiesBytes: d(plan.deductions.publishBodiesBytes),
        mirrorWorkBytes: d(plan.deductions.mirrorWorkBytes),
        idleProcessBytes: d(plan.deductions.idleProcessBytes),
      },
      floorBytes: d(plan.budgetFloorBytes),
      liveCeilingBytes: d(plan.liveCeilingBytes),
    },
    mirror: {
      concurrency: d(plan.mirror.concurrency),
      wantedConcurrency: plan.mirror.wantedConcurrency,
      shed: plan.mirror.concurrency.value < plan.mirror.wantedConcurrency,
      jobAllowanceBytes: d(plan.mirror.jobAllowanceBytes),
      workBytes: d(plan.mirror.workBytes),
    },
    enqueueBuffer: { bytes: d(plan.enqueueBuffer.bytes), memoryEntries: d(plan.enqueueBuffer.memoryEntries), memoryBytes: d(plan.enqueueBuffer.memoryBytes) },
    metadataIngestCeiling: { maxResponseBytes: d(plan.maxResponseBytes) },
    serveAdmission: {
      maxInFlight: d(plan.serveMaxInFlight),
      waitingRoom: d(plan.waitingRoom),
      entryStepBytes: plan.entryStepBytes,
      entryWaitMs: plan.entryWaitMs,
    },
    artifactRelay: {
      largeReadBuffers: d(plan.artifactReadBuffers),
      largeReadBufferBytes: LARGE_READ_BUFFER_BYTES,
    },
    v8: v8Limits(plan),
    warnings,
  }
}

/** The boot lines of SPEC.md 6.2 and the core-count warning of SPEC.md 8.2. */
export function logPlan(plan: MemoryPlan, logger: Logger): void {
  const description = describePlan(plan)
  if (plan.memoryLimitBytes.value === null) {
    logger.warn(RUNTIME_MAX_HEAP_UNBOUNDED, {
      heapCeilingBytes: description.heapCeilingBytes,
      remedy: UNBOUNDED_REMEDY,
    })
  }
  if (!plan.coresFixed) {
    logger.warn(RUNTIME_CORES_NOT_FIXED, {
      cores: description.cores,
      hostCpuCount: plan.hostCpuCount,
      remedy: CORES_REMEDY,
    })
  }
  logger.info(MEMORY_PLAN_TRANSIENT_BUDGET, {
    ...description.transientBudget,
    mirror: description.mirror,
    enqueueBuffer: description.enqueueBuffer,
    heapCeilingBytes: description.heapCeilingBytes,
    nurseryBytes: description.nurseryBytes,
    allocationAreaBytes: description.allocationAreaBytes,
  })
  logger.info(MEMORY_PLAN_INGEST_CEILING, { maxResponseBytes: description.metadataIngestCeiling.maxResponseBytes })
  logger.info(RUNTIME_SERVE_ADMISSION, {
    ...description.serveAdmission,
    artifactRelay: description.artifactRelay,
    cores: description.cores,
    memoryLimitBytes: description.memoryLimitBytes,
    v8: description.v8,
  })
}
