import t from 'tap'
import {
  ChangeMessageVisibilityCommand, DeleteMessageCommand, GetQueueAttributesCommand, GetQueueUrlCommand,
  ReceiveMessageCommand, SendMessageCommand,
} from '@aws-sdk/client-sqs'
import { startSqs } from '../../bench/peers/sqs.js'

t.test('SQS peer: a queue with a redrive policy to a dead-letter queue', async (t) => {
  const sqs = await startSqs({ queueName: 'rig-jobs', maxReceiveCount: 2 })
  t.teardown(() => sqs.stop())
  const client = sqs.client()

  t.test('the queues exist and the redrive policy reads back', async (t) => {
    const url = await client.send(new GetQueueUrlCommand({ QueueName: 'rig-jobs' }))
    t.equal(url.QueueUrl, sqs.queueUrl)
    const attributes = await client.send(new GetQueueAttributesCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ['All'] }))
    t.same(JSON.parse(attributes.Attributes?.RedrivePolicy ?? '{}'), { deadLetterTargetArn: sqs.deadLetterQueueArn, maxReceiveCount: 2 })
    const dead = await client.send(new GetQueueUrlCommand({ QueueName: sqs.deadLetterQueueName }))
    t.equal(dead.QueueUrl, sqs.deadLetterQueueUrl)
  })

  t.test('send, receive and delete', async (t) => {
    await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: '{"job":"delete-me"}' }))
    const received = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ['All'], VisibilityTimeout: 30 }))
    t.equal(received.Messages?.length, 1)
    const message = received.Messages![0]!
    t.equal(message.Body, '{"job":"delete-me"}')
    t.equal(message.Attributes?.ApproximateReceiveCount, '1')
    await client.send(new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: message.ReceiptHandle! }))
    const after = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, WaitTimeSeconds: 0 }))
    t.equal(after.Messages?.length ?? 0, 0)
  })

  t.test('a message received maxReceiveCount times moves to the dead-letter queue', async (t) => {
    await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: 'poison' }))
    // VisibilityTimeout 0 on receive makes the message visible again at once,
    // without ChangeMessageVisibility (which local-aws-sqs counts as a receive).
    const counts: string[] = []
    for (let i = 0; i < 2; i++) {
      const received = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, AttributeNames: ['All'], VisibilityTimeout: 0 }))
      counts.push(received.Messages?.[0]?.Attributes?.ApproximateReceiveCount ?? 'none')
    }
    t.same(counts, ['1', '2'])
    const third = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, WaitTimeSeconds: 0 }))
    t.equal(third.Messages?.length ?? 0, 0, 'no longer on the work queue')
    const dead = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.deadLetterQueueUrl, AttributeNames: ['All'] }))
    t.equal(dead.Messages?.length, 1)
    t.equal(dead.Messages?.[0]?.Body, 'poison')
  })

  t.test('trap: ChangeMessageVisibility adds one to the receive count', async (t) => {
    const sqsOwn = await startSqs({ queueName: 'visibility', maxReceiveCount: 10 })
    t.teardown(() => sqsOwn.stop())
    const own = sqsOwn.client()
    await own.send(new SendMessageCommand({ QueueUrl: sqsOwn.queueUrl, MessageBody: 'renewed' }))
    const first = await own.send(new ReceiveMessageCommand({ QueueUrl: sqsOwn.queueUrl, AttributeNames: ['All'], VisibilityTimeout: 30 }))
    t.equal(first.Messages?.[0]?.Attributes?.ApproximateReceiveCount, '1')
    await own.send(new ChangeMessageVisibilityCommand({ QueueUrl: sqsOwn.queueUrl, ReceiptHandle: first.Messages![0]!.ReceiptHandle!, VisibilityTimeout: 0 }))
    const second = await own.send(new ReceiveMessageCommand({ QueueUrl: sqsOwn.queueUrl, AttributeNames: ['All'], VisibilityTimeout: 30 }))
    t.equal(second.Messages?.[0]?.Body, 'renewed', 'visibility 0 redelivers at once')
    t.equal(second.Messages?.[0]?.Attributes?.ApproximateReceiveCount, '3', 'real SQS would say 2')
  })
})
