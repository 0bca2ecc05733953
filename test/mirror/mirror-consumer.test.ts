/**
 * The consume loop on a real SQS peer (local-aws-sqs, PEERS.md) with a
 * scripted job runner standing in for the worker, so each SPEC.md 3.7
 * transition is driven on purpose: visibility renewal, the runner's
 * capacity, the give-up when renewal keeps failing, the budget discard,
 * dead-letter capture (a refused job's redelivery not tried again), the
 * undecodable payload, and the boot probe of the attributes.
 *
 * local-aws-sqs counts a ChangeMessageVisibility as a receive (PEERS.md):
 * the budget and dead-letter tests use jobs that end before any renewal.
 */
import { CreateQueueCommand } from '@aws-sdk/client-sqs'
import t from 'tap'
import type { Test } from 'tap'
import { ServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { MIRROR_JOB_DISCARDED, MIRROR_JOB_GIVEN_UP, MIRROR_JOB_REFUSED_BEFORE, MIRROR_JOB_UNDECODABLE, MirrorConsumer, type JobRunner } from '../../engine/mirror/mirror-consumer.js'
import { MirrorCounters } from '../../engine/mirror/mirror-counters.js'
import { encodeMirrorJob, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import type { MirrorOutcome } from '../../engine/mirror/job-outcomes.js'
import { QueueFailureReason, type Queue } from '../../engine/queue/queue.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { MIRROR_QUEUE_ATTRIBUTES_FAILED, MIRROR_QUEUE_NO_REDRIVE, receiveBudget } from '../../server/roles/mirror.js'
import { startSqs } from '../../bench/peers/sqs.js'
import { waitFor } from './wait-for.js'

const peer = await startSqs()
t.teardown(() => peer.stop())
const admin = peer.client()
let serial = 0

async function makeQueue(t: Test, redrive?: number): Promise<{ queue: SqsQueue, deadLetter: SqsQueue }> {
  const name = `consumer-${++serial}`
  const dlq = await admin.send(new CreateQueueCommand({ QueueName: `${name}-dead` }))
  const main = await admin.send(new CreateQueueCommand({
    QueueName: name,
    Attributes: redrive === undefined ? {} : { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: `arn:aws:sqs:${peer.region}:123456789012:${name}-dead`, maxReceiveCount: redrive }) },
  }))
  const queue = new SqsQueue({ url: main.QueueUrl!, client: peer.client() })
  const deadLetter = new SqsQueue({ url: dlq.QueueUrl!, client: peer.client() })
  t.teardown(async () => { await queue.close(); await deadLetter.close() })
  return { queue, deadLetter }
}

function job(name = 'pkg'): MirrorJob {
  return {
    url: `https://127.0.0.1:9/${name}/-/${name}-1.0.0.tgz`, package: name, version: '1.0.0', filename: `${name}-1.0.0.tgz`,
    integrity: `sha512-${Buffer.alloc(64, 1).toString('base64')}`, shasum: undefined, enqueuedAt: new Date().toISOString(),
  }
}

function consumer(t: Test, queue: Queue, worker: JobRunner, options: { maxReceiveCount?: number, visibilitySeconds?: number } = {}): { counters: MirrorCounters, logger: RecordingLogger, beats: () => number } {
  const counters = new MirrorCounters()
  const logger = new RecordingLogger()
  let beats = 0
  const c = new MirrorConsumer({
    queue, worker, counters, logger, concurrency: 2, maxReceiveCount: options.maxReceiveCount ?? 5,
    visibilitySeconds: options.visibilitySeconds ?? 30, waitSeconds: 1, receiveRetryMs: 100, onProgress: () => { beats++ },
  })
  c.start()
  t.teardown(() => c.stop(5_000))
  return { counters, logger, beats: () => beats }
}

const outcome = (result: MirrorOutcome['result'], disposition: MirrorOutcome['disposition']): MirrorOutcome => ({ result, disposition, reason: result })

t.test('a long job is renewed: no other receiver sees it past its first window, then it is deleted', async (t) => {
  const { queue } = await makeQueue(t)
  let finish!: () => void
  let markStarted!: () => void
  const started = new Promise<void>((resolve) => { markStarted = resolve })
  const worker: JobRunner = {
    process: () => { markStarted(); return new Promise((done) => { finish = () => done(outcome('mirrored', 'delete')) }) },
  }
  const { counters } = consumer(t, queue, worker, { visibilitySeconds: 2 })
  await queue.send(encodeMirrorJob(job()))
  await started
  // Past the first 2 s window: without renewal the message would be visible again.
  await new Promise((resolve) => setTimeout(resolve, 3_500))
  const other = new SqsQueue({ url: queue.url, client: peer.client() })
  t.teardown(() => other.close())
  t.same(await other.receive({ max: 10, visibilitySeconds: 30 }), [], 'still hidden while the job runs')
  finish()
  await new Promise((resolve) => setTimeout(resolve, 2_500))
  t.same(await other.receive({ max: 10, visibilitySeconds: 30 }), [], 'deleted once the job succeeded')
  t.equal(counters.get('mirrored'), 1, 'counted once as mirrored')
})

t.test('the runner\'s capacity bounds the jobs at once; a capacity that grows wakes the loop', async (t) => {
  const { queue } = await makeQueue(t)
  let capacity = 1
  let grow: (() => void) | undefined
  let running = 0
  let peak = 0
  const finishers: Array<() => void> = []
  const worker: JobRunner = {
    capacity: () => capacity,
    onCapacity: (listener) => { grow = listener },
    process: () => {
      running++
      peak = Math.max(peak, running)
      return new Promise((resolve) => { finishers.push(() => { running--; resolve(outcome('mirrored', 'delete')) }) })
    },
  }
  const counters = new MirrorCounters()
  const c = new MirrorConsumer({ queue, worker, counters, logger: new RecordingLogger(), concurrency: 4, maxReceiveCount: 5, visibilitySeconds: 30, waitSeconds: 1, receiveRetryMs: 100 })
  c.start()
  t.teardown(() => c.stop(5_000))
  for (let i = 0; i < 4; i++) await queue.send(encodeMirrorJob(job(`cap-${i}`)))
  await waitFor(() => running === 1, 'one job runs')
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal(peak, 1, 'no second job while the capacity is 1')
  capacity = 3
  grow?.()
  await waitFor(() => running === 3, 'three jobs run once the capacity grew')
  t.equal(peak, 3, 'never above the capacity')
  for (const finish of finishers.splice(0)) finish()
  await waitFor(() => running === 1, 'the fourth job')
  for (const finish of finishers.splice(0)) finish()
  await waitFor(() => counters.get('mirrored') === 4, 'all four mirrored')
})

t.test('a refused job is not tried again when its message comes back: the dead-letter queue takes it, one count', async (t) => {
  const { queue, deadLetter } = await makeQueue(t, 2)
  const budget = await receiveBudget(queue, 10, new RecordingLogger(), queue.url)
  let runs = 0
  const worker: JobRunner = { process: async () => { runs++; return outcome('refused', 'leave') } }
  const { counters, logger } = consumer(t, queue, worker, { maxReceiveCount: budget, visibilitySeconds: 2 })
  await queue.send(encodeMirrorJob(job('half-written')))
  let dead: Awaited<ReturnType<Queue['receive']>> = []
  await waitFor(async () => (dead = await deadLetter.receive({ max: 1, visibilitySeconds: 30 })).length === 1, 'the dead-letter queue holds the job')
  t.match(JSON.parse(dead[0]!.body), { package: 'half-written' })
  t.equal(runs, 1, 'tried once; the redelivery was not tried again')
  t.equal(counters.get('refused'), 1, 'counted once')
  t.match(logger.find(MIRROR_JOB_REFUSED_BEFORE), [{ level: 'debug', data: { package: 'half-written', receiveCount: 2 } }])
  t.same(logger.find(MIRROR_JOB_DISCARDED), [])
})

t.test('renewal that keeps failing gives the running job up, with the transport reason, and leaves the message', async (t) => {
  const { queue } = await makeQueue(t)
  // The renewal path fails as a lost network would; everything else reaches SQS.
  const failing: Queue = Object.create(queue) as Queue
  failing.changeVisibility = async () => {
    throw new ServiceError('QUEUE_FAILURE', { message: 'SQS ChangeMessageVisibility failed', data: { reason: QueueFailureReason.UNAVAILABLE, transport: 'TimeoutError' } })
  }
  failing.receive = (o) => queue.receive(o)
  failing.delete = (h) => queue.delete(h)
  let cancelled = false
  const worker: JobRunner = {
    process: (_job, signal) => new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => { cancelled = true; reject(signal.reason) }, { once: true })
    }),
  }
  const { counters, logger } = consumer(t, failing, worker, { visibilitySeconds: 3 })
  await queue.send(encodeMirrorJob(job()))
  await waitFor(() => counters.get('given_up') === 1, 'the job was given up')
  t.ok(cancelled, 'the running job was cancelled')
  const [line] = logger.find(MIRROR_JOB_GIVEN_UP)
  t.match(line, { level: 'warn', data: { package: 'pkg', transport: 'TimeoutError' } })
  t.equal(counters.get('mirrored') + counters.get('discarded'), 0, 'neither deleted nor discarded')
})

t.test('without a redrive policy: a warning, and a job that cannot succeed is discarded at the budget', async (t) => {
  const { queue } = await makeQueue(t)
  const boot = new RecordingLogger()
  const budget = await receiveBudget(queue, 2, boot, queue.url)
  t.equal(budget, 2, 'SERVICE_QUEUE__MAX_RECEIVE_COUNT')
  t.match(boot.find(MIRROR_QUEUE_NO_REDRIVE), [{ level: 'warn' }])
  const receives: number[] = []
  const worker: JobRunner = { process: async () => { receives.push(1); return outcome('too_large', 'leave') } }
  const { counters, logger } = consumer(t, queue, worker, { maxReceiveCount: budget, visibilitySeconds: 2 })
  await queue.send(encodeMirrorJob(job('big')))
  await waitFor(() => counters.get('discarded') === 1, 'the job was discarded')
  t.equal(receives.length, 2, 'run once per delivery, up to the budget')
  t.equal(counters.get('too_large'), 1, 'the first failure counted as itself')
  const [line] = logger.find(MIRROR_JOB_DISCARDED)
  t.match(line, { level: 'error', data: { package: 'big', version: '1.0.0', reason: 'too_large', budget: 2 } })
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'gone from the queue')
})

t.test('with a redrive policy the budget is one above it: the dead-letter queue captures first', async (t) => {
  const { queue, deadLetter } = await makeQueue(t, 2)
  const budget = await receiveBudget(queue, 10, new RecordingLogger(), queue.url)
  t.equal(budget, 3)
  const worker: JobRunner = { process: async () => outcome('publish_refused', 'leave') }
  const { counters, logger } = consumer(t, queue, worker, { maxReceiveCount: budget, visibilitySeconds: 2 })
  await queue.send(encodeMirrorJob(job('refused')))
  let dead: Awaited<ReturnType<Queue['receive']>> = []
  await waitFor(async () => (dead = await deadLetter.receive({ max: 1, visibilitySeconds: 30 })).length === 1, 'the dead-letter queue holds the job')
  t.match(JSON.parse(dead[0]!.body), { package: 'refused' })
  t.equal(counters.get('publish_refused'), 2, 'two deliveries, each left undeleted')
  t.equal(counters.get('discarded'), 0, 'never discarded by the worker')
  t.same(logger.find(MIRROR_JOB_DISCARDED), [])
})

t.test('an undecodable payload is rejected before the worker, at debug and without the payload', async (t) => {
  const { queue } = await makeQueue(t)
  let ran = 0
  const { counters, logger, beats } = consumer(t, queue, { process: async () => { ran++; return outcome('mirrored', 'delete') } })
  await queue.send('{"v":1,"url":"http://not-https/secret-token-like"}')
  await waitFor(() => logger.find(MIRROR_JOB_UNDECODABLE).length === 1, 'the payload was rejected')
  const [line] = logger.find(MIRROR_JOB_UNDECODABLE)
  t.equal(line?.level, 'debug')
  t.notMatch(JSON.stringify(line), /secret-token-like/, 'the payload is not logged')
  t.equal(ran, 0)
  t.same(Object.values(counters.snapshot()).filter((n) => n > 0), [], 'no counter moved')
  t.ok(beats() >= 1, 'the successful poll beat the heartbeat')
})

t.test('a failed attribute probe is a warning naming the permission; the budget falls back', async (t) => {
  const missing = new SqsQueue({ url: `${peer.endpoint}/123456789012/never-created`, client: peer.client() })
  t.teardown(() => missing.close())
  const logger = new RecordingLogger()
  t.equal(await receiveBudget(missing, 4, logger, missing.url), 4)
  t.match(logger.find(MIRROR_QUEUE_ATTRIBUTES_FAILED), [{ level: 'warn', data: { permission: 'sqs:GetQueueAttributes' } }])
})

t.test('the drain: no receive after stop, a running job finishes and is deleted, one past the bound is handed back', async (t) => {
  const { queue } = await makeQueue(t)
  let stopping = false
  let receivesWhileStopping = 0
  const counted: Queue = {
    send: (body, options) => queue.send(body, options),
    sendBatch: (entries) => queue.sendBatch(entries),
    receive: (options) => { if (stopping) receivesWhileStopping++; return queue.receive(options) },
    changeVisibility: (handle, seconds) => queue.changeVisibility(handle, seconds),
    delete: (handle) => queue.delete(handle),
    attributes: () => queue.attributes(),
    close: () => queue.close(),
  }
  const finishers = new Map<string, () => void>()
  const worker: JobRunner = {
    process: (j, signal) => new Promise((resolve, reject) => {
      finishers.set(j.package, () => resolve(outcome('mirrored', 'delete')))
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true })
    }),
  }
  const counters = new MirrorCounters()
  const c = new MirrorConsumer({ queue: counted, worker, counters, logger: new RecordingLogger(), concurrency: 2, maxReceiveCount: 5, visibilitySeconds: 300, waitSeconds: 1, receiveRetryMs: 100 })
  c.start()
  await queue.send(encodeMirrorJob(job('finishes')))
  await queue.send(encodeMirrorJob(job('outlives')))
  await waitFor(() => finishers.size === 2, 'both jobs running')

  stopping = true
  let stopped = false
  const drain = c.stop(3_000).then(() => { stopped = true })
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal(receivesWhileStopping, 0, 'no receive once the drain started')
  t.notOk(stopped, 'the drain waits for running jobs')
  finishers.get('finishes')?.()
  await drain
  t.equal(counters.get('mirrored'), 1, 'the job running at the drain finished')

  // A 300 s window: only the hand-back can make the cancelled job visible within the test.
  const other = new SqsQueue({ url: queue.url, client: peer.client() })
  t.teardown(() => other.close())
  const left = await other.receive({ max: 10, visibilitySeconds: 30, waitSeconds: 1 })
  t.same(left.map((m) => (JSON.parse(m.body) as { package: string }).package), ['outlives'], 'the finished job deleted, the cancelled one handed back')
})
