/**
 * Peak resident memory of a served process, read from Linux's
 * `/proc/PID/status` high-water mark (VmHWM) while the process still runs.
 * A server started for one scenario has its whole life inside the scenario,
 * so its VmHWM is the scenario's peak. For a process tree (nginx's master
 * and workers) the peaks are summed, an upper bound of the tree's peak.
 */
import { readFile } from 'node:fs/promises'

export async function peakRssBytes(pid: number): Promise<number | undefined> {
  let status: string
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8')
  } catch {
    return undefined
  }
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status)
  return match === null ? undefined : Number(match[1]) * 1024
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
  let total = 0
  let seen = false
  for (const member of await processTree(pid)) {
    const peak = await peakRssBytes(member)
    if (peak !== undefined) {
      total += peak
      seen = true
    }
  }
  return seen ? total : undefined
}
