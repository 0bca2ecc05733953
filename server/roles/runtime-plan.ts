/**
 * The memory plan of this process from its configuration and its cgroup
 * (SPEC.md 8.2): read by the launcher to start Node with the matching heap
 * flags, by `check-config` to predict, and by each role to apply.
 */
import { availableParallelism } from 'node:os'
import type { Config } from '../../engine/config/config.js'
import { readCgroupLimits } from '../../engine/memory/cgroup.js'
import { computePlan, type MemoryPlan } from '../../engine/memory/plan.js'

export async function planFor(config: Config): Promise<MemoryPlan> {
  const cgroup = await readCgroupLimits(config.runtime.cgroupPath)
  return computePlan({
    pins: {
      cores: config.runtime.cores,
      maxHeapBytes: config.runtime.maxHeapBytes,
      coresCeiling: config.runtime.coresCeiling,
      serveMaxInFlight: config.runtime.serveMaxInFlight,
      maxResponseBytes: config.limits.maxResponseBytes,
      cacheMaxBytes: config.cache.maxBytes,
      mirrorConcurrency: config.limits.mirrorConcurrency,
    },
    cgroup: { memoryLimitBytes: cgroup.memoryLimitBytes, cpuCores: cgroup.cpuCores },
    work: {
      mirrorTarget: Object.values(config.mounts).some((mount) => mount?.mirror !== undefined),
      queueKind: config.queue.kind,
      enqueueBufferBytes: config.queue.enqueueBufferBytes,
      enqueueMemory: config.queue.enqueueMemorySeconds > 0,
    },
    hostCpuCount: availableParallelism(),
  })
}
