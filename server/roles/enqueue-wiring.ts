/**
 * The proxy's enqueue side (issue 30): the enqueue buffer between the
 * artifact route and the mirror queue (engine/mirror/enqueue-buffer.ts), its
 * recent-enqueue memory, its metrics part and the `queue` readiness
 * condition.
 *
 * The memory: with `queue.enqueueMemorySeconds` 0, none; else the one given
 * (the shared cache backend's claim, one memory for the tier), else this
 * process's own (engine/mirror/enqueue-memory.ts), sized by the plan.
 *
 * Readiness (SPEC.md 3.1's spirit: a process condition every answer depends
 * on): `conditions.queue` is `journal_unwritable` while the embedded queue
 * cannot write its journal, else `enqueue_backlog` while the buffer holds more
 * than its share of its bound (the queue refuses jobs or cannot keep up).
 */
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'
import type { MemoryPlan } from '../../engine/memory/plan.js'
import { EnqueueBuffer } from '../../engine/mirror/enqueue-buffer.js'
import { LocalEnqueueMemory, type EnqueueMemory } from '../../engine/mirror/enqueue-memory.js'
import type { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
import { SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import type { Readiness } from '../health/readiness.js'

export const QUEUE_CONDITION = Object.freeze({ journalUnwritable: 'journal_unwritable', enqueueBacklog: 'enqueue_backlog' } as const)

export interface EnqueueWiringOptions {
  readonly config: Config
  readonly logger: Logger
  readonly clock: Clock
  readonly plan: MemoryPlan
  readonly queue: Queue
  /** The embedded queue, when that is the queue: its journal's health joins the condition. */
  readonly embedded: EmbeddedQueue | undefined
  readonly readiness: Readiness
  readonly snapshots: SnapshotReaders
  /** A shared recent-enqueue memory; default this process's own. */
  readonly memory?: EnqueueMemory
}

export function attachEnqueueBuffer(o: EnqueueWiringOptions): EnqueueBuffer {
  const memoryTtlMs = o.config.queue.enqueueMemorySeconds * 1000
  const memory = memoryTtlMs === 0 ? undefined : o.memory ?? new LocalEnqueueMemory({ maxEntries: o.plan.enqueueBuffer.memoryEntries.value, clock: o.clock })
  const buffer = new EnqueueBuffer({ queue: o.queue, logger: o.logger, clock: o.clock, maxBytes: o.plan.enqueueBuffer.bytes.value, memory, memoryTtlMs })
  const { embedded } = o
  o.readiness.addCondition('queue', () => {
    if (embedded !== undefined && !embedded.health().writable) return QUEUE_CONDITION.journalUnwritable
    return buffer.pastShare() ? QUEUE_CONDITION.enqueueBacklog : undefined
  })
  o.snapshots[SNAPSHOT_KEYS.mirrorEnqueue] = () => buffer.stats()
  return buffer
}
