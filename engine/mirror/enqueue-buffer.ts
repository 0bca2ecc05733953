/**
 * The proxy's side of the mirror queue (SPEC.md 4.4 public leg 5, issue 12):
 * serve-then-enqueue, best effort and bounded. The artifact route hands a
 * job over after the last byte reached the client; the job waits here, in a
 * small in-memory buffer, for one of a few sends. A full buffer drops the
 * new job at once (QUEUE_FAILURE, reason `full`: the route logs and counts
 * it), so a slow or failing queue never blocks, delays or fails a response,
 * and never holds more than `capacity` jobs in the heap.
 */
import { ServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { QueueFailureReason, type Queue } from '../queue/queue.js'
import { encodeMirrorJob, mirrorJobKey, type MirrorJob } from './mirror-job.js'

/** warn: a buffered job could not be sent; it is lost (the next download enqueues it again). */
export const MIRROR_SEND_FAILED = 'mirror job send failed'

/** Jobs the buffer holds by default: a job is well under 1 KiB, so this is a few hundred KiB at most. */
export const DEFAULT_ENQUEUE_BUFFER_JOBS = 256
/** Sends in flight at once by default. */
export const DEFAULT_ENQUEUE_SENDS = 4

export interface EnqueueBufferOptions {
  readonly queue: Pick<Queue, 'send'>
  readonly logger: Logger
  readonly capacity?: number
  readonly sends?: number
}

export interface EnqueueBufferStats {
  /** Jobs waiting now. */
  readonly buffered: number
  readonly sent: number
  /** Sends answered by a pending job for the same artifact. */
  readonly deduplicated: number
  /** Jobs refused because the buffer was full. */
  readonly dropped: number
  /** Sends that failed. */
  readonly failed: number
}

export class EnqueueBuffer {
  readonly #queue: Pick<Queue, 'send'>
  readonly #logger: Logger
  readonly #capacity: number
  readonly #sends: number
  readonly #waiting: { body: string, key: string, job: MirrorJob }[] = []
  #active = 0
  #sent = 0
  #deduplicated = 0
  #dropped = 0
  #failed = 0
  #closed = false
  #idle: (() => void)[] = []

  constructor(options: EnqueueBufferOptions) {
    this.#queue = options.queue
    this.#logger = options.logger
    this.#capacity = options.capacity ?? DEFAULT_ENQUEUE_BUFFER_JOBS
    this.#sends = options.sends ?? DEFAULT_ENQUEUE_SENDS
    if (!Number.isSafeInteger(this.#capacity) || this.#capacity < 1) throw new TypeError('capacity must be a positive integer')
    if (!Number.isSafeInteger(this.#sends) || this.#sends < 1) throw new TypeError('sends must be a positive integer')
  }

  /** Takes the job or refuses it at once; never waits for the queue. */
  enqueue = async (job: MirrorJob): Promise<void> => {
    let body: string
    try {
      body = encodeMirrorJob(job)
    } catch (error) {
      // Over the job bound (or invalid): refused before it takes any room, and counted.
      this.#dropped++
      throw error
    }
    if (this.#closed || this.#waiting.length >= this.#capacity) {
      this.#dropped++
      throw new ServiceError('QUEUE_FAILURE', {
        message: this.#closed ? 'the mirror enqueue buffer is closed' : 'the mirror enqueue buffer is full',
        data: { reason: this.#closed ? QueueFailureReason.UNAVAILABLE : QueueFailureReason.FULL, detail: `buffer of ${this.#capacity} jobs` },
      })
    }
    this.#waiting.push({ body, key: mirrorJobKey(job), job })
    this.#pump()
  }

  stats(): EnqueueBufferStats {
    return { buffered: this.#waiting.length, sent: this.#sent, deduplicated: this.#deduplicated, dropped: this.#dropped, failed: this.#failed }
  }

  /** Refuses new jobs and waits for the buffered ones to be sent, for up to `graceMs`. */
  async close(graceMs: number): Promise<void> {
    this.#closed = true
    if (this.#waiting.length === 0 && this.#active === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      new Promise<void>((resolve) => this.#idle.push(resolve)),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, graceMs) }),
    ])
    clearTimeout(timer)
  }

  #pump(): void {
    while (this.#active < this.#sends && this.#waiting.length > 0) {
      const next = this.#waiting.shift()!
      this.#active++
      void this.#send(next).finally(() => {
        this.#active--
        this.#pump()
        if (this.#active === 0 && this.#waiting.length === 0) for (const wake of this.#idle.splice(0)) wake()
      })
    }
  }

  async #send(item: { body: string, key: string, job: MirrorJob }): Promise<void> {
    try {
      const result = await this.#queue.send(item.body, { dedupKey: item.key })
      if (result.deduplicated === true) this.#deduplicated++
      else this.#sent++
    } catch (error) {
      this.#failed++
      const failure = toServiceError(error)
      this.#logger.warn(MIRROR_SEND_FAILED, {
        package: item.job.package, version: item.job.version, code: failure.code,
        ...(failure.data?.['reason'] === undefined ? {} : { reason: failure.data['reason'] }),
      })
    }
  }
}
