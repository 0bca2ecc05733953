/**
 * One peer that runs as a child process: its pid, the tail of its output for
 * failure messages, and a stop that ends exactly that pid (SIGTERM, then
 * SIGKILL after a grace period) and waits until it has exited. `stop` is
 * idempotent so a test's teardown can always call it, even after a failure.
 */
import type { ChildProcess } from 'node:child_process'

const TAIL_BYTES = 8192

export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export class ChildPeer {
  readonly label: string
  readonly pid: number
  readonly exited: Promise<ChildExit>
  #child: ChildProcess
  #tail = ''
  #stopping: Promise<void> | undefined

  constructor(label: string, child: ChildProcess) {
    if (child.pid === undefined) throw new Error(`${label}: the child process did not start`)
    this.label = label
    this.pid = child.pid
    this.#child = child
    const keep = (chunk: Buffer): void => {
      this.#tail = (this.#tail + chunk.toString('utf8')).slice(-TAIL_BYTES)
    }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }))
    })
  }

  /** The last few KiB the child wrote to stdout and stderr. */
  get output(): string {
    return this.#tail
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null
  }

  stop(graceMs = 5000): Promise<void> {
    this.#stopping ??= this.#stop(graceMs)
    return this.#stopping
  }

  async #stop(graceMs: number): Promise<void> {
    if (this.running) {
      this.#child.kill('SIGTERM')
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), graceMs) })
      const outcome = await Promise.race([this.exited, late])
      clearTimeout(timer)
      if (outcome === 'late') this.#child.kill('SIGKILL')
    }
    await this.exited
    if (this.#child.connected) this.#child.disconnect()
    this.#child.stdout?.destroy()
    this.#child.stderr?.destroy()
  }
}
