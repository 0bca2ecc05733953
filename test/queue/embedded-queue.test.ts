import { appendFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test as Tap } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { JOURNAL_FILE, JOURNAL_LINE_SKIPPED } from '../../engine/queue/queue-journal.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'
import type { ServiceError } from '../../engine/errors.js'
import type { QueueMessage } from '../../engine/queue/queue.js'
import { queueSuite, rejectsWithReason } from './queue.suite.js'

t.test('the shared queue suite, embedded queue', async (t) => {
  queueSuite(t, async ({ maxReceiveCount }) => {
    const root = await mkdtemp(join(tmpdir(), 'proxy-queue-'))
    const clock = new ManualClock()
    const deadLetter = await EmbeddedQueue.open({ dir: join(root, 'dead-letter'), clock })
    const queue = await EmbeddedQueue.open({ dir: join(root, 'jobs'), clock, redrive: { maxReceiveCount, deadLetterQueue: deadLetter } })
    return {
      queue, deadLetter, deduplicates: true,
      elapse: async (seconds) => { clock.advance(seconds * 1000) },
      close: async () => {
        await queue.close()
        await deadLetter.close()
        await rm(root, { recursive: true, force: true })
      },
    }
  })
})

async function fixture(t: Tap): Promise<{ root: string, clock: ManualClock }> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-queue-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  return { root, clock: new ManualClock() }
}

async function drain(queue: EmbeddedQueue): Promise<QueueMessage[]> {
  const all: QueueMessage[] = []
  for (;;) {
    const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) return all
    all.push(...batch)
  }
}

t.test('state survives close and reopen: queued, hidden and counted', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  let queue = await EmbeddedQueue.open({ dir, clock })
  const { messageId: waiting } = await queue.send('waiting')
  const { messageId: hidden } = await queue.send('hidden')
  const { messageId: done } = await queue.send('done')
  const received = await queue.receive({ max: 10, visibilitySeconds: 60 })
  t.equal(received.length, 3)
  const byId = new Map(received.map((m) => [m.messageId, m]))
  await queue.delete(byId.get(done)!.receiptHandle)
  await queue.changeVisibility(byId.get(waiting)!.receiptHandle, 0)
  await queue.close()

  queue = await EmbeddedQueue.open({ dir, clock })
  t.teardown(() => queue.close())
  const now = await queue.receive({ max: 10, visibilitySeconds: 60 })
  t.same(now.map((m) => [m.messageId, m.receiveCount]), [[waiting, 2]], 'only the released one is visible')
  clock.advance(61_000)
  const later = await drain(queue)
  t.same(later.map((m) => m.messageId).sort(), [hidden, waiting].sort(), 'the hidden one is back after its window')
  t.equal(later.find((m) => m.messageId === hidden)?.receiveCount, 2)
})

t.test('a torn last journal line is ignored, cut away, and appends continue cleanly', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  let queue = await EmbeddedQueue.open({ dir, clock })
  await queue.send('kept 1')
  await queue.send('kept 2')
  await queue.close()
  await appendFile(join(dir, JOURNAL_FILE), '{"op":"send","id":"torn","body":"half a rec')

  queue = await EmbeddedQueue.open({ dir, clock })
  await queue.send('kept 3')
  await queue.close()
  const text = await readFile(join(dir, JOURNAL_FILE), 'utf8')
  t.notMatch(text, /torn/, 'the torn bytes were truncated before the next append')
  queue = await EmbeddedQueue.open({ dir, clock })
  t.teardown(() => queue.close())
  t.same((await drain(queue)).map((m) => m.body), ['kept 1', 'kept 2', 'kept 3'])
})

t.test('an unreadable complete line is skipped with a warning', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  let queue = await EmbeddedQueue.open({ dir, clock })
  await queue.send('before')
  await queue.close()
  await appendFile(join(dir, JOURNAL_FILE), '\u0000\u0000garbage\n')
  queue = await EmbeddedQueue.open({ dir, clock })
  await queue.send('after')
  await queue.close()
  const logger = new RecordingLogger()
  queue = await EmbeddedQueue.open({ dir, clock, logger })
  t.teardown(() => queue.close())
  t.equal(logger.find(JOURNAL_LINE_SKIPPED).length, 1)
  t.same((await drain(queue)).map((m) => m.body), ['before', 'after'])
})

t.test('compaction rewrites the journal when garbage dominates and keeps live state exact', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  let queue = await EmbeddedQueue.open({ dir, clock, compactionFloor: 32 })
  for (let round = 0; round < 20; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => queue.send(`round ${round} job ${i}`)))
    for (const m of await queue.receive({ max: 10, visibilitySeconds: 30 })) await queue.delete(m.receiptHandle)
  }
  const live = await Promise.all(['a', 'b', 'c'].map((b) => queue.send(b)))
  const [hidden] = await queue.receive({ max: 1, visibilitySeconds: 100 })
  await queue.close()
  const lines = (await readFile(join(dir, JOURNAL_FILE), 'utf8')).split('\n').filter(Boolean).length
  t.ok(lines < 100, `the journal was compacted (${lines} lines after ${20 * 30 + 4} records)`)

  queue = await EmbeddedQueue.open({ dir, clock })
  t.teardown(() => queue.close())
  const visible = await drain(queue)
  t.same(visible.map((m) => m.body).sort(), ['a', 'b', 'c'].filter((b) => b !== hidden?.body).sort())
  clock.advance(101_000)
  const back = await drain(queue)
  t.same(back.map((m) => [m.messageId, m.receiveCount]), [[hidden?.messageId, 2]], 'the hidden one kept its window and count')
  t.equal(live.length, 3)
})

t.test('thousands of messages: sent concurrently, each received once', async (t) => {
  const { root, clock } = await fixture(t)
  const queue = await EmbeddedQueue.open({ dir: join(root, 'jobs'), clock })
  t.teardown(() => queue.close())
  const sent = await Promise.all(Array.from({ length: 3000 }, (_, i) => queue.send(`job ${i}`)))
  const seen = new Set<string>()
  for (;;) {
    const batch = await queue.receive({ max: 10, visibilitySeconds: 60 })
    if (batch.length === 0) break
    for (const m of batch) seen.add(m.messageId)
    await Promise.all(batch.map((m) => queue.delete(m.receiptHandle)))
  }
  t.equal(seen.size, sent.length)
  t.same(await queue.receive({ max: 10, visibilitySeconds: 60 }), [])
})

t.test('embedded specifics of receipts and visibility', async (t) => {
  const { root, clock } = await fixture(t)
  const queue = await EmbeddedQueue.open({ dir: join(root, 'jobs'), clock })
  t.teardown(() => queue.close())

  await queue.send('x')
  const [first] = await queue.receive({ max: 1, visibilitySeconds: 0 })
  const [second] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  await rejectsWithReason(t, queue.delete(first!.receiptHandle), QueueFailureReason.RECEIPT_HANDLE_STALE, 'a stale delete is refused')
  await rejectsWithReason(t, queue.delete('not-a-receipt'), QueueFailureReason.RECEIPT_HANDLE_INVALID)
  await rejectsWithReason(t, queue.changeVisibility('', 10), QueueFailureReason.RECEIPT_HANDLE_INVALID)

  // SQS's ceiling: twelve hours from the receive, however often renewed.
  clock.advance(11 * 3600_000)
  await queue.changeVisibility(second!.receiptHandle, 3600)
  await rejectsWithReason(t, queue.changeVisibility(second!.receiptHandle, 3601), QueueFailureReason.VISIBILITY_LIMIT)

  await queue.delete(second!.receiptHandle)
  await t.resolves(queue.delete(second!.receiptHandle), 'deleting an already deleted message succeeds, as on SQS')
  await rejectsWithReason(t, queue.changeVisibility(second!.receiptHandle, 10), QueueFailureReason.RECEIPT_HANDLE_STALE)

  const { messageId } = await queue.send('delayed', { delaySeconds: 60 })
  t.same(await queue.receive({ max: 1, visibilitySeconds: 30 }), [], 'hidden while delayed')
  clock.advance(60_000)
  t.equal((await queue.receive({ max: 1, visibilitySeconds: 30 }))[0]?.messageId, messageId)
})

t.test('dead-lettered messages keep their id; attributes without redrive are empty', async (t) => {
  const { root, clock } = await fixture(t)
  const deadLetter = await EmbeddedQueue.open({ dir: join(root, 'dlq'), name: 'mirror-dead-letter', clock })
  const queue = await EmbeddedQueue.open({ dir: join(root, 'jobs'), clock, redrive: { maxReceiveCount: 1, deadLetterQueue: deadLetter } })
  t.teardown(async () => { await queue.close(); await deadLetter.close() })
  t.same(await queue.attributes(), { redrive: { maxReceiveCount: 1, deadLetterTarget: 'mirror-dead-letter' } })
  t.same(await deadLetter.attributes(), {})
  const { messageId } = await queue.send('poison')
  await queue.receive({ max: 1, visibilitySeconds: 0 })
  t.same(await queue.receive({ max: 1, visibilitySeconds: 0 }), [])
  const [dead] = await deadLetter.receive({ max: 1, visibilitySeconds: 30 })
  t.match(dead, { messageId, body: 'poison', receiveCount: 1 })
})

t.test('one process per folder; close ends long polls; a closed queue refuses work', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  const queue = await EmbeddedQueue.open({ dir, clock })
  await rejectsWithReason(t, EmbeddedQueue.open({ dir, clock }), QueueFailureReason.LOCKED, 'a second open of a held folder is refused')
  const polling = queue.receive({ max: 1, visibilitySeconds: 30, waitSeconds: 20 })
  await new Promise((resolve) => setImmediate(resolve))
  await queue.close()
  t.same(await polling, [], 'the long poll ended with nothing')
  await rejectsWithReason(t, queue.send('late'), QueueFailureReason.UNAVAILABLE)
  await t.resolves(EmbeddedQueue.open({ dir, clock }).then((reopened) => reopened.close()), 'the folder is free again after close')
})

t.test('EmbeddedQueue guards its options', async (t) => {
  const { root } = await fixture(t)
  await t.rejects(EmbeddedQueue.open({ dir: '' }), TypeError)
  const dlq = await EmbeddedQueue.open({ dir: join(root, 'dlq') })
  t.teardown(() => dlq.close())
  await t.rejects(EmbeddedQueue.open({ dir: join(root, 'q'), redrive: { maxReceiveCount: 0, deadLetterQueue: dlq } }), TypeError)
  await t.rejects(EmbeddedQueue.open({ dir: join(root, 'dlq'), redrive: { maxReceiveCount: 3, deadLetterQueue: dlq } }), TypeError)
})

t.test('a journal that cannot be read refuses the open with a message naming the file and the cause', async (t) => {
  const { root, clock } = await fixture(t)
  const dir = join(root, 'jobs')
  await mkdir(join(dir, JOURNAL_FILE), { recursive: true })
  const refusal = await EmbeddedQueue.open({ dir, clock }).then(() => undefined, (error: unknown) => error as ServiceError)
  t.equal(refusal?.code, 'QUEUE_FAILURE')
  t.match(refusal?.message, join(dir, JOURNAL_FILE), 'the file is named')
  t.match(refusal?.message, /EISDIR/, 'and the cause')
  // The folder's lock was returned: once the journal is a file again the queue opens.
  await rm(join(dir, JOURNAL_FILE), { recursive: true })
  const queue = await EmbeddedQueue.open({ dir, clock })
  await queue.close()
})
