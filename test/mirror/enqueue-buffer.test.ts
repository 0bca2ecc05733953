/**
 * The proxy's enqueue buffer (engine/mirror/enqueue-buffer.ts, issue 30):
 * batches, one job per artifact while remembered, hold-and-retry while the
 * queue refuses, and a counted, error-logged loss only past its bound. The
 * queues here are scripted doubles of Queue.sendBatch; the same buffer in
 * front of a real SQS peer behind a fault relay is
 * test/mirror/enqueue-outage.test.ts.
 */
import t from 'tap'
import { ServiceError } from '../../engine/errors.js'
import { EnqueueBuffer, JOB_OVERHEAD_BYTES, MIRROR_JOBS_LOST, MIRROR_QUEUE_ACCEPTING, MIRROR_QUEUE_REFUSING } from '../../engine/mirror/enqueue-buffer.js'
import { LocalEnqueueMemory, type EnqueueMemory } from '../../engine/mirror/enqueue-memory.js'
import { encodeMirrorJob } from '../../engine/mirror/mirror-job.js'
import { QueueFailureReason, type SendBatchEntry, type SendBatchOutcome } from '../../engine/queue/queue.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { job } from './mirror-job-fixture.js'
import { waitFor } from './wait-for.js'

const until = (condition: () => boolean): Promise<void> => waitFor(condition, 'the enqueue buffer settles', 20_000)


const chargeOf = (n: number): number => 2 * Buffer.byteLength(encodeMirrorJob(job(n))) + JOB_OVERHEAD_BYTES
/** What a job of two-digit number is charged. */
const CHARGE = chargeOf(10)

/** A queue that records every batch; refuses (`unavailable`) while `down`; answers a batch only when `gate` lets it. */
class ScriptedQueue {
  down = false
  /** Bodies the queue took, in order. */
  readonly taken: string[] = []
  readonly batches: number[] = []
  inFlight = 0
  maxInFlight = 0
  /** Per-body outcome override (a refusal for good). */
  refuse: ((body: string) => ServiceError | undefined) | undefined
  #held: (() => void)[] = []
  holding = false

  sendBatch = async (entries: readonly SendBatchEntry[]): Promise<SendBatchOutcome[]> => {
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    try {
      if (this.holding) await new Promise<void>((resolve) => this.#held.push(resolve))
      else await new Promise((resolve) => setImmediate(resolve))
      this.batches.push(entries.length)
      if (this.down) throw new ServiceError('QUEUE_FAILURE', { message: 'refused', data: { reason: QueueFailureReason.UNAVAILABLE, transport: 'ECONNREFUSED' } })
      return entries.map((e) => {
        const failure = this.refuse?.(e.body)
        if (failure !== undefined) return { failure }
        this.taken.push(e.body)
        return { messageId: String(this.taken.length) }
      })
    } finally {
      this.inFlight--
    }
  }

  release(): void {
    this.holding = false
    for (const go of this.#held.splice(0)) go()
  }
}

function lostLines(logger: RecordingLogger): { lost: number, reasons: Record<string, number>, level: string }[] {
  return logger.find(MIRROR_JOBS_LOST).map((r) => ({ level: r.level, lost: Number(r.data?.['lost']), reasons: r.data?.['reasons'] as Record<string, number> }))
}

t.test('jobs that arrive while a send is on its way leave together, ten to a batch', async (t) => {
  const queue = new ScriptedQueue()
  const buffer = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, batchesInFlight: 1 })
  queue.holding = true
  await buffer.enqueue(job(0))
  for (let n = 1; n <= 25; n++) await buffer.enqueue(job(n))
  t.equal(buffer.stats().buffered, 26, 'every job held while the first send waits')
  queue.release()
  await until(() => buffer.stats().buffered === 0)
  t.same(queue.batches, [1, 10, 10, 5], 'one round trip takes up to ten waiting jobs')
  t.equal(new Set(queue.taken).size, 26)
  t.match(buffer.stats(), { sent: 26, dropped: 0, failed: 0, bufferedBytes: 0 })
})

t.test('a refusing queue: every job held and retried with backoff, one probe at a time; nothing lost, nothing sent twice', async (t) => {
  const queue = new ScriptedQueue()
  const logger = new RecordingLogger()
  const buffer = new EnqueueBuffer({ queue, logger, maxBytes: 1024 * 1024, retryBaseMs: 5, retryMaxMs: 20 })
  queue.down = true
  for (let round = 0; round < 4; round++) for (let n = 0; n < 60; n++) await buffer.enqueue(job(n))
  await until(() => buffer.stats().retried >= 60 * 3)
  const during = buffer.stats()
  t.match(during, { buffered: 60, sent: 0, dropped: 0, recent: 180 }, 'each artifact held once; its other downloads add nothing')
  t.equal(during.bufferedBytes, Array.from({ length: 60 }, (_, n) => chargeOf(n)).reduce((a, b) => a + b), 'each charged twice its body plus the overhead')
  t.equal(logger.find(MIRROR_QUEUE_REFUSING).length, 1, 'one warning for the episode')
  t.match(logger.find(MIRROR_QUEUE_REFUSING)[0], { level: 'warn', data: { reason: 'unavailable', transport: 'ECONNREFUSED', buffered: 60 } })
  const maxDuring = queue.maxInFlight
  t.ok(maxDuring <= 16, 'the first round, then single probes')
  queue.maxInFlight = 0
  const probes = queue.batches.length
  await until(() => queue.batches.length > probes + 5)
  t.equal(queue.maxInFlight, 1, 'one batch probes at a time while the queue refuses')
  queue.down = false
  await until(() => buffer.stats().buffered === 0)
  t.equal(queue.taken.length, 60, 'every job sent once')
  t.equal(new Set(queue.taken).size, 60)
  t.match(buffer.stats(), { sent: 60, dropped: 0, failed: 0 })
  t.equal(logger.find(MIRROR_QUEUE_ACCEPTING).length, 1, 'one info line when it takes jobs again')
  t.same(lostLines(logger), [], 'no loss, no error')
})

t.test('one job per artifact while the memory remembers it; again after its time to live', async (t) => {
  const clock = new ManualClock()
  const queue = new ScriptedQueue()
  const memory = new LocalEnqueueMemory({ maxEntries: 100, clock })
  const buffer = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory, memoryTtlMs: 300_000 })
  await buffer.enqueue(job(1))
  await until(() => buffer.stats().sent === 1)
  for (let i = 0; i < 50; i++) await buffer.enqueue(job(1))
  clock.advance(299_000)
  await buffer.enqueue(job(1))
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.match(buffer.stats(), { sent: 1, recent: 51 }, 'sent once: later downloads within the time to live add no job')
  clock.advance(2_000)
  await buffer.enqueue(job(1))
  await until(() => buffer.stats().sent === 2)
  t.equal(queue.taken.length, 2, 'remembered no longer: the next download enqueues again')
})

t.test('a memory that fails lets the job through (a duplicate, never a loss); a shared memory answers for the tier', async (t) => {
  const queue = new ScriptedQueue()
  const failing: EnqueueMemory = { claim: async () => { throw new Error('cache unreachable') }, release: async () => {} }
  const buffer = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory: failing, memoryTtlMs: 60_000 })
  await buffer.enqueue(job(1))
  await until(() => buffer.stats().sent === 1)
  await buffer.enqueue(job(1))
  await until(() => buffer.stats().sent === 2)
  // Two proxies over one memory: the second proxy's download of the same artifact adds nothing.
  const shared = new LocalEnqueueMemory({ maxEntries: 100 })
  const a = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory: shared, memoryTtlMs: 60_000 })
  const b = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory: shared, memoryTtlMs: 60_000 })
  await a.enqueue(job(7))
  await b.enqueue(job(7))
  await until(() => a.stats().sent === 1)
  t.match(b.stats(), { sent: 0, recent: 1 })
})

t.test('past the bound: the new job is lost, counted, logged at error (paced), its claim given back', async (t) => {
  const clock = new ManualClock()
  const queue = new ScriptedQueue()
  const logger = new RecordingLogger()
  const memory = new LocalEnqueueMemory({ maxEntries: 100, clock })
  const buffer = new EnqueueBuffer({ queue, logger, clock, maxBytes: 3 * CHARGE, memory, memoryTtlMs: 300_000, retryBaseMs: 5, retryMaxMs: 10, lossLogIntervalMs: 60_000 })
  queue.down = true
  for (let n = 10; n < 20; n++) await buffer.enqueue(job(n))
  t.match(buffer.stats(), { buffered: 3, dropped: 7, bufferedBytes: 3 * CHARGE })
  t.ok(buffer.pastShare(), 'past its share of the bound')
  const lines = logger.find(MIRROR_JOBS_LOST)
  t.equal(lines.length, 1, 'the first loss at once; the rest wait for the next line')
  t.match(lines[0], { level: 'error', data: { lost: 1, reasons: { full: 1 }, package: 'widget-13', version: '1.0.0', buffered: 3, maxBytes: 3 * CHARGE } })
  t.equal(memory.size, 3, 'a lost job leaves no claim behind')
  await until(() => buffer.stats().retried >= 3)
  queue.down = false
  await until(() => buffer.stats().buffered === 0)
  t.match(buffer.stats(), { sent: 3, dropped: 7 }, 'the held jobs went once the queue took jobs again')
  // The next download of a lost artifact enqueues it: nothing remembered it.
  for (let n = 13; n < 20; n++) {
    await buffer.enqueue(job(n))
    await until(() => buffer.stats().buffered === 0)
  }
  t.equal(buffer.stats().sent, 10)
  t.equal(new Set(queue.taken).size, 10)
  await buffer.close(1_000)
  t.same(lostLines(logger), [{ level: 'error', lost: 1, reasons: { full: 1 } }, { level: 'error', lost: 6, reasons: { full: 6 } }], 'every loss in some line, at error')
})

t.test('a refusal for good is counted failed and logged; the other jobs of the batch are sent', async (t) => {
  const queue = new ScriptedQueue()
  const logger = new RecordingLogger()
  const poisoned = encodeMirrorJob(job(2))
  queue.refuse = (body) => body === poisoned ? new ServiceError('QUEUE_FAILURE', { message: 'sender fault', data: { reason: QueueFailureReason.INVALID_ARGUMENT } }) : undefined
  const buffer = new EnqueueBuffer({ queue, logger, maxBytes: 1024 * 1024 })
  queue.holding = true
  for (let n = 1; n <= 3; n++) await buffer.enqueue(job(n))
  queue.release()
  await until(() => buffer.stats().buffered === 0)
  t.match(buffer.stats(), { sent: 2, failed: 1, retried: 0 })
  t.same(lostLines(logger), [{ level: 'error', lost: 1, reasons: { refused: 1 } }])
  await buffer.close(100)
})

t.test('close: held jobs are sent within the grace; what is still held at its end is lost, counted and logged', async (t) => {
  const queue = new ScriptedQueue()
  const logger = new RecordingLogger()
  const buffer = new EnqueueBuffer({ queue, logger, maxBytes: 1024 * 1024, retryBaseMs: 5_000, retryMaxMs: 5_000 })
  queue.down = true
  for (let n = 0; n < 5; n++) await buffer.enqueue(job(n))
  await until(() => buffer.stats().retried >= 5)
  // The drain cuts the retry wait short; the queue refuses still, so the grace ends with them held.
  await buffer.close(50)
  t.match(buffer.stats(), { buffered: 0, dropped: 5, sent: 0 })
  const lines = lostLines(logger)
  t.ok(lines.every((l) => l.level === 'error' && l.reasons['shutdown'] === l.lost), 'at error, every loss at shutdown')
  t.equal(lines.reduce((n, l) => n + l.lost, 0), 5, 'every loss in some line (close flushes the paced count)')
  await buffer.enqueue(job(9))
  t.equal(buffer.stats().dropped, 6, 'a job after close is lost at once')

  const healthy = new ScriptedQueue()
  const drained = new EnqueueBuffer({ queue: healthy, logger: new RecordingLogger(), maxBytes: 1024 * 1024 })
  healthy.holding = true
  for (let n = 0; n < 5; n++) await drained.enqueue(job(n))
  const closing = drained.close(5_000)
  healthy.release()
  await closing
  t.match(drained.stats(), { sent: 5, dropped: 0 })
})

t.test('a job whose memory answers after the drain ended is lost and counted, not left held', async (t) => {
  const queue = new ScriptedQueue()
  const logger = new RecordingLogger()
  let answer: ((claimed: boolean) => void) | undefined
  const slow: EnqueueMemory = { claim: () => new Promise<boolean>((resolve) => { answer = resolve }), release: async () => {} }
  const buffer = new EnqueueBuffer({ queue, logger, maxBytes: 1024 * 1024, memory: slow, memoryTtlMs: 60_000 })
  const enqueued = buffer.enqueue(job(1))
  await until(() => answer !== undefined)
  await buffer.close(10)
  answer!(true)
  await enqueued
  t.match(buffer.stats(), { buffered: 0, bufferedBytes: 0, dropped: 1, sent: 0 })
  t.equal(lostLines(logger).reduce((n, l) => n + (l.reasons['shutdown'] ?? 0), 0), 1)
})

t.test('the local memory is bounded: the oldest claim goes first', async (t) => {
  const clock = new ManualClock()
  const memory = new LocalEnqueueMemory({ maxEntries: 3, clock })
  for (const key of ['a', 'b', 'c', 'd']) t.ok(await memory.claim(key, 1_000))
  t.equal(memory.size, 3)
  t.ok(await memory.claim('a', 1_000), 'the oldest was forgotten')
  t.notOk(await memory.claim('d', 1_000), 'a younger one stands')
  clock.advance(1_001)
  t.ok(await memory.claim('d', 1_000), 'an expired claim is claimed again')
  await memory.release('d')
  t.ok(await memory.claim('d', 1_000), 'a released claim is claimed again')
  t.throws(() => new LocalEnqueueMemory({ maxEntries: 0 }))
})
