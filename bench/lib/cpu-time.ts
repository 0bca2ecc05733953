/**
 * CPU time of a process tree, read from Linux's `/proc/PID/stat` (utime and
 * stime, every thread of the process included), to say which party of a run
 * spent the shared cores. A process that is gone counts nothing, so read a
 * tree before it stops.
 */
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { processTree } from './peak-rss.js'

let ticksPerSecond: number | undefined

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** User plus system CPU seconds of one process (all its threads); 0 when it is gone. */
export async function cpuSeconds(pid: number): Promise<number> {
  let stat: string
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return 0
  }
  // Fields after the command name, which may itself hold spaces and parentheses: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / clockTicks()
}

/** CPU seconds of `pid` and its descendants now. */
export async function treeCpuSeconds(pid: number): Promise<number> {
  let total = 0
  for (const member of await processTree(pid)) total += await cpuSeconds(member)
  return total
}
