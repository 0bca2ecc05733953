/**
 * One heap's reading for the budget sampler: V8's heap in use against the
 * limit that actually ends the thread.
 *
 * Why not V8's `heap_size_limit`: it is the old generation's limit plus the
 * young generation's reservation, and a heap dies of out-of-memory when its
 * old generation is full, long before used reaches heap_size_limit. Measured
 * on Node 20 by filling a worker's heap until it died: 64 MiB old and 2 MiB
 * young read a 67 MiB limit and died at 0.96 of it; 64 and 8 read 76 MiB and
 * died at 0.84; the 2 CPU / 1 GiB plan's pool thread (213 MiB old, 64 MiB
 * young) reads 309 MiB and died at 0.69, below the holding level (0.70), so
 * the pool never braked. The main thread under that plan's flags
 * (`--max-old-space-size=278 --max-semi-space-size=21`) reads 374 MiB, of
 * which the old generation is 0.74. So the
 * limit is the old generation's: a pool thread's `resourceLimits`
 * (maxOldGenerationSizeMb), the main thread's `--max-old-space-size`, and
 * heap_size_limit only when neither is known. Used stays V8's whole
 * `used_heap_size` (young objects included): a little early, never late.
 */
import { getHeapStatistics } from 'node:v8'

const MiB = 1024 * 1024

export interface HeapReading {
  readonly usedBytes: number
  readonly limitBytes: number
}

/** This thread's heap against `oldGenerationLimitBytes` when known and within V8's own limit. */
export function readV8Heap(oldGenerationLimitBytes: number | undefined = MAIN_OLD_GENERATION_LIMIT_BYTES): HeapReading {
  const stats = getHeapStatistics()
  const limit = oldGenerationLimitBytes !== undefined && oldGenerationLimitBytes > 0 && oldGenerationLimitBytes < stats.heap_size_limit
    ? oldGenerationLimitBytes
    : stats.heap_size_limit
  return { usedBytes: stats.used_heap_size, limitBytes: limit }
}

/**
 * The `--max-old-space-size` in force for this process, in bytes: NODE_OPTIONS
 * first, then the command line, which wins (Node's rule); the last one of
 * each counts. Undefined when none is set.
 */
export function oldSpaceFlagBytes(execArgv: readonly string[], nodeOptions: string | undefined): number | undefined {
  let mb: number | undefined
  for (const arg of [...(nodeOptions ?? '').split(/\s+/), ...execArgv]) {
    const match = /^--max[-_]old[-_]space[-_]size=(\d+)$/.exec(arg)
    if (match?.[1] !== undefined) mb = Number(match[1])
  }
  return mb === undefined || mb <= 0 ? undefined : mb * MiB
}

/** The main thread's old-generation limit as the launcher set it (server/cli/service.ts); read once. */
export const MAIN_OLD_GENERATION_LIMIT_BYTES = oldSpaceFlagBytes(process.execArgv, process.env['NODE_OPTIONS'])
