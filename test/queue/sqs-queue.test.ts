/**
 * The SQS queue against a real SQS peer (local-aws-sqs, PEERS.md): the
 * shared queue suite (STYLE.md rule 8), then what only this adapter does.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs'
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { QueueFailureReason } from '../../engine/queue/queue.js'
import { startSqs } from '../../bench/peers/sqs.js'
import { queueSuite, rejectsWithReason } from './queue.suite.js'

const peer = await startSqs()
t.teardown(() => peer.stop())
const admin = peer.client()
let serial = 0

async function queuePair(maxReceiveCount: number | undefined): Promise<{ queue: SqsQueue, deadLetter: SqsQueue }> {
  const name = `suite-${process.pid}-${++serial}`
  const dlq = await admin.send(new CreateQueueCommand({ QueueName: `${name}-dead` }))
  const arn = `arn:aws:sqs:${peer.region}:123456789012:${name}-dead`
  const main = await admin.send(new CreateQueueCommand({
    QueueName: name,
    Attributes: maxReceiveCount === undefined ? {} : { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount }) },
  }))
  return { queue: new SqsQueue({ url: main.QueueUrl!, client: peer.client() }), deadLetter: new SqsQueue({ url: dlq.QueueUrl!, client: peer.client() }) }
}

t.test('the shared queue suite, SQS on local-aws-sqs', async (t) => {
  queueSuite(t, async ({ maxReceiveCount }) => {
    const { queue, deadLetter } = await queuePair(maxReceiveCount)
    return {
      queue, deadLetter, deduplicates: false,
      elapse: (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000)),
      close: async () => { await queue.close(); await deadLetter.close() },
    }
  })
})

t.test('attributes: a queue without a redrive policy has none', async (t) => {
  const { queue, deadLetter } = await queuePair(undefined)
  t.teardown(async () => { await queue.close(); await deadLetter.close() })
  t.same(await queue.attributes(), {})
})

t.test('a failed call is a QUEUE_FAILURE naming the SDK error, never the body', async (t) => {
  const queue = new SqsQueue({ url: `${peer.endpoint}/123456789012/no-such-queue`, client: peer.client() })
  t.teardown(() => queue.close())
  try {
    await queue.send('secret-looking body')
    t.fail('resolved')
  } catch (error) {
    t.ok(isServiceError(error, 'QUEUE_FAILURE'))
    if (isServiceError(error)) {
      t.equal(error.data?.['action'], 'SendMessage')
      t.match(error.data?.['transport'], /QueueDoesNotExist|NonExistentQueue/)
      t.notMatch(JSON.stringify(error.data), /secret-looking/)
    }
  }
  await rejectsWithReason(t, queue.attributes(), QueueFailureReason.UNAVAILABLE)
})

t.test('a closed queue refuses work', async (t) => {
  const { queue, deadLetter } = await queuePair(3)
  await deadLetter.close()
  await queue.close()
  await rejectsWithReason(t, queue.send('x'), QueueFailureReason.UNAVAILABLE)
})

t.test('a FIFO queue de-duplicates by dedupKey (or the body) across sends and batches', async (t) => {
  const name = `fifo-${process.pid}-${++serial}.fifo`
  const created = await admin.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true' } }))
  const queue = new SqsQueue({ url: created.QueueUrl!, client: peer.client() })
  t.teardown(() => queue.close())
  const batch = await queue.sendBatch([{ body: 'artifact a', dedupKey: 'a' }, { body: 'artifact a, later', dedupKey: 'a' }, { body: 'artifact b', dedupKey: 'b' }])
  t.ok(batch.every((o) => o.failure === undefined), 'SQS accepts every entry')
  await queue.send('artifact a, once more', { dedupKey: 'a' })
  await queue.send('no key')
  await queue.send('no key')
  const seen: string[] = []
  for (let guard = 0; guard < 5; guard++) {
    const messages = await queue.receive({ max: 10, visibilitySeconds: 30 })
    seen.push(...messages.map((m) => m.body))
  }
  t.same(seen.sort(), ['artifact a', 'artifact b', 'no key'], 'one message per key, one per body without a key')
})

t.test('a send SQS does not answer fails unavailable after the send timeout', async (t) => {
  const held = new Set<Socket>()
  const silent = createServer((socket) => { held.add(socket); socket.on('error', () => {}) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of held) s.destroy(); return new Promise<void>((resolve) => silent.close(() => resolve())) })
  const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  const client = new SQSClient({ endpoint, region: peer.region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1 })
  t.teardown(() => client.destroy())
  const queue = new SqsQueue({ url: `${endpoint}/123456789012/silent`, client, sendTimeoutMs: 300 })
  const started = Date.now()
  await rejectsWithReason(t, queue.sendBatch([{ body: 'a' }, { body: 'b' }]), QueueFailureReason.UNAVAILABLE, 'the batch fails unavailable')
  await rejectsWithReason(t, queue.send('c'), QueueFailureReason.UNAVAILABLE, 'a single send too')
  t.ok(Date.now() - started < 5_000, 'within the timeouts, not the SDK default')
})
