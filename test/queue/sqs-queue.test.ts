/**
 * The SQS queue against a real SQS peer (local-aws-sqs, PEERS.md): the
 * shared queue suite (STYLE.md rule 8), then what only this adapter does.
 */
import { CreateQueueCommand } from '@aws-sdk/client-sqs'
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
      queue, deadLetter,
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
