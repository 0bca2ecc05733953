/**
 * A real SQS peer for tests: local-aws-sqs 2.0.2 started from code on
 * 127.0.0.1, port 0 (PEERS.md, "Queue"), with a work queue and a dead-letter
 * queue joined by a redrive policy. State is in memory; `stop` closes it.
 *
 * Traps (PEERS.md): ask for `AttributeNames: ['All']` to read
 * `ApproximateReceiveCount`; `ChangeMessageVisibility` adds 1 to the receive
 * count, unlike real SQS.
 */
import type { AddressInfo } from 'node:net'
import { SQSClient } from '@aws-sdk/client-sqs'
import { createSqsServer } from 'local-aws-sqs'

export interface SqsPeerOptions {
  readonly queueName?: string
  readonly deadLetterQueueName?: string
  /** Receives after which a message moves to the dead-letter queue; default 3. */
  readonly maxReceiveCount?: number
  /** The work queue's default visibility timeout, seconds; default 30. */
  readonly visibilityTimeoutSeconds?: number
}

export interface SqsPeer {
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly queueName: string
  readonly queueUrl: string
  readonly deadLetterQueueName: string
  readonly deadLetterQueueUrl: string
  readonly deadLetterQueueArn: string
  readonly maxReceiveCount: number
  /** A client for this peer; the caller destroys it (or lets `stop` do it). */
  client(): SQSClient
  stop(): Promise<void>
}

const REGION = 'us-east-1'
const ACCOUNT_ID = '123456789012'

export async function startSqs(options: SqsPeerOptions = {}): Promise<SqsPeer> {
  const queueName = options.queueName ?? 'mirror-jobs'
  const deadLetterQueueName = options.deadLetterQueueName ?? `${queueName}-dead-letter`
  const maxReceiveCount = options.maxReceiveCount ?? 3
  const deadLetterQueueArn = `arn:aws:sqs:${REGION}:${ACCOUNT_ID}:${deadLetterQueueName}`
  const server = await createSqsServer({
    port: 0,
    hostname: '127.0.0.1',
    region: REGION,
    accountId: ACCOUNT_ID,
    // A test that deletes and recreates a queue must not wait 60 s (PEERS.md).
    emulateQueueCreationLifecycle: false,
    queues: [
      { QueueName: deadLetterQueueName },
      {
        QueueName: queueName,
        Attributes: {
          VisibilityTimeout: options.visibilityTimeoutSeconds ?? 30,
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterQueueArn, maxReceiveCount }),
        },
      },
    ],
  })
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  const endpoint = `http://127.0.0.1:${port}`
  const clients: SQSClient[] = []
  let stopping: Promise<void> | undefined
  return {
    endpoint,
    region: REGION,
    accessKeyId: 'test',
    secretAccessKey: 'test',
    queueName,
    queueUrl: `${endpoint}/${ACCOUNT_ID}/${queueName}`,
    deadLetterQueueName,
    deadLetterQueueUrl: `${endpoint}/${ACCOUNT_ID}/${deadLetterQueueName}`,
    deadLetterQueueArn,
    maxReceiveCount,
    client() {
      const client = new SQSClient({ endpoint, region: REGION, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
      clients.push(client)
      return client
    },
    stop() {
      stopping ??= new Promise<void>((resolve, reject) => {
        for (const client of clients) client.destroy()
        server.closeAllConnections()
        server.close((error) => (error === undefined ? resolve() : reject(error)))
      })
      return stopping
    },
  }
}
