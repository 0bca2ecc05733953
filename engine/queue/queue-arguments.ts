/**
 * Argument checks shared by every Queue implementation, so the embedded queue
 * refuses exactly what SQS refuses (QUEUE_LIMITS).
 */
import { ServiceError } from '../errors.js'
import { QUEUE_LIMITS, QueueFailureReason } from './queue.js'
import type { ReceiveOptions, SendBatchEntry, SendOptions } from './queue.js'

// The characters SQS accepts in a message body.
const BODY_OUTSIDE_SQS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u
// SQS's MessageDeduplicationId: alphanumeric characters and punctuation (printable ASCII, no space).
const DEDUP_KEY = /^[\x21-\x7E]+$/

export function invalidArgument(message: string): ServiceError {
  return new ServiceError('QUEUE_FAILURE', { message, data: { reason: QueueFailureReason.INVALID_ARGUMENT } })
}

function checkInteger(name: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidArgument(`${name} must be an integer from ${min} to ${max}`)
  }
}

export function checkSend(body: unknown, options: SendOptions): void {
  if (typeof body !== 'string' || body.length === 0) throw invalidArgument('the message body must be a non-empty string')
  if (Buffer.byteLength(body) > QUEUE_LIMITS.maxBodyBytes) throw invalidArgument(`the message body exceeds ${QUEUE_LIMITS.maxBodyBytes} bytes`)
  if (BODY_OUTSIDE_SQS.test(body)) throw invalidArgument('the message body holds a character SQS refuses')
  if (options.delaySeconds !== undefined) checkInteger('delaySeconds', options.delaySeconds, 0, QUEUE_LIMITS.maxDelaySeconds)
  const key: unknown = options.dedupKey
  if (key !== undefined && (typeof key !== 'string' || key.length > QUEUE_LIMITS.maxDedupKeyLength || !DEDUP_KEY.test(key))) {
    throw invalidArgument(`dedupKey must be 1 to ${QUEUE_LIMITS.maxDedupKeyLength} printable ASCII characters without spaces`)
  }
}

/**
 * The batch as a whole, as SQS judges it before any entry: 1 to 10 entries
 * and at most 256 KiB of bodies in all. Each entry's own arguments are
 * `checkSend`'s, judged entry by entry.
 */
export function checkBatch(entries: readonly SendBatchEntry[]): void {
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > QUEUE_LIMITS.maxMessagesPerBatch) {
    throw invalidArgument(`a batch holds 1 to ${QUEUE_LIMITS.maxMessagesPerBatch} messages`)
  }
  let bytes = 0
  for (const entry of entries) bytes += typeof entry?.body === 'string' ? Buffer.byteLength(entry.body) : 0
  if (bytes > QUEUE_LIMITS.maxBatchBytes) throw invalidArgument(`the bodies of a batch exceed ${QUEUE_LIMITS.maxBatchBytes} bytes in all`)
}

export function checkReceive(options: ReceiveOptions): void {
  checkInteger('max', options.max, 1, QUEUE_LIMITS.maxMessagesPerReceive)
  checkInteger('visibilitySeconds', options.visibilitySeconds, 0, QUEUE_LIMITS.maxVisibilitySeconds)
  if (options.waitSeconds !== undefined) checkInteger('waitSeconds', options.waitSeconds, 0, QUEUE_LIMITS.maxWaitSeconds)
}

export function checkVisibility(seconds: unknown): void {
  checkInteger('visibility seconds', seconds, 0, QUEUE_LIMITS.maxVisibilitySeconds)
}
