/**
 * The durable mirror queue the proxy enqueues to, opened only when some
 * mount has a mirror target: without a consumer to back-fill, jobs would
 * only pile up. Embedded: the folder at `queue.path`, with a dead-letter
 * queue beside it (`<path>-dead-letter`) after `queue.maxReceiveCount`
 * receives, so a job that cannot succeed is kept for inspection rather than
 * retried forever; the proxy then runs the worker itself
 * (`attachMirrorWorker`, ./mirror.ts). SQS: `queue.url`, consumed by
 * `service mirror`.
 */
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import type { RoleContext } from './role-context.js'

export interface OpenedMirrorQueue {
  readonly queue: Queue
  /** Closes the queue, and the embedded one's dead-letter queue after it. */
  close(): Promise<void>
}

/** `forwardProxy`: what the SQS client's connections leave through (engine/upstream/proxied-agents.ts); direct when unset. */
export async function openMirrorQueue({ config, logger, clock }: Pick<RoleContext, 'config' | 'logger' | 'clock'>, forwardProxy?: ForwardProxy): Promise<OpenedMirrorQueue | undefined> {
  if (!Object.values(config.mounts).some((m) => m?.mirror !== undefined)) return undefined
  if (config.queue.kind === 'sqs') {
    if (config.queue.url === undefined) throw new Error('queue.url is required when queue.kind is sqs')
    // Loaded here, not at import: the embedded queue (the default) never pays for the SQS SDK.
    const { SqsQueue } = await import('../../engine/queue/sqs-queue.js')
    const sqs = new SqsQueue({ url: config.queue.url, region: config.queue.region, endpoint: config.queue.endpoint, clock, forwardProxy })
    return { queue: sqs, close: () => sqs.close() }
  }
  const deadLetterQueue = await EmbeddedQueue.open({ dir: `${config.queue.path.replace(/[\\/]+$/, '')}-dead-letter`, clock, logger })
  try {
    const queue = await EmbeddedQueue.open({ dir: config.queue.path, clock, logger, redrive: { maxReceiveCount: config.queue.maxReceiveCount, deadLetterQueue } })
    return { queue, close: async () => { await queue.close(); await deadLetterQueue.close() } }
  } catch (error) {
    await deadLetterQueue.close()
    throw error
  }
}
