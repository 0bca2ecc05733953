/**
 * The embedded queue against kill -9: a real child process is killed with
 * SIGKILL and a fresh instance opens its folder.
 */
import { spawn } from 'node:child_process'
import type { ChildProcessByStdio } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { QueueMessage } from '../../engine/queue/queue.js'

const CHILD = fileURLToPath(new URL('./queue-writer.child.ts', import.meta.url))

/** Runs the .ts child with the TypeScript loader tap gave this process, and no coverage hooks. */
function spawnChild(t: Test, env: Record<string, string>): ChildProcessByStdio<null, Readable, null> {
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const { NODE_OPTIONS: _coverage, ...inherited } = process.env
  const child = spawn(process.execPath, [...loader, CHILD], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return child
}

/** Collects the child's lines until `until` says stop; then kills it with SIGKILL and waits for its end. */
async function killWhen(child: ChildProcessByStdio<null, Readable, null>, until: (lines: string[]) => boolean): Promise<{ lines: string[], signal: string | null }> {
  const lines: string[] = []
  let partial = ''
  const ended = new Promise<void>((resolve) => child.stdout.once('end', resolve))
  const exited = new Promise<string | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n')
      partial = parts.pop()!
      lines.push(...parts)
      if (until(lines)) resolve()
    })
    child.once('exit', () => reject(new Error(`the child ended before the condition; it said: ${lines.slice(-5).join(' | ')}`)))
  })
  child.kill('SIGKILL')
  const signal = await exited
  // Lines already in the pipe when the kill landed still count: each was printed after its send resolved.
  await ended
  if (partial !== '') lines.push(partial)
  return { lines, signal }
}

async function drain(queue: EmbeddedQueue): Promise<QueueMessage[]> {
  const all: QueueMessage[] = []
  for (;;) {
    const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) return all
    all.push(...batch)
  }
}

t.test('kill -9 after send resolved loses nothing', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-queue-kill-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'jobs')

  // Killed mid-stream: everything acknowledged before the kill must be there.
  const child = spawnChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'send', QUEUE_CHILD_COUNT: '100000' })
  const { lines, signal } = await killWhen(child, (l) => l.filter((x) => x.startsWith('sent ')).length >= 150)
  t.equal(signal, 'SIGKILL')
  const acknowledged = lines.filter((l) => l.startsWith('sent ')).map((l) => l.slice('sent '.length))
  t.ok(acknowledged.length >= 150)

  const queue = await EmbeddedQueue.open({ dir })
  t.teardown(() => queue.close())
  const bodies = (await drain(queue)).map((m) => m.body)
  const present = new Set(bodies)
  t.equal(present.size, bodies.length, 'no message twice')
  const missing = acknowledged.filter((b) => !present.has(b))
  t.same(missing, [], `all ${acknowledged.length} acknowledged sends survived (${bodies.length} present)`)
})

t.test('kill -9 after all sends: a new instance sees all N', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-queue-kill-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'jobs')
  const child = spawnChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'send', QUEUE_CHILD_COUNT: '200' })
  const { signal } = await killWhen(child, (l) => l.includes('done'))
  t.equal(signal, 'SIGKILL')
  const queue = await EmbeddedQueue.open({ dir })
  t.teardown(() => queue.close())
  const bodies = (await drain(queue)).map((m) => m.body).sort()
  t.same(bodies, Array.from({ length: 200 }, (_, i) => `job ${i}`).sort())
})

t.test('a received, unacknowledged message comes back after its window across a kill -9', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'proxy-queue-kill-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'jobs')
  const seed = await EmbeddedQueue.open({ dir })
  const { messageId } = await seed.send('mirror me')
  await seed.close()

  const child = spawnChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'receive' })
  const { lines, signal } = await killWhen(child, (l) => l.some((x) => x.startsWith('received ')))
  t.equal(signal, 'SIGKILL')
  t.ok(lines.includes(`received ${messageId}`), 'the child held the message')

  // The child ran on the system clock; this instance's clock starts now and moves by hand.
  const clock = new ManualClock(Date.now())
  const queue = await EmbeddedQueue.open({ dir, clock })
  t.teardown(() => queue.close())
  t.same(await queue.receive({ max: 1, visibilitySeconds: 30 }), [], 'still hidden inside the 30 s window')
  clock.advance(31_000)
  const [back] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  t.equal(back?.messageId, messageId, 'back after the window')
  t.equal(back?.receiveCount, 2, 'the lost delivery counted towards the budget')
})
