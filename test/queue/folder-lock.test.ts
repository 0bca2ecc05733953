/**
 * The embedded queue's folder lock (engine/queue/folder-lock.ts) dies with
 * its holder: a live holder always blocks a second owner, a holder killed
 * with SIGKILL never blocks a restart, and a lock file naming a PID (this
 * process's own, as a restarted container sees it, or another live
 * process's) decides nothing.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
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
