/**
 * A real Redis peer for tests and benches (PEERS.md, "Peers for the fleet"): Debian's
 * `redis-server` (installed by test/setup) started on 127.0.0.1 on a free
 * port, in a temp folder of its own, with no persistence (`--save ''`, no
 * append-only file: nothing is written beside the test). Stopped by the pid
 * it started, never by name; `kill()` is the "server killed mid-run" case
 * (SIGKILL, no shutdown), and `start()` again brings one back on the same
 * port, empty.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../lib/nginx.js'

export interface RedisPeer {
  readonly port: number
  /** `redis://127.0.0.1:PORT`, what `cache.url` takes. */
  readonly url: string
  readonly pid: number | undefined
  /** Kills the server with SIGKILL and waits for it to go (the crash case). */
  kill(): Promise<void>
  /** Starts a server again on the same port (after `kill` or `stop`). */
  start(): Promise<void>
  /** One command over a fresh connection, its raw RESP answer (for a test's own checks). */
  command(...args: string[]): Promise<string>
  /** SIGTERM, wait, remove the folder. Idempotent. */
  stop(): Promise<void>
}

interface Teardown { teardown(fn: () => unknown): void }

const READY_TIMEOUT_MS = 10_000

/** One RESP command over a fresh socket; resolves with whatever the server answered first. */
function rawCommand(port: number, args: readonly string[], timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    let answer = ''
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`redis on ${port} did not answer`)) }, timeoutMs)
    socket.on('error', (error) => { clearTimeout(timer); reject(error) })
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8')
      if (answer.endsWith('\r\n')) {
        clearTimeout(timer)
        socket.destroy()
        resolve(answer)
      }
    })
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`)
  })
}

async function untilReady(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited before it was ready: ${log()}`)
    try {
      if ((await rawCommand(port, ['PING'], 500)).startsWith('+PONG')) return
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`redis-server on ${port} was not ready within ${READY_TIMEOUT_MS} ms: ${log()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Starts a redis-server; `t`'s teardown (a test's, or a bench's own list) stops it even when the run fails. */
export async function startRedis(t: Teardown): Promise<RedisPeer> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'proxy-redis-'))
  let child: ChildProcess | undefined
  let output = ''
  let removed = false

  const exited = (c: ChildProcess): Promise<void> => new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) resolve()
    else c.once('exit', () => resolve())
  })
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    const running = child
    child = undefined
    if (running === undefined || running.pid === undefined) return
    try {
      process.kill(running.pid, name)
    } catch {
      // ESRCH: it is gone already.
    }
    await exited(running)
  }
  const start = async (): Promise<void> => {
    if (child !== undefined) throw new Error('redis-server is running')
    output = ''
    const started = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir,
    ], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = started
    started.stdout?.on('data', (c: Buffer) => { output += c.toString('utf8') })
    started.stderr?.on('data', (c: Buffer) => { output += c.toString('utf8') })
    await new Promise<void>((resolve, reject) => {
      started.once('spawn', () => resolve())
      started.once('error', (error) => reject(new Error(`redis-server could not start (test/setup installs it): ${error.message}`)))
    })
    await untilReady(port, started, () => output)
  }
  const peer: RedisPeer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() { return child?.pid },
    kill: () => signal('SIGKILL'),
    start,
    command: (...args) => rawCommand(port, args),
    async stop() {
      await signal('SIGTERM')
      if (!removed) {
        removed = true
        await rm(dir, { recursive: true, force: true })
      }
    },
  }
  t.teardown(() => peer.stop())
  await start()
  return peer
}
