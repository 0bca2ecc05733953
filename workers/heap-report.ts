/**
 * The pool thread's side of engine/memory/thread-heaps.ts: publishes this
 * thread's V8 heap (used and limit) into its slot of the SharedArrayBuffer
 * that the role's composition root hands every pool thread as `workerData`,
 * so that the budget sampler sees the heaps where the packument work runs.
 *
 * The limit is the thread's old generation (its `resourceLimits`), the one
 * that ends it; heap-reading.ts says why not V8's heap_size_limit.
 * Published when the thread starts, every HEAP_REPORT_INTERVAL_MS (the
 * sampler's own pace; getHeapStatistics costs microseconds), and after each
 * task (`reportHeap`), so a task that grew the heap is seen without waiting
 * for the timer. The timer is unref'd: it never keeps a thread alive.
 *
 * Side-effect free on import: the main thread imports it for
 * `heapReportWorkerData`; only `startHeapReport` (called by a task module at
 * load, in a pool thread) claims a slot.
 */
import { isMainThread, resourceLimits, threadId, workerData } from 'node:worker_threads'
import { readV8Heap } from '../engine/memory/heap-reading.js'
import { ThreadHeapSlot, type ThreadHeapBoard } from '../engine/memory/thread-heaps.js'

export const HEAP_REPORT_INTERVAL_MS = 100

/** What the composition root passes as Piscina's `workerData` (it may carry other fields beside it). */
export interface HeapReportWorkerData {
  readonly threadHeaps: SharedArrayBuffer
}

export function heapReportWorkerData(board: ThreadHeapBoard): HeapReportWorkerData {
  return { threadHeaps: board.buffer }
}

let slot: ThreadHeapSlot | undefined
/** This thread's old-generation limit, what ends it (engine/memory/heap-reading.ts): its resourceLimits. */
const oldGenerationLimitBytes = (resourceLimits.maxOldGenerationSizeMb ?? 0) * 1024 * 1024

/** Publishes this thread's heap now; nothing before startHeapReport claimed a slot. */
export function reportHeap(): void {
  slot?.publish(readV8Heap(oldGenerationLimitBytes))
}

/**
 * Claims this thread's slot and starts publishing. Does nothing on the main
 * thread, without a board in `data`, when already started, or when every
 * slot is taken (the sampler then counts the threads that did report).
 */
export function startHeapReport(data: unknown = workerData): void {
  if (isMainThread || slot !== undefined) return
  const buffer = (data as Partial<HeapReportWorkerData> | null | undefined)?.threadHeaps
  if (!(buffer instanceof SharedArrayBuffer)) return
  slot = ThreadHeapSlot.claim(buffer, threadId)
  if (slot === undefined) return
  reportHeap()
  setInterval(reportHeap, HEAP_REPORT_INTERVAL_MS).unref()
}
