/**
 * The embedded queue's bounds (issue 12): the body limit, de-duplication of
 * pending messages by key, and the bound in jobs and bytes.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { EmbeddedQueueOptions } from '../../engine/queue/embedded-queue.js'
import { DEAD_LETTERS_DROPPED, EMBEDDED_QUEUE_BOUNDS, QUEUE_FULL, QUEUE_ROOM_AGAIN } from '../../engine/queue/embedded-queue-bounds.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'
import type { QueueMessage } from '../../engine/queue/queue.js'
import { rejectsWithReason } from './queue.suite.js'

async function open(t: Test, options: Partial<EmbeddedQueueOptions> = {}): Promise<{ queue: EmbeddedQueue, dir: string, reopen: (more?: Partial<EmbeddedQueueOptions>) => Promise<EmbeddedQueue> }> {
  const root = await mkdtemp(join(tmpdir(), 'queue-bounds-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'jobs')
  let queue = await EmbeddedQueue.open({ dir, ...options })
  t.teardown(() => queue.close())
  return {
    queue, dir,
    reopen: async (more = {}) => {
      await queue.close()
      queue = await EmbeddedQueue.open({ dir, ...options, ...more })
      return queue
    },
  }
}

async function drain(queue: EmbeddedQueue): Promise<QueueMessage[]> {
  const all: QueueMessage[] = []
  for (;;) {
    const batch = await queue.receive({ max: 10, visibilitySeconds: 300 })
    if (batch.length === 0) return all
    all.push(...batch)
  }
}

t.test('a body over maxBodyBytes is refused as too-large and counted; the default is 8 KiB', async (t) => {
  t.equal(EMBEDDED_QUEUE_BOUNDS.maxBodyBytes, 8192)
  const { queue } = await open(t)
  await t.resolves(queue.send('x'.repeat(8192)), 'exactly the limit is taken')
  await rejectsWithReason(t, queue.send('x'.repeat(8193)), QueueFailureReason.TOO_LARGE)
  // Counted in UTF-8 bytes, not characters.
  await rejectsWithReason(t, queue.send('é'.repeat(4097)), QueueFailureReason.TOO_LARGE, 'multi-byte characters count as bytes')
  await rejectsWithReason(t, queue.send('x'.repeat(262_145)), QueueFailureReason.INVALID_ARGUMENT, 'over SQS\'s own limit: refused as SQS refuses it')
  t.match(queue.stats(), { jobs: 1, refusedTooLarge: 2 })
})

t.test('dedupKey: a pending message stands in for a send with its key, until it is deleted', async (t) => {
  const clock = new ManualClock()
  const { queue } = await open(t, { clock })
  const first = await queue.send('artifact a', { dedupKey: 'a' })
  t.notOk(first.deduplicated)
  t.same(await queue.send('artifact a again', { dedupKey: 'a' }), { messageId: first.messageId, deduplicated: true })
  const other = await queue.send('artifact b', { dedupKey: 'b' })
  t.not(other.messageId, first.messageId, 'another key is another message')
  await queue.send('no key')
  await queue.send('no key')
  const [received] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  t.equal(received?.messageId, first.messageId)
  t.same(await queue.send('in flight', { dedupKey: 'a' }), { messageId: first.messageId, deduplicated: true }, 'in flight is still pending')
  await queue.delete(received!.receiptHandle)
  const after = await queue.send('artifact a after delete', { dedupKey: 'a' })
  t.notOk(after.deduplicated, 'after the delete the key is free')
  t.not(after.messageId, first.messageId)
  t.match(queue.stats(), { jobs: 4, sent: 5, deduplicated: 2 })
  t.same((await drain(queue)).map((m) => m.body), ['artifact b', 'no key', 'no key', 'artifact a after delete'])
})

t.test('dedupKey survives reopen and compaction', async (t) => {
  const { queue, reopen } = await open(t, { compactionFloor: 8 })
  const { messageId } = await queue.send('keyed', { dedupKey: 'pkg@1.0.0' })
  // Garbage enough to compact: sends and deletes of other jobs.
  for (let i = 0; i < 20; i++) {
    await queue.send(`filler ${i}`)
    const batch = await queue.receive({ max: 10, visibilitySeconds: 30 })
    for (const m of batch) if (m.messageId !== messageId) await queue.delete(m.receiptHandle)
  }
  t.ok(queue.stats().compactions > 0, 'it compacted')
  const reopened = await reopen()
  t.same(await reopened.send('keyed again', { dedupKey: 'pkg@1.0.0' }), { messageId, deduplicated: true })
  t.equal(reopened.stats().jobs, 1)
})

t.test('dedupKey is checked as SQS checks MessageDeduplicationId', async (t) => {
  const { queue } = await open(t)
  for (const key of ['', 'has space', 'x'.repeat(129), 'ünicode']) {
    await rejectsWithReason(t, queue.send('x', { dedupKey: key }), QueueFailureReason.INVALID_ARGUMENT, JSON.stringify(key).slice(0, 20))
  }
  await t.resolves(queue.send('x', { dedupKey: 'x'.repeat(128) }))
})

t.test('the bound in jobs: new sends are dropped and counted, logged once per episode, the oldest kept', async (t) => {
  const logger = new RecordingLogger()
  const { queue, reopen } = await open(t, { maxJobs: 3, logger })
  for (const body of ['one', 'two', 'three']) await queue.send(body)
  for (const body of ['four', 'five']) await rejectsWithReason(t, queue.send(body), QueueFailureReason.FULL)
  await rejectsWithReason(t, queue.send('keyed', { dedupKey: 'k' }), QueueFailureReason.FULL, 'a keyed send without a pending twin is dropped too')
  t.equal(logger.find(QUEUE_FULL).length, 1, 'one warning for the episode')
  t.equal(logger.find(QUEUE_FULL)[0]?.level, 'warn')
  t.match(queue.stats(), { jobs: 3, droppedFull: 3 })
  t.match(queue.health(), { writable: true, full: true })
  const [oldest] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  t.equal(oldest?.body, 'one')
  await queue.delete(oldest!.receiptHandle)
  await queue.send('six')
  t.match(logger.find(QUEUE_ROOM_AGAIN), [{ level: 'info', data: { dropped: 3 } }], 'room again, with what the episode dropped')
  t.match(queue.health(), { full: false })
  await rejectsWithReason(t, queue.send('seven'), QueueFailureReason.FULL)
  t.equal(logger.find(QUEUE_FULL).length, 2, 'a new episode, a new warning')
  const reopened = await reopen()
  t.same((await drain(reopened)).map((m) => m.body), ['two', 'three', 'six'])
})

t.test('the bound in bytes', async (t) => {
  const { queue } = await open(t, { maxBodyBytes: 100, maxBytes: 250 })
  await queue.send('a'.repeat(100))
  await queue.send('b'.repeat(100))
  await rejectsWithReason(t, queue.send('c'.repeat(51)), QueueFailureReason.FULL, '251 bytes would not fit')
  await t.resolves(queue.send('d'.repeat(50)), '250 bytes fit')
  t.match(queue.stats(), { jobs: 3, bytes: 250, droppedFull: 1 })
})

t.test('a full dead-letter queue drops the dead letters, logged at error and counted, and the source keeps working', async (t) => {
  const logger = new RecordingLogger()
  const clock = new ManualClock()
  const dlq = await open(t, { maxJobs: 1, logger, clock })
  const { queue } = await open(t, { clock, redrive: { maxReceiveCount: 1, deadLetterQueue: dlq.queue } })
  await queue.send('poison 1')
  await queue.send('poison 2')
  await queue.send('poison 3')
  t.equal((await queue.receive({ max: 10, visibilitySeconds: 0 })).length, 3, 'each received once: its whole budget')
  t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'the receive that dead-letters them succeeds')
  t.equal(queue.stats().jobs, 0, 'the source holds none of them')
  await t.resolves(queue.send('next'), 'and takes work')
  t.equal(dlq.queue.stats().jobs, 1)
  t.match(logger.find(DEAD_LETTERS_DROPPED), [{ level: 'error', data: { dropped: 2 } }])
  t.equal(dlq.queue.stats().deadLettersDropped, 2)
})

t.test('bound options are guarded', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'queue-bounds-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const dir = join(root, 'q')
  await t.rejects(EmbeddedQueue.open({ dir, maxBodyBytes: 0 }), TypeError)
  await t.rejects(EmbeddedQueue.open({ dir, maxBodyBytes: 262_145 }), TypeError)
  await t.rejects(EmbeddedQueue.open({ dir, maxJobs: 1.5 }), TypeError)
  await t.rejects(EmbeddedQueue.open({ dir, maxBodyBytes: 100, maxBytes: 99 }), TypeError)
})
