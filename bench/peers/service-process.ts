/**
 * A role of this project's built service (`node dist/server/cli/service.js
 * <role> --config FILE`) as a child process on 127.0.0.1: started, ready when
 * its `/readyz` answers 200, restarted on the same port with the same
 * configuration, and stopped with SIGTERM (the graceful drain). The launcher
 * forwards SIGTERM but cannot forward SIGKILL, so whatever of its tree
 * outlives the stop is killed by its own pid (bench/lib/peak-rss.ts lists
 * the tree).
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { processTree } from '../lib/peak-rss.js'
import { ChildPeer } from './child-peer.js'
import { peerEnv } from './peer-env.js'
import { repoRoot } from './repo-root.js'
import { join } from 'node:path'

export type ServiceRole = 'proxy' | 'mirror'

const READY_TIMEOUT_MS = 60_000
/** The drain bound the scenarios configure (server.shutdownDrainTimeout) plus room for a loaded machine. */
const STOP_GRACE_MS = 30_000

/** The start time of a process in clock ticks since boot (`/proc/PID/stat` field 22), or undefined when it is gone. */
async function startTime(pid: number): Promise<string | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

export class ServiceProcess {
  readonly role: ServiceRole
  readonly port: number
  readonly #configFile: string
  readonly #env: Readonly<Record<string, string>>
  #peer: ChildPeer

  private constructor(role: ServiceRole, port: number, configFile: string, env: Readonly<Record<string, string>>, peer: ChildPeer) {
    this.role = role
    this.port = port
    this.#configFile = configFile
    this.#env = env
    this.#peer = peer
  }

  /** Starts `role` with `configFile`, its probes (and, for the proxy, its routes) on `port`; resolves once ready. */
  static async start(role: ServiceRole, configFile: string, port: number, env: Readonly<Record<string, string>> = {}): Promise<ServiceProcess> {
    return new ServiceProcess(role, port, configFile, env, await launch(role, configFile, port, env))
  }

  get pid(): number {
    return this.#peer.pid
  }

  /** The last few KiB the service wrote. */
  get output(): string {
    return this.#peer.output
  }

  async restart(): Promise<void> {
    await this.stop()
    this.#peer = await launch(this.role, this.#configFile, this.port, this.#env)
  }

  async stop(): Promise<void> {
    // Each member with its start time, so a pid the kernel has since given to another process is never signalled.
    const tree = await Promise.all((await processTree(this.#peer.pid)).slice(1).map(async (pid) => ({ pid, started: await startTime(pid) })))
    await this.#peer.stop(STOP_GRACE_MS)
    for (const { pid, started } of tree) {
      if (started === undefined || await startTime(pid) !== started) continue
      try { process.kill(pid, 'SIGKILL') } catch { /* gone meanwhile */ }
    }
  }
}

async function launch(role: ServiceRole, configFile: string, port: number, env: Readonly<Record<string, string>>): Promise<ChildPeer> {
  const service = join(repoRoot(), 'dist', 'server', 'cli', 'service.js')
  const child = spawn(process.execPath, [service, role, '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: peerEnv({ ...env, SERVICE_SERVER__PORT: String(port) }),
  })
  const peer = new ChildPeer(`service ${role}`, child)
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (!peer.running) break
    try {
      const res = await request(`http://127.0.0.1:${port}/readyz`)
      await res.body.dump()
      if (res.statusCode === 200) return peer
    } catch { /* not listening yet */ }
    await sleep(100)
  }
  await peer.stop()
  throw new Error(`service ${role} on port ${port} did not become ready:\n${peer.output}`)
}
