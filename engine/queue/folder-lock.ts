/**
 * One process owns an embedded queue folder at a time, through an advisory
 * `flock` on a file in the folder: the kernel drops it with its holder, so a
 * holder killed by SIGKILL or the OOM killer never blocks a restart, and a
 * live holder always blocks a second owner. A PID in a lock file cannot do
 * that: a restarted container gets the same PID in a fresh namespace (so it
 * saw itself as the live owner and refused to boot forever), and an
 * unrelated process that reuses the old PID blocked boot the same way.
 *
 * Node has no flock(2), so the lock is held by util-linux `flock(1)` (Debian
 * essential) in a child process: it takes the lock with --nonblock and then
 * waits on a pipe from this process. When this process ends, however it
 * ends, the pipe closes, the child exits and the lock is released. The child
 * is unref'd and never keeps the event loop alive.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ServiceError } from '../errors.js'
import { QueueFailureReason } from './queue.js'

export const LOCK_FILE = 'lock'
const CONFLICT = 75 // EX_TEMPFAIL
const HELD = 'held\n'

export class FolderLock {
  readonly #child: ChildProcess

  private constructor(child: ChildProcess) {
    this.#child = child
  }

  /**
   * Takes the folder's lock, or fails with reason `locked` while another
   * live process holds it. A holder that just died may keep it for a few
   * milliseconds (its flock child has yet to see the pipe close): a conflict
   * is retried for up to `settleMs` before it is final.
   */
  static async take(dir: string, settleMs = 2_000): Promise<FolderLock> {
    const deadline = Date.now() + settleMs
    for (;;) {
      try {
        return await FolderLock.#tryTake(dir)
      } catch (error) {
        if (!(error instanceof ServiceError) || error.data?.['reason'] !== QueueFailureReason.LOCKED || Date.now() >= deadline) throw error
        await sleep(50)
      }
    }
  }

  static async #tryTake(dir: string): Promise<FolderLock> {
    const path = join(dir, LOCK_FILE)
    // Diagnostics only: the PID written here decides nothing.
    await writeFile(path, `${process.pid}\n`, { flag: 'a' }).catch(() => {})
    const child = spawn('flock', ['--exclusive', '--nonblock', '--conflict-exit-code', String(CONFLICT), path, 'sh', '-c', `printf '${HELD.trim()}\\n'; exec cat >/dev/null`], {
      stdio: ['pipe', 'pipe', 'ignore'],
    })
    const spawnFailed = once(child, 'error').then(([error]) => ({ error: error as Error }))
    const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null }))
    const held = new Promise<{ held: true }>((resolve) => {
      let out = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes(HELD)) resolve({ held: true })
      })
    })
    const first = await Promise.race([spawnFailed, exited, held])
    if ('held' in first) {
      child.unref()
      ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
      ;(child.stdout as unknown as { unref?: () => void } | null)?.unref?.()
      child.stdin?.on('error', () => {})
      return new FolderLock(child)
    }
    if ('error' in first) {
      throw new ServiceError('QUEUE_FAILURE', {
        message: `the queue folder lock needs flock(1) from util-linux: ${first.error.message}`, cause: first.error,
        data: { reason: QueueFailureReason.UNAVAILABLE, dir },
      })
    }
    if (first.code === CONFLICT) {
      throw new ServiceError('QUEUE_FAILURE', {
        message: 'the queue folder is in use by another live process', data: { reason: QueueFailureReason.LOCKED, dir },
      })
    }
    throw new ServiceError('QUEUE_FAILURE', { message: `flock(1) exited with ${String(first.code)} taking the queue folder lock`, data: { reason: QueueFailureReason.UNAVAILABLE, dir } })
  }

  /** Releases the lock: the child sees its pipe close and exits. */
  async release(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    const exited = once(this.#child, 'exit')
    this.#child.ref() // wait for it even when nothing else keeps the loop alive
    this.#child.stdin?.end()
    await exited
  }
}
