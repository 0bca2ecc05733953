/**
 * Peak resident memory of a served process, read from Linux's
 * `/proc/PID/status` high-water mark (VmHWM) while the process still runs.
 * A server started for one scenario has its whole life inside the scenario,
 * so its VmHWM is the scenario's peak. For a process tree (nginx's master
 * and workers) the peaks are summed, an upper bound of the tree's peak.
 */
import { readFile } from 'node:fs/promises'

/** One kB field of `/proc/PID/status` in bytes; undefined when the process is gone or has none. */
async function statusBytes(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number | undefined> {
  let status: string
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8')
  } catch {
    return undefined
  }
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(status)
  return match === null ? undefined : Number(match[1]) * 1024
}

export async function peakRssBytes(pid: number): Promise<number | undefined> {
  return statusBytes(pid, 'VmHWM')
}

/** The resident memory of `pid` now (VmRSS). */
export async function rssBytes(pid: number): Promise<number | undefined> {
  return statusBytes(pid, 'VmRSS')
}

/** `read` summed over `pid` and its descendants; undefined when none can be read. */
async function treeSum(pid: number, read: (pid: number) => Promise<number | undefined>): Promise<number | undefined> {
  let total: number | undefined
  for (const member of await processTree(pid)) {
    const bytes = await read(member)
    if (bytes !== undefined) total = (total ?? 0) + bytes
  }
  return total
}

/** The summed VmRSS of `pid` and its descendants now (nginx: the master and its worker). */
export async function treeRssBytes(pid: number): Promise<number | undefined> {
  return treeSum(pid, rssBytes)
}

/** The pid and its descendants, from `/proc/PID/task/TID/children`. */
export async function processTree(pid: number): Promise<number[]> {
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) {
    const parent = tree[i]!
    let children = ''
    try {
      children = await readFile(`/proc/${parent}/task/${parent}/children`, 'utf8')
    } catch {
      continue
    }
    for (const child of children.trim().split(/\s+/)) if (child !== '') tree.push(Number(child))
  }
  return tree
}

export async function treePeakRssBytes(pid: number): Promise<number | undefined> {
  return treeSum(pid, peakRssBytes)
}
