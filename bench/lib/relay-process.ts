/**
 * The artifact relay in a process of its own (bench/runners/artifact-relay-server.ts),
 * its private leg pointing at `upstream`, so a bench's load does not share
 * its thread; `profileDir` runs it under `--cpu-prof`. Used by the
 * artifact-relay scenario.
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ChildPeer } from '../peers/child-peer.js'

export interface RelayProcess { readonly origin: string, readonly pid: number, stop(): Promise<void> }

export async function startRelay(upstream: string, profileDir?: string): Promise<RelayProcess> {
  const runner = fileURLToPath(new URL('../runners/artifact-relay-server.js', import.meta.url))
  // The runner exits through process.exit on SIGTERM, which writes the profile.
  const execArgv = profileDir === undefined || profileDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  const child = fork(runner, [upstream], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv })
  const peer = new ChildPeer('artifact relay', child)
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the relay did not listen:\n${peer.output}`)), 30_000)
    child.once('message', (m: { port?: unknown }) => {
      clearTimeout(timer)
      if (typeof m.port === 'number') resolve(m.port)
      else reject(new Error(`unexpected message ${JSON.stringify(m)}`))
    })
    void peer.exited.then(() => { clearTimeout(timer); reject(new Error(`the relay exited:\n${peer.output}`)) })
  })
  return { origin: `http://127.0.0.1:${port}/js`, pid: peer.pid, stop: () => peer.stop() }
}
