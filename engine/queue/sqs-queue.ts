/**
 * The mirror job queue on Amazon SQS (`queue.kind: sqs`; DESIGN.md "cloud
 * when you outgrow one machine"), one SQS call per Queue method (queue.ts):
 * SendMessage, ReceiveMessage (long poll, `AttributeNames: ['All']` for
 * ApproximateReceiveCount, which SQS emulators only honour in that form),
 * ChangeMessageVisibility, DeleteMessage, GetQueueAttributes (RedrivePolicy).
 *
 * Receipts this process handed out are remembered (a bounded map), so that a
 * receipt of an earlier delivery is refused as stale (`receipt-handle-stale`)
 * before SQS is asked: SQS itself answers a stale delete with success and
 * may delete the message from under its current receiver, and a receipt is
 * never renewed past twelve hours from its receive (`visibility-limit`).
 * Deliveries to other processes are SQS's to judge.
 *
 * Failures are ServiceError QUEUE_FAILURE; `data.transport` carries the SDK
 * error's name (the transport reason logs show), never a message body.
 *
 * `sendBatch` is one SendMessageBatch: SQS answers each entry on its own; an
 * entry SQS refuses as the sender's fault (`SenderFault`) fails with reason
 * `invalid-argument` (sending it again cannot help), any other with
 * `unavailable`. A send (one or a batch) that gets no answer within
 * SEND_TIMEOUT_MS fails `unavailable`, so a caller holding jobs can retry
 * rather than wait forever on a held connection.
 *
 * De-duplication: a standard queue cannot de-duplicate, so `dedupKey` is
 * ignored there (queue.ts). A FIFO queue (its URL ends in `.fifo`) gets
 * the key as MessageDeduplicationId, so SQS drops a repeat within its
 * five-minute window, and as MessageGroupId, so messages of different keys
 * never wait behind each other; a send without a key uses the body's
 * SHA-256. SQS does not say which sends it dropped: no outcome is
 * `deduplicated: true`. A FIFO queue refuses a per-message delay (SQS).
 */
import { createHash } from 'node:crypto'
import {
  ChangeMessageVisibilityCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient,
  type BatchResultErrorEntry, type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs'
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'
import { ServiceError, toServiceError } from '../errors.js'
import type { ForwardProxy } from '../upstream/forward-proxy.js'
import { sdkRequestHandler } from '../upstream/proxied-agents.js'
import { checkBatch, checkReceive, checkSend, checkVisibility } from './queue-arguments.js'
import { QUEUE_LIMITS, QueueFailureReason } from './queue.js'
import type { Queue, QueueAttributes, QueueMessage, ReceiveOptions, SendBatchEntry, SendBatchOutcome, SendOptions, SendResult } from './queue.js'

export interface SqsQueueOptions {
  /** The queue URL. */
  readonly url: string
  readonly region?: string | undefined
  /** Endpoint override (an SQS-compatible service, or a VPC endpoint). */
  readonly endpoint?: string | undefined
  /** The forward proxy the client's connections leave through (proxied-agents.ts); direct when unset. Not used with `client`. */
  readonly forwardProxy?: ForwardProxy | undefined
  /** A client of the caller's; otherwise one is made from the default credential chain. */
  readonly client?: SQSClient
  readonly clock?: Clock
  /** Receipts remembered for the stale check; the oldest are forgotten beyond it. Default 4096. */
  readonly receiptMemory?: number
  /** How long a send may go unanswered before it fails `unavailable`. Default SEND_TIMEOUT_MS. */
  readonly sendTimeoutMs?: number
}

interface Receipt {
  readonly messageId: string
  readonly receivedAt: number
}

/** How long a send or a batch may go unanswered (the SDK's own retries included) before it fails `unavailable`. */
export const SEND_TIMEOUT_MS = 10_000

const RECEIPT_LIFETIME_MS = QUEUE_LIMITS.maxVisibilitySeconds * 1000
const STALE_NAMES: ReadonlySet<string> = new Set(['ReceiptHandleIsInvalid', 'MessageNotInflight', 'InvalidIdFormat'])

export class SqsQueue implements Queue {
  readonly #url: string
  readonly #client: SQSClient
  readonly #owned: boolean
  readonly #clock: Clock
  readonly #memory: number
  /** A FIFO queue: sends carry a de-duplication id and a group id. */
  readonly #fifo: boolean
  readonly #sendTimeoutMs: number
  /** Receipt handle -> delivery, in receive order. */
  readonly #receipts = new Map<string, Receipt>()
  /** Message id -> its latest receipt handle here. */
  readonly #latest = new Map<string, string>()
  #closed = false

  constructor(options: SqsQueueOptions) {
    this.#url = options.url
    this.#owned = options.client === undefined
    this.#client = options.client ?? new SQSClient({
      ...(options.region === undefined ? {} : { region: options.region }),
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...sdkRequestHandler(options.forwardProxy),
    })
    this.#clock = options.clock ?? systemClock
    this.#memory = options.receiptMemory ?? 4096
    this.#fifo = this.#url.endsWith('.fifo')
    this.#sendTimeoutMs = options.sendTimeoutMs ?? SEND_TIMEOUT_MS
  }

  get url(): string { return this.#url }

  async send(body: string, options: SendOptions = {}): Promise<SendResult> {
    this.#checkOpen()
    checkSend(body, options)
    const out = await this.#call('SendMessage', (abortSignal) => this.#client.send(new SendMessageCommand({
      QueueUrl: this.#url,
      ...this.#message(body, options),
    }), { abortSignal }), this.#sendTimeoutMs)
    return { messageId: out.MessageId ?? '' }
  }

  async sendBatch(entries: readonly SendBatchEntry[]): Promise<SendBatchOutcome[]> {
    this.#checkOpen()
    checkBatch(entries)
    const outcomes: (SendBatchOutcome | undefined)[] = new Array(entries.length)
    const request: SendMessageBatchRequestEntry[] = []
    entries.forEach((entry, index) => {
      try {
        checkSend(entry.body, entry)
        request.push({ Id: String(index), ...this.#message(entry.body, entry) })
      } catch (error) {
        outcomes[index] = { failure: toServiceError(error, 'QUEUE_FAILURE') }
      }
    })
    if (request.length > 0) {
      const out = await this.#call('SendMessageBatch', (abortSignal) => this.#client.send(new SendMessageBatchCommand({
        QueueUrl: this.#url,
        Entries: request,
      }), { abortSignal }), this.#sendTimeoutMs)
      for (const sent of out.Successful ?? []) outcomes[Number(sent.Id)] = { messageId: sent.MessageId ?? '' }
      for (const refused of out.Failed ?? []) outcomes[Number(refused.Id)] = { failure: entryFailure(refused) }
    }
    return outcomes.map((outcome) => outcome ?? {
      failure: new ServiceError('QUEUE_FAILURE', { message: 'SQS answered nothing for this entry', data: { reason: QueueFailureReason.UNAVAILABLE, action: 'SendMessageBatch' } }),
    })
  }

  /** The fields of one message; on a FIFO queue its de-duplication and group ids (the header says why). */
  #message(body: string, options: SendOptions): Omit<SendMessageBatchRequestEntry, 'Id'> {
    const fifoId = this.#fifo ? options.dedupKey ?? createHash('sha256').update(body).digest('hex') : undefined
    return {
      MessageBody: body,
      ...(options.delaySeconds === undefined ? {} : { DelaySeconds: options.delaySeconds }),
      ...(fifoId === undefined ? {} : { MessageDeduplicationId: fifoId, MessageGroupId: fifoId }),
    }
  }

  async receive(options: ReceiveOptions): Promise<QueueMessage[]> {
    this.#checkOpen()
    checkReceive(options)
    if (options.signal?.aborted === true) return []
    let out
    try {
      out = await this.#client.send(new ReceiveMessageCommand({
        QueueUrl: this.#url,
        MaxNumberOfMessages: options.max,
        VisibilityTimeout: options.visibilitySeconds,
        WaitTimeSeconds: options.waitSeconds ?? 0,
        AttributeNames: ['All'],
      }), options.signal === undefined ? {} : { abortSignal: options.signal })
    } catch (error) {
      // An aborted long poll resolves with what it has: nothing (queue.ts).
      if (aborted(options.signal)) return []
      throw failure('ReceiveMessage', error)
    }
    const now = this.#clock.now()
    const messages: QueueMessage[] = []
    for (const m of out.Messages ?? []) {
      if (m.MessageId === undefined || m.ReceiptHandle === undefined || m.Body === undefined) continue
      this.#remember(m.ReceiptHandle, m.MessageId, now)
      const count = Number(m.Attributes?.ApproximateReceiveCount ?? '1')
      messages.push({ messageId: m.MessageId, receiptHandle: m.ReceiptHandle, body: m.Body, receiveCount: Number.isFinite(count) && count > 0 ? count : 1 })
    }
    return messages
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    this.#checkOpen()
    checkVisibility(seconds)
    const receipt = this.#judge(receiptHandle)
    if (receipt !== undefined && seconds > 0 && this.#clock.now() + seconds * 1000 > receipt.receivedAt + RECEIPT_LIFETIME_MS) {
      throw new ServiceError('QUEUE_FAILURE', { message: 'a receipt is never renewed past twelve hours from its receive', data: { reason: QueueFailureReason.VISIBILITY_LIMIT } })
    }
    await this.#call('ChangeMessageVisibility', () => this.#client.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.#url, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds })))
  }

  async delete(receiptHandle: string): Promise<void> {
    this.#checkOpen()
    const receipt = this.#judge(receiptHandle)
    await this.#call('DeleteMessage', () => this.#client.send(new DeleteMessageCommand({ QueueUrl: this.#url, ReceiptHandle: receiptHandle })))
    if (receipt !== undefined) {
      this.#receipts.delete(receiptHandle)
      this.#latest.delete(receipt.messageId)
    }
  }

  async attributes(): Promise<QueueAttributes> {
    this.#checkOpen()
    const out = await this.#call('GetQueueAttributes', () => this.#client.send(new GetQueueAttributesCommand({ QueueUrl: this.#url, AttributeNames: ['RedrivePolicy'] })))
    const raw = out.Attributes?.RedrivePolicy
    if (raw === undefined || raw === '') return {}
    let parsed: { maxReceiveCount?: unknown, deadLetterTargetArn?: unknown }
    try {
      parsed = JSON.parse(raw) as typeof parsed
    } catch {
      return {}
    }
    const max = Number(parsed.maxReceiveCount)
    if (!Number.isSafeInteger(max) || max < 1 || typeof parsed.deadLetterTargetArn !== 'string') return {}
    return { redrive: { maxReceiveCount: max, deadLetterTarget: parsed.deadLetterTargetArn } }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#owned) this.#client.destroy()
  }

  /** The delivery a receipt names when this process received it; refuses one that a later delivery replaced. */
  #judge(receiptHandle: string): Receipt | undefined {
    const receipt = this.#receipts.get(receiptHandle)
    if (receipt !== undefined && this.#latest.get(receipt.messageId) !== receiptHandle) {
      throw new ServiceError('QUEUE_FAILURE', { message: 'the receipt names an earlier delivery', data: { reason: QueueFailureReason.RECEIPT_HANDLE_STALE } })
    }
    return receipt
  }

  #remember(receiptHandle: string, messageId: string, now: number): void {
    this.#receipts.set(receiptHandle, { messageId, receivedAt: now })
    this.#latest.set(messageId, receiptHandle)
    while (this.#receipts.size > this.#memory) {
      const [oldest, receipt] = this.#receipts.entries().next().value as [string, Receipt]
      this.#receipts.delete(oldest)
      if (this.#latest.get(receipt.messageId) === oldest) this.#latest.delete(receipt.messageId)
    }
  }

  /** One SQS call; with `timeoutMs`, abandoned (and failed) when it is not answered in time. */
  async #call<T>(action: string, run: (signal: AbortSignal | undefined) => Promise<T>, timeoutMs?: number): Promise<T> {
    try {
      return await run(timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs))
    } catch (error) {
      throw failure(action, error)
    }
  }

  #checkOpen(): void {
    if (this.#closed) throw new ServiceError('QUEUE_FAILURE', { message: 'the queue is closed', data: { reason: QueueFailureReason.UNAVAILABLE } })
  }
}

function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

/** SQS's answer for one refused entry of a batch: the sender's fault is final, any other worth another try. */
function entryFailure(refused: BatchResultErrorEntry): ServiceError {
  return new ServiceError('QUEUE_FAILURE', {
    message: `SQS SendMessageBatch refused an entry: ${refused.Code ?? 'unknown'}`,
    data: {
      reason: refused.SenderFault === true ? QueueFailureReason.INVALID_ARGUMENT : QueueFailureReason.UNAVAILABLE,
      action: 'SendMessageBatch', transport: refused.Code ?? 'unknown',
    },
  })
}

function failure(action: string, error: unknown): ServiceError {
  const name = error instanceof Error ? error.name : 'unknown'
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode
  const reason = STALE_NAMES.has(name) ? QueueFailureReason.RECEIPT_HANDLE_STALE : QueueFailureReason.UNAVAILABLE
  return new ServiceError('QUEUE_FAILURE', {
    message: `SQS ${action} failed: ${name}`,
    cause: error,
    data: { reason, action, transport: name, ...(status === undefined ? {} : { status }) },
  })
}
