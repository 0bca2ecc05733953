/**
 * Reads the pod's limits from cgroup v2 (SPEC.md 8.1, 8.2): `memory.max` for
 * the memory limit and `cpu.max` for the CPU limit. Under any other layout
 * (no `cgroup.controllers` file: cgroup v1, or no cgroup filesystem at all)
 * the service boots as unlimited, and SERVICE_RUNTIME__MAX_HEAP_BYTES and
 * SERVICE_RUNTIME__CORES must be set by hand.
 *
 * The folder is a parameter so that tests point it at a fake tree.
 */
import { readFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const DEFAULT_CGROUP_PATH = '/sys/fs/cgroup'

export type CgroupLayout = 'v2' | 'other'

export interface CgroupReading {
  /** 'other' means no cgroup v2 tree was found; every limit is then absent. */
  readonly layout: CgroupLayout
  /** The folder that was read. */
  readonly path: string
  /** `memory.max` in bytes; absent when `max`, missing or unreadable. */
  readonly memoryLimitBytes?: number
  /**
   * Whole cores from `cpu.max` ("quota period"): floor(quota / period), and
   * never below 1. SPEC.md 8.2 floors a fractional limit; a quota under one
   * core would floor to 0, which cannot run anything, so it counts as 1.
   * Absent when the quota is `max`, or the file is missing or unreadable.
   */
  readonly cpuCores?: number
  /** The raw CPU limit in cores (quota / period), for the boot line only. */
  readonly cpuLimit?: number
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch {
    return undefined
  }
}

/** Parses `memory.max`: a byte count or `max`. Anything else reads as unlimited. */
export function parseMemoryMax(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const value = text.trim()
  if (value === 'max' || !/^\d+$/.test(value)) return undefined
  const bytes = Number(value)
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined
}

/** Parses `cpu.max`: "quota period" or "max period". Anything else reads as unlimited. */
export function parseCpuMax(text: string | undefined): { cores: number, limit: number } | undefined {
  if (text === undefined) return undefined
  const [quotaText, periodText] = text.trim().split(/\s+/)
  if (quotaText === undefined || quotaText === 'max' || !/^\d+$/.test(quotaText)) return undefined
  const period = periodText === undefined ? 100000 : Number(periodText)
  const quota = Number(quotaText)
  if (!Number.isFinite(period) || period <= 0 || quota <= 0) return undefined
  const limit = quota / period
  return { cores: Math.max(1, Math.floor(limit)), limit }
}

/** Reads the limits once, at boot (and in `service check-config`). */
export async function readCgroupLimits(path: string = DEFAULT_CGROUP_PATH): Promise<CgroupReading> {
  const controllers = await readOptional(join(path, 'cgroup.controllers'))
  if (controllers === undefined) return { layout: 'other', path }
  const memoryLimitBytes = parseMemoryMax(await readOptional(join(path, 'memory.max')))
  const cpu = parseCpuMax(await readOptional(join(path, 'cpu.max')))
  return {
    layout: 'v2',
    path,
    ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
    ...(cpu === undefined ? {} : { cpuCores: cpu.cores, cpuLimit: cpu.limit }),
  }
}

/**
 * Returns a reader of the cgroup's memory in use, for the sampler (ten times a
 * second, so synchronous and small). In use is `memory.current` less the
 * `inactive_file` line of `memory.stat`: the working set that the kubelet
 * compares with the limit. Reclaimable page cache (the embedded store's file
 * writes) would otherwise read as pressure. Returns undefined when the files
 * cannot be read.
 */
export function memoryInUseReader(path: string = DEFAULT_CGROUP_PATH): () => number | undefined {
  const currentFile = join(path, 'memory.current')
  const statFile = join(path, 'memory.stat')
  return () => {
    let current: number
    try {
      current = Number(readFileSync(currentFile, 'utf8').trim())
    } catch {
      return undefined
    }
    if (!Number.isFinite(current)) return undefined
    let inactiveFile = 0
    try {
      const match = /^inactive_file (\d+)$/m.exec(readFileSync(statFile, 'utf8'))
      if (match?.[1] !== undefined) inactiveFile = Number(match[1])
    } catch {
      // memory.stat is optional: without it the whole of memory.current counts.
    }
    return Math.max(0, current - inactiveFile)
  }
}
