/**
 * A journal that an older build let outgrow today's bounds still opens:
 * replay streams it (a 300 MiB journal of 200 KB bodies, opened by a child
 * whose old space is 64 MiB), keeps what fits the bounds in journal order,
 * says what it dropped, and compacts before its first write.
 */
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { EmbeddedQueueStats } from '../../engine/queue/embedded-queue.js'
import { QUEUE_REPLAY_DROPPED } from '../../engine/queue/embedded-queue-bounds.js'
import { JOURNAL_FILE } from '../../engine/queue/queue-journal.js'
import type { QueueMessage } from '../../engine/queue/queue.js'
import { runChild } from './run-bounded-child.js'

async function folder(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'queue-replay-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'jobs')
  await mkdir(dir)
  return dir
}

const send = (id: string, body: string): string =>
  JSON.stringify({ op: 'send', id, body, visibleAt: 0, count: 0, receipt: null, receivedAt: null }) + '\n'

async function drain(queue: EmbeddedQueue): Promise<QueueMessage[]> {
  const all: QueueMessage[] = []
  for (;;) {
    const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) return all
    all.push(...batch)
  }
}

t.test('a 300 MiB legacy journal of 200 KB bodies opens in a 64 MiB heap, drops them, keeps the rest, compacts', async (t) => {
  const dir = await folder(t)
  const out = createWriteStream(join(dir, JOURNAL_FILE))
  const url = `{"url":"https://127.0.0.1/${'u'.repeat(200_000)}.tgz"}`
  const kept: string[] = []
  for (let i = 0; i < 1600; i++) {
    // What a build without a body limit journalled for a version with a 200 KB tarball URL.
    if (!out.write(send(`big-${i}`, url))) await once(out, 'drain')
    out.write(JSON.stringify({ op: 'receive', id: `big-${i}`, receipt: 'r', visibleAt: 0, count: 1, receivedAt: 0 }) + '\n')
    if (i % 30 === 0) {
      out.write(send(`small-${i}`, `small job ${i}`))
      kept.push(`small job ${i}`)
    }
    if (i % 60 === 0 && i > 0) {
      out.write(JSON.stringify({ op: 'delete', id: `small-${i - 30}` }) + '\n')
      kept.splice(kept.indexOf(`small job ${i - 30}`), 1)
    }
  }
  out.end()
  await once(out, 'close')
  const before = (await stat(join(dir, JOURNAL_FILE))).size
  t.ok(before > 300 * 2 ** 20, `the legacy journal is ${Math.round(before / 2 ** 20)} MiB`)

  const run = await runChild(t, { QUEUE_CHILD_DIR: dir, QUEUE_CHILD_MODE: 'open' })
  t.equal(run.code, 0, 'the child opened it within a 64 MiB heap')
  const stats = JSON.parse(run.lines.find((l) => l.startsWith('stats '))!.slice(6)) as EmbeddedQueueStats
  t.match(stats, { jobs: kept.length, droppedAtReplay: 1600, compactions: 1 })
  const dropped = run.lines.filter((l) => l.startsWith('log ')).map((l) => JSON.parse(l.slice(4)) as { level: string, message: string, data: Record<string, unknown> })
  t.match(dropped, [{ level: 'warn', message: QUEUE_REPLAY_DROPPED, data: { tooLarge: 1600, beyondBound: 0, kept: kept.length } }], 'it said what it dropped, once')
  t.same((dropped[0]?.data['ids'] as string[]).slice(0, 3), ['big-0', 'big-1', 'big-2'], 'naming the first ones')
  t.same(run.lines.filter((l) => l.startsWith('body ')).map((l) => l.slice(5)), kept, 'every small job, oldest first')
  const after = (await stat(join(dir, JOURNAL_FILE))).size
  t.ok(after < 64 * 1024, `compacted to ${after} bytes`)

  const logger = new RecordingLogger()
  // The child's receives hid every job for 300 s of real time.
  const queue = await EmbeddedQueue.open({ dir, logger, clock: new ManualClock(Date.now() + 3_600_000) })
  t.teardown(() => queue.close())
  t.equal(logger.find(QUEUE_REPLAY_DROPPED).length, 0, 'the next open drops nothing')
  t.same((await drain(queue)).map((m) => m.body), kept)
})

t.test('replay keeps the bound in journal order: the oldest are kept, the rest dropped and named', async (t) => {
  const dir = await folder(t)
  let text = ''
  for (let i = 0; i < 300; i++) text += send(`m-${i}`, `job ${i}`)
  // Deleted before m-200 was sent: room for one more, as a live send would have found.
  text += JSON.stringify({ op: 'delete', id: 'm-5' }) + '\n'
  text += send('late', 'late job')
  await writeFile(join(dir, JOURNAL_FILE), text)

  const logger = new RecordingLogger()
  const queue = await EmbeddedQueue.open({ dir, logger, maxJobs: 100 })
  t.teardown(() => queue.close())
  const [warning] = logger.find(QUEUE_REPLAY_DROPPED)
  t.match(warning?.data, { tooLarge: 0, beyondBound: 200, kept: 100, ids: ['m-100', 'm-101'] })
  const lines = (await readFile(join(dir, JOURNAL_FILE), 'utf8')).split('\n').filter(Boolean)
  t.equal(lines.length, 100, 'compacted to the kept jobs')
  const bodies = (await drain(queue)).map((m) => m.body)
  t.same(bodies, [...Array.from({ length: 100 }, (_, i) => `job ${i}`).filter((b) => b !== 'job 5'), 'late job'])
})

t.test('an over-long line before a torn tail: both dropped, the journal appends cleanly after', async (t) => {
  const dir = await folder(t)
  await writeFile(join(dir, JOURNAL_FILE), send('a', 'first') + send('huge', 'h'.repeat(100_000)) + send('b', 'second') + '{"op":"send","id":"torn","bo')
  let queue = await EmbeddedQueue.open({ dir, maxBodyBytes: 1024, maxBytes: 1024 * 1024 })
  await queue.send('third')
  await queue.close()
  queue = await EmbeddedQueue.open({ dir })
  t.teardown(() => queue.close())
  t.same((await drain(queue)).map((m) => m.body), ['first', 'second', 'third'])
})
