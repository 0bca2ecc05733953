/**
 * The mirror job queue (SPEC.md 3.7, 6.1): one interface with SQS semantics,
 * shaped so that an implementation over @aws-sdk/client-sqs maps each method
 * to one SQS call without changing it:
 *
 *   send              SendMessage (MessageBody, DelaySeconds)
 *   sendBatch         SendMessageBatch (up to 10 entries, one outcome each)
 *   receive           ReceiveMessage (MaxNumberOfMessages, VisibilityTimeout,
 *                     WaitTimeSeconds, AttributeNames ['All'] for
 *                     ApproximateReceiveCount; abortSignal)
 *   changeVisibility  ChangeMessageVisibility (0 releases at once)
 *   delete            DeleteMessage
 *   attributes        GetQueueAttributes (RedrivePolicy)
 *
 * Delivery is at least once: a received message that is neither deleted nor
 * renewed becomes visible again when its window ends, and every receive
 * counts towards the redrive budget. A message already received
 * `maxReceiveCount` times is moved to the dead-letter queue instead of being
 * delivered again (SQS redrive). Argument limits are SQS's own (QUEUE_LIMITS)
 * so both implementations refuse the same calls.
 *
 * Failures are ServiceError 'QUEUE_FAILURE'; `data.reason` tells apart the
 * ones a caller acts on (QueueFailureReason).
 */
import type { ServiceError } from '../errors.js'

export interface SendOptions {
  /** Seconds before the message first becomes visible; 0 to 900. */
  readonly delaySeconds?: number
  /**
   * De-duplication key (like SQS FIFO's MessageDeduplicationId, 1 to 128
   * printable ASCII characters), scoped to pending messages: while a message
   * sent with this key is in the queue (not yet deleted or dead-lettered), a
   * send with the same key adds nothing and answers that message's id with
   * `deduplicated: true`. An implementation that cannot de-duplicate (an SQS
   * standard queue) sends the message and does not answer `deduplicated: true`.
   */
  readonly dedupKey?: string
}

export interface SendResult {
  readonly messageId: string
  /** True when a pending message with the same `dedupKey` stood in for this send; absent or false otherwise. */
  readonly deduplicated?: boolean
}

/** One message of a `sendBatch`: its body and its own send options. */
export interface SendBatchEntry extends SendOptions {
  readonly body: string
}

/**
 * What became of one entry of a batch: sent (or answered by a pending
 * message with its key), or refused on its own, with the failure a `send`
 * of it alone would have thrown.
 */
export type SendBatchOutcome =
  | (SendResult & { readonly failure?: undefined })
  | { readonly failure: ServiceError, readonly messageId?: undefined, readonly deduplicated?: undefined }

export interface ReceiveOptions {
  /** Most messages to return; 1 to 10. */
  readonly max: number
  /** Seconds the received messages stay hidden from other receivers; 0 to 43200. */
  readonly visibilitySeconds: number
  /** Long poll: seconds to wait for a message when none is visible; 0 to 20. Default 0. */
  readonly waitSeconds?: number
  /** Ends a long poll early; the receive then resolves with what it has (usually nothing). */
  readonly signal?: AbortSignal
}

export interface QueueMessage {
  readonly messageId: string
  /** Names this delivery only; a later delivery of the same message gets a new one. */
  readonly receiptHandle: string
  readonly body: string
  /** How many times the message has been received, this delivery included (approximate on SQS). */
  readonly receiveCount: number
}

export interface RedrivePolicy {
  /** Receives after which the next delivery goes to the dead-letter queue instead. */
  readonly maxReceiveCount: number
  /** Names the dead-letter queue (an ARN on SQS). */
  readonly deadLetterTarget: string
}

/** The IAM action named when the boot probe of the queue attributes fails (SPEC.md 6.1 item 2). */
export const SQS_ATTRIBUTES_PERMISSION = 'sqs:GetQueueAttributes'

export interface QueueAttributes {
  /** Absent when the queue has no redrive policy (SPEC.md 6.1 item 2: a start-up WARNING). */
  readonly redrive?: RedrivePolicy
}

export interface Queue {
  send(body: string, options?: SendOptions): Promise<SendResult>
  /**
   * Sends 1 to QUEUE_LIMITS.maxMessagesPerBatch messages in one call: one
   * journal write and sync on the embedded queue, one SendMessageBatch
   * request on SQS. Resolves with one outcome per entry, in entry order, once
   * every sent entry is durable; an entry can be refused on its own (its
   * arguments, its size, a full queue, SQS's answer for that entry) while the
   * others are sent. Rejects as a whole, sending nothing, when the batch
   * itself is invalid (no entries, too many, over maxBatchBytes) or the queue
   * cannot take work (reason `unavailable`); on SQS a whole failure may still
   * have sent some entries (an answer lost on the way back).
   */
  sendBatch(entries: readonly SendBatchEntry[]): Promise<SendBatchOutcome[]>
  receive(options: ReceiveOptions): Promise<QueueMessage[]>
  /**
   * Hides the message for `seconds` from now (renewal), or releases it at once
   * with 0. A receipt is bounded to twelve hours from its receive (SPEC.md 8).
   * Fails with reason `receipt-handle-stale` when the message was delivered
   * again or is gone.
   */
  changeVisibility(receiptHandle: string, seconds: number): Promise<void>
  /**
   * Acknowledges the delivery. A message already gone counts as deleted; a
   * receipt of an earlier delivery fails with reason `receipt-handle-stale`
   * and leaves the message to its current receiver.
   */
  delete(receiptHandle: string): Promise<void>
  attributes(): Promise<QueueAttributes>
  close(): Promise<void>
}

/** SQS's own limits, applied by every implementation. */
export const QUEUE_LIMITS = Object.freeze({
  maxMessagesPerReceive: 10,
  /** SendMessageBatch: at most 10 entries, and 256 KiB of bodies in all. */
  maxMessagesPerBatch: 10,
  maxBatchBytes: 262_144,
  maxVisibilitySeconds: 43_200,
  maxWaitSeconds: 20,
  maxDelaySeconds: 900,
  maxBodyBytes: 262_144,
  /** SQS's MessageDeduplicationId: 1 to 128 characters. */
  maxDedupKeyLength: 128,
})

/** `data.reason` of a QUEUE_FAILURE, for the failures callers tell apart. */
export const QueueFailureReason = Object.freeze({
  /** The receipt names an earlier delivery, or a message no longer in the queue. */
  RECEIPT_HANDLE_STALE: 'receipt-handle-stale',
  /** The receipt is not one this queue hands out. */
  RECEIPT_HANDLE_INVALID: 'receipt-handle-invalid',
  /** Past twelve hours from the receive (SQS's visibility ceiling). */
  VISIBILITY_LIMIT: 'visibility-limit',
  /** An argument outside QUEUE_LIMITS or of the wrong type. */
  INVALID_ARGUMENT: 'invalid-argument',
  /** The queue was closed, or its journal failed and it stopped accepting work. */
  UNAVAILABLE: 'unavailable',
  /** Another live process holds the embedded queue's folder. */
  LOCKED: 'locked',
  /** The body is within SQS's limit but over the queue's own `maxBodyBytes` (embedded: 8 KiB by default). */
  TOO_LARGE: 'too-large',
  /** The queue holds its bound of jobs or bytes; the new message was dropped (the pending ones are kept). */
  FULL: 'full',
})
export type QueueFailureReason = typeof QueueFailureReason[keyof typeof QueueFailureReason]
