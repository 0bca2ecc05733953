/**
 * One job per artifact across the tier (issue 30): the proxies' enqueue
 * buffers over one recent-enqueue memory on a real redis-server
 * (test/peers/redis.ts), each with its own connection as each proxy process
 * has (server/roles/proxy.ts wires `sharedEnqueueMemory` when
 * `cache.backend` is `redis`). The queue is a recording double of
 * Queue.sendBatch: what is shown here is the memory, not the queue.
 */
import t from 'tap'
import { RedisBackend } from '../../engine/cache/redis-backend.js'
import { EnqueueBuffer, JOB_OVERHEAD_BYTES } from '../../engine/mirror/enqueue-buffer.js'
import { SHARED_ENQUEUE_CLAIM_PREFIX, sharedEnqueueMemory } from '../../engine/mirror/enqueue-memory.js'
import { encodeMirrorJob, mirrorJobKey } from '../../engine/mirror/mirror-job.js'
import type { SendBatchEntry, SendBatchOutcome } from '../../engine/queue/queue.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { startRedis } from '../peers/redis.js'
import { job } from './mirror-job-fixture.js'
import { waitFor } from './wait-for.js'

const PREFIX = `enq${process.pid}:`
const redis = await startRedis(t)


/** Every body the queue took, in order; `down` refuses every send (a queue outage that holds the jobs). */
class RecordingQueue {
  readonly taken: string[] = []
  down = false
  sendBatch = async (entries: readonly SendBatchEntry[]): Promise<SendBatchOutcome[]> => {
    await new Promise((resolve) => setImmediate(resolve))
    if (this.down) throw new Error('queue down')
    return entries.map((e) => {
      this.taken.push(e.body)
      return { messageId: String(this.taken.length) }
    })
  }
}

async function proxyBackend(timeoutMs = 1_000): Promise<RedisBackend> {
  const backend = new RedisBackend({ url: redis.url, keyPrefix: PREFIX, timeoutMs, stampTtlMs: 60_000, logger: new RecordingLogger() })
  await backend.connect()
  t.teardown(() => backend.close())
  return backend
}

t.test('three proxies, 30 artifacts each downloaded 5 times on every proxy: 30 jobs', async (t) => {
  const queue = new RecordingQueue()
  const buffers = await Promise.all([0, 1, 2].map(async () => new EnqueueBuffer({
    queue,
    logger: new RecordingLogger(),
    maxBytes: 1024 * 1024,
    memory: sharedEnqueueMemory(await proxyBackend()),
    memoryTtlMs: 300_000,
  })))
  const downloads: Promise<void>[] = []
  for (let round = 0; round < 5; round++) {
    for (let n = 0; n < 30; n++) for (const buffer of buffers) downloads.push(buffer.enqueue(job(n)))
  }
  await Promise.all(downloads)
  await waitFor(() => buffers.every((b) => b.stats().buffered === 0), 'the buffers drain', 20_000)
  t.equal(queue.taken.length, 30, 'one job per artifact across the tier')
  t.same(new Set(queue.taken.map((body) => JSON.parse(body).package)).size, 30, 'every artifact has its job')
  const recent = buffers.reduce((sum, b) => sum + b.stats().recent, 0)
  t.equal(recent, 30 * 5 * 3 - 30, 'every other download counted as recent')
  t.match(await redis.command('PTTL', `${PREFIX}c|${SHARED_ENQUEUE_CLAIM_PREFIX}${mirrorJobKey(job(0))}`), /^:\d+/, 'the claim lives on the server with its time to live')
})

t.test('a job lost past the bound gives its claim back tier-wide: the next download on another proxy enqueues it', async (t) => {
  const queue = new RecordingQueue()
  queue.down = true
  const charge = 2 * Buffer.byteLength(encodeMirrorJob(job(100))) + JOB_OVERHEAD_BYTES
  const small = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: charge, memory: sharedEnqueueMemory(await proxyBackend()), memoryTtlMs: 300_000, retryBaseMs: 5, retryMaxMs: 10 })
  await small.enqueue(job(100))
  await small.enqueue(job(101))
  t.match(small.stats(), { buffered: 1, dropped: 1 }, 'the second job did not fit: lost, counted')
  const key = `${PREFIX}c|${SHARED_ENQUEUE_CLAIM_PREFIX}${mirrorJobKey(job(101))}`
  await waitFor(async () => (await redis.command('EXISTS', key)).startsWith(':0'), 'the lost job\'s claim is given back', 10_000)
  const other = new RecordingQueue()
  const next = new EnqueueBuffer({ queue: other, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory: sharedEnqueueMemory(await proxyBackend()), memoryTtlMs: 300_000 })
  await next.enqueue(job(101))
  await waitFor(() => other.taken.length === 1, 'the other proxy enqueues it', 10_000)
  t.equal(JSON.parse(other.taken[0]!).package, 'widget-101')
  queue.down = false
  await small.close(5_000)
})

t.test('the server down: every job goes through (a duplicate at worst, never a loss)', async (t) => {
  const queue = new RecordingQueue()
  const buffer = new EnqueueBuffer({ queue, logger: new RecordingLogger(), maxBytes: 1024 * 1024, memory: sharedEnqueueMemory(await proxyBackend(200)), memoryTtlMs: 300_000 })
  await redis.kill()
  t.teardown(() => redis.start())
  // One after the other, so the buffer's own hold does not stand in for the memory.
  for (const [i, n] of [200, 200, 201].entries()) {
    await buffer.enqueue(job(n))
    await waitFor(() => queue.taken.length === i + 1, `job ${i + 1} sent`, 20_000)
  }
  t.same(queue.taken.map((body) => JSON.parse(body).package), ['widget-200', 'widget-200', 'widget-201'], 'the repeat is a duplicate, not a loss')
  t.equal(buffer.stats().dropped, 0)
})
