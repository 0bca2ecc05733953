/**
 * The embedded queue's bounds (issue 12): a message body limit far below
 * SQS's 256 KiB, and a bound on pending jobs and on their body bytes. Bodies
 * live in the heap and in the journal, so these bounds are what the memory
 * plan and the disk see: at most `maxBytes` of bodies plus about 200 bytes
 * of bookkeeping per job in memory, and a journal compacted to stay within
 * about twice the live state plus JOURNAL_SLACK_BYTES (embedded-queue.ts).
 *
 * A mirror job is a few hundred bytes (engine/mirror/mirror-job.ts); 8 KiB
 * leaves room for long scoped names and URLs while refusing the 200 KB
 * tarball URLs that once grew the proxy's heap by 336 MiB.
 */

export const EMBEDDED_QUEUE_BOUNDS = Object.freeze({
  /** Largest message body, UTF-8 bytes; a larger one is refused with reason `too-large`. */
  maxBodyBytes: 8 * 1024,
  /** Most pending messages (not yet deleted); beyond it a send is dropped with reason `full`. */
  maxJobs: 10_000,
  /** Most pending body bytes; beyond it a send is dropped with reason `full`. */
  maxBytes: 16 * 1024 * 1024,
})

/** Warning, once per episode: the queue reached its bound and drops new messages until it has room. */
export const QUEUE_FULL = 'queue full; new jobs are dropped until it has room'
/** Info: an accepted send after a full episode, with how many were dropped during it. */
export const QUEUE_ROOM_AGAIN = 'queue has room again'
/** Warning at open: the journal held messages this build does not keep (too large, or beyond the bound). */
export const QUEUE_REPLAY_DROPPED = 'queue journal replay dropped messages'
/** Error: messages over their receive budget did not fit in the dead-letter queue and were dropped. */
export const DEAD_LETTERS_DROPPED = 'dead-letter queue full; dead letters dropped'

export interface EmbeddedQueueBounds {
  readonly maxBodyBytes: number
  readonly maxJobs: number
  readonly maxBytes: number
}

/** Guards the bound options (precise messages, as STYLE.md rule 5 asks); fills in defaults. */
export function checkBounds(options: Partial<EmbeddedQueueBounds>): EmbeddedQueueBounds {
  const bounds = {
    maxBodyBytes: options.maxBodyBytes ?? EMBEDDED_QUEUE_BOUNDS.maxBodyBytes,
    maxJobs: options.maxJobs ?? EMBEDDED_QUEUE_BOUNDS.maxJobs,
    maxBytes: options.maxBytes ?? EMBEDDED_QUEUE_BOUNDS.maxBytes,
  }
  if (!Number.isInteger(bounds.maxBodyBytes) || bounds.maxBodyBytes < 1 || bounds.maxBodyBytes > 262_144) {
    throw new TypeError('EmbeddedQueue: maxBodyBytes must be an integer from 1 to 262144 (SQS\'s own limit)')
  }
  if (!Number.isInteger(bounds.maxJobs) || bounds.maxJobs < 1) throw new TypeError('EmbeddedQueue: maxJobs must be a positive integer')
  if (!Number.isInteger(bounds.maxBytes) || bounds.maxBytes < bounds.maxBodyBytes) {
    throw new TypeError('EmbeddedQueue: maxBytes must be an integer of at least maxBodyBytes')
  }
  return Object.freeze(bounds)
}

/** The longest journal line a body within `maxBodyBytes` can make: JSON escaping at most doubles an SQS-legal body. */
export function maxLineBytesFor(maxBodyBytes: number): number {
  return 2 * maxBodyBytes + 1024
}
