/**
 * The embedded queue's folder lock (engine/queue/folder-lock.ts) dies with
 * its holder: a live holder always blocks a second owner, a holder killed
 * with SIGKILL never blocks a restart, and a lock file naming a PID (this
 * process's own, as a restarted container sees it, or another live
 * process's) decides nothing.
 */
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'
import { isServiceError } from '../../engine/errors.js'
import { LOCK_FILE } from '../../engine/queue/folder-lock.js'

const CHILD = fileURLToPath(new URL('./queue-writer.child.ts', import.meta.url))

async function folder(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'queue-lock-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'queue')
  await mkdir(dir)
  return dir
}

async function reasonOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    const queue = await promise as EmbeddedQueue
    await queue.close()
    return undefined
  } catch (error) {
    return isServiceError(error) ? String(error.data?.['reason']) : String(error)
  }
}

t.test('a live holder blocks; the same holder killed with SIGKILL does not', async (t) => {
  const dir = await folder(t)
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _coverage, ...inherited } = process.env
  const child = spawn(process.execPath, [...loader, CHILD], { env: { ...inherited, QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'send', QUEUE_CHILD_COUNT: '1' }, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); if (out.includes('done')) resolve() })
    child.once('exit', () => reject(new Error(`the child ended early: ${out}`)))
  })
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), QueueFailureReason.LOCKED, 'a live holder always blocks')
  child.kill('SIGKILL')
  await once(child, 'exit')
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), undefined, 'a killed holder never blocks the restart')
})

t.test('a lock file naming a PID decides nothing: this process\'s own (a restarted container), or another live one', async (t) => {
  for (const pid of [process.pid, process.ppid, 1]) {
    const dir = await folder(t)
    await writeFile(join(dir, LOCK_FILE), String(pid))
    t.equal(await reasonOf(EmbeddedQueue.open({ dir })), undefined, `lock file naming live process ${pid}: the folder opens`)
  }
})

t.test('the same folder opened twice in one process: the second waits out the settle time and is refused', async (t) => {
  const dir = await folder(t)
  const first = await EmbeddedQueue.open({ dir })
  t.teardown(() => first.close())
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), QueueFailureReason.LOCKED)
})

/**
 * Starts the writer child in a fresh PID namespace, as a container restart
 * does (PEERS.md: `unshare --pid --fork --mount-proc` works as root here):
 * it is PID 1 there, every time. SIGKILL to `unshare` reaches it (--kill-child).
 */
function spawnInNamespace(t: { teardown(fn: () => unknown): void }, dir: string): ChildProcessByStdio<null, Readable, null> {
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _coverage, ...inherited } = process.env
  const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', process.execPath, ...loader, CHILD], {
    env: { ...inherited, QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'send', QUEUE_CHILD_COUNT: '1' }, stdio: ['ignore', 'pipe', 'ignore'],
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return child
}

/** Resolves with the child's `pid` line once it printed `done`; rejects with its output if it exits first. */
function opened(child: ChildProcessByStdio<null, Readable, null>): Promise<string> {
  let out = ''
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('done\n')) resolve(/^pid (\d+)$/m.exec(out)?.[1] ?? '?')
    })
    child.once('exit', (code) => reject(new Error(`the child exited with ${String(code)} before opening the folder: ${out}`)))
  })
}

function unshareWorks(): string | undefined {
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return String((error as { stderr?: Buffer }).stderr ?? error).trim() || 'unshare failed'
  }
}

const unshareRefused = unshareWorks()
t.test('a restarted container: the same PID in a fresh namespace opens the folder its killed predecessor held', {
  skip: unshareRefused === undefined ? false : `a PID namespace cannot be made here (${unshareRefused}); this test needs root`,
}, async (t) => {
  const dir = await folder(t)
  const first = spawnInNamespace(t, dir)
  const firstPid = await opened(first)
  t.equal(firstPid, '1', 'the first instance is PID 1 in its namespace')
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), QueueFailureReason.LOCKED, 'while it lives, it blocks this namespace')
  const rival = spawnInNamespace(t, dir)
  await t.rejects(opened(rival), Error, 'and another fresh namespace')

  first.kill('SIGKILL')
  await once(first, 'exit')
  const second = spawnInNamespace(t, dir)
  t.equal(await opened(second), firstPid, 'the restart has the same PID, and opens the folder')
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), QueueFailureReason.LOCKED, 'and holds it')
  second.kill('SIGKILL')
  await once(second, 'exit')
  t.equal(await reasonOf(EmbeddedQueue.open({ dir })), undefined, 'killed in turn, it does not block either')
})
