/**
 * The proxy's side of the mirror queue (SPEC.md 4.4 public leg 5, 6.1;
 * issues 12 and 30): serve-then-enqueue, bounded, and lossless within its
 * bound. The artifact route hands a job over after the last byte reached the
 * client; `enqueue` never waits for the queue and never fails the route: what
 * becomes of the job is this buffer's to count and to log.
 *
 * Throughput (issue 30 item 1). Jobs leave in batches (Queue.sendBatch, up
 * to ten per call), up to `batchesInFlight` batches at once. On the embedded
 * queue the batches in flight share one journal write and sync (group
 * commit), on SQS each is one SendMessageBatch. So each round trip to the
 * queue takes every job that arrived meanwhile (up to ten per batch in
 * flight), and the path keeps up with the relay instead of draining a fixed
 * few jobs per round trip while the rest wait in memory.
 *
 * One job per artifact (issue 30 item 2). A job whose artifact is held here
 * already, or whose key the recent-enqueue memory (enqueue-memory.ts) says
 * was claimed within `memoryTtlMs`, is skipped (`recent`). A memory that
 * fails to answer lets the job through: a duplicate, never a loss.
 *
 * Hold, retry, recover (issue 30 item 3). A send that fails for a reason
 * that can pass (`unavailable`: SQS unreachable or not answering, a journal
 * that cannot be written) puts its jobs back at the head of the buffer and
 * pauses sending: RETRY_BASE_MS, doubling to RETRY_MAX_MS, each wait drawn
 * between half and all of that (jitter, so proxies do not probe in step);
 * one batch probes at a time until a send succeeds. A warning names the
 * first refusal of an episode; an info line its end. `pastShare()` is true
 * while the bytes held exceed READY_SHARE of the bound: the proxy's
 * `/readyz` answers 503 with `conditions.queue: enqueue_backlog` meanwhile.
 *
 * The bound. Each job is charged twice its body's bytes (the body string, and
 * the request that carries it) plus JOB_OVERHEAD_BYTES, against `maxBytes`,
 * which the memory plan reserves (engine/memory/plan.ts). A job is lost only
 * past a bound: the buffer is full; its body is over the 8 KiB job bound;
 * the queue refuses it for good (an argument it rejects, the embedded queue
 * at its own bound); or the process stops while it is held (at the end of
 * the drain bound, or killed). Each loss is counted (`dropped`, or `failed`
 * when the queue refused it), its claim released, and logged at error:
 * MIRROR_JOBS_LOST, at once for the first, then at most one line per
 * `lossLogIntervalMs` with the count since the last line.
 */
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'
import { ServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { QUEUE_LIMITS, QueueFailureReason, type Queue, type SendBatchOutcome } from '../queue/queue.js'
import type { EnqueueMemory } from './enqueue-memory.js'
import { encodeMirrorJob, mirrorJobKey, type MirrorJob } from './mirror-job.js'

/** error: mirror jobs were lost past a bound; the count since the last such line, by reason. */
export const MIRROR_JOBS_LOST = 'mirror jobs lost'
/** warn, once per episode: the queue refuses jobs for a reason that can pass; they are held and retried. */
export const MIRROR_QUEUE_REFUSING = 'mirror queue refuses jobs; holding them and retrying'
/** info: a send succeeded after a refusal episode. */
export const MIRROR_QUEUE_ACCEPTING = 'mirror queue accepts jobs again'
/** debug: the recent-enqueue memory did not answer (a shared backend down or past `cache.timeoutMs`); the job goes through, a duplicate at worst. */
export const MIRROR_ENQUEUE_MEMORY_FAILED = 'mirror enqueue memory failed; the job goes through'

/** Bookkeeping charged per held job beside twice its body: the held record, its key (64 characters) and the job fields logged. */
export const JOB_OVERHEAD_BYTES = 1024
/** The share of `maxBytes` past which `pastShare()` is true (and `/readyz` answers 503). */
export const READY_SHARE = 0.5
/** Batches sent at once by default (up to ten jobs each). */
export const DEFAULT_BATCHES_IN_FLIGHT = 16
export const RETRY_BASE_MS = 200
export const RETRY_MAX_MS = 5_000
export const LOSS_LOG_INTERVAL_MS = 10_000

/** Why a job was lost (the `reasons` of MIRROR_JOBS_LOST). */
export type LossReason = 'full' | 'too_large' | 'refused' | 'queue_full' | 'shutdown'

export interface EnqueueBufferOptions {
  readonly queue: Pick<Queue, 'sendBatch'>
  readonly logger: Logger
  /** The bound of the jobs held, charged as the header says; the memory plan's `enqueueBuffer.bytes`. */
  readonly maxBytes: number
  /** The recent-enqueue memory; with none (or `memoryTtlMs` 0) only jobs held here are skipped. */
  readonly memory?: EnqueueMemory | undefined
  /** How long a claim stands: `queue.enqueueMemorySeconds`. */
  readonly memoryTtlMs?: number
  readonly batchesInFlight?: number
  readonly retryBaseMs?: number
  readonly retryMaxMs?: number
  readonly lossLogIntervalMs?: number
  /** Paces the loss log. */
  readonly clock?: Clock
}

export interface EnqueueBufferStats {
  /** Jobs held now: waiting, being sent, or waiting to be sent again. */
  readonly buffered: number
  /** What they are charged. */
  readonly bufferedBytes: number
  readonly maxBytes: number
  /** Jobs the queue took. */
  readonly sent: number
  /** Jobs the queue answered with a pending job for the same artifact. */
  readonly deduplicated: number
  /** Jobs skipped: their artifact is held here or was enqueued within the memory's time to live. */
  readonly recent: number
  /** Jobs lost before the queue saw them: the buffer full, over the job bound, or held at shutdown. */
  readonly dropped: number
  /** Jobs the queue refused for good. */
  readonly failed: number
  /** Jobs put back after a send that failed for a reason that can pass (each time). */
  readonly retried: number
}

interface Held {
  readonly body: string
  readonly key: string
  readonly package: string
  readonly version: string
  readonly charge: number
}

export class EnqueueBuffer {
  readonly #queue: Pick<Queue, 'sendBatch'>
  readonly #logger: Logger
  readonly #maxBytes: number
  readonly #memory: EnqueueMemory | undefined
  readonly #memoryTtlMs: number
  readonly #batchesInFlight: number
  readonly #retryBaseMs: number
  readonly #retryMaxMs: number
  readonly #losses: LossLog
  /** Jobs ready to send, oldest first. */
  #waiting: Held[] = []
  /** Keys of every held job. */
  readonly #keys = new Set<string>()
  #bytes = 0
  /** Batches being sent. */
  readonly #sending = new Set<Held[]>()
  /** Consecutive refusal rounds (batches started in the same round count once); 0 while the queue takes jobs. */
  #refusals = 0
  #round = 0
  #retryTimer: NodeJS.Timeout | undefined
  #closed = false
  #stopped = false
  #idle: (() => void)[] = []
  readonly #counts = { sent: 0, deduplicated: 0, recent: 0, dropped: 0, failed: 0, retried: 0 }

  constructor(options: EnqueueBufferOptions) {
    this.#queue = options.queue
    this.#logger = options.logger
    this.#maxBytes = options.maxBytes
    this.#memory = options.memory
    this.#memoryTtlMs = options.memoryTtlMs ?? 0
    this.#batchesInFlight = options.batchesInFlight ?? DEFAULT_BATCHES_IN_FLIGHT
    this.#retryBaseMs = options.retryBaseMs ?? RETRY_BASE_MS
    this.#retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS
    if (!Number.isSafeInteger(this.#maxBytes) || this.#maxBytes < 1) throw new TypeError('EnqueueBuffer: maxBytes must be a positive integer')
    if (!Number.isSafeInteger(this.#batchesInFlight) || this.#batchesInFlight < 1) throw new TypeError('EnqueueBuffer: batchesInFlight must be a positive integer')
    if (!(this.#memoryTtlMs >= 0)) throw new TypeError('EnqueueBuffer: memoryTtlMs must be 0 or more')
    if (!(this.#retryBaseMs > 0) || !(this.#retryMaxMs >= this.#retryBaseMs)) throw new TypeError('EnqueueBuffer: retryBaseMs must be positive and retryMaxMs at least it')
    this.#losses = new LossLog(this.#logger, options.clock ?? systemClock, options.lossLogIntervalMs ?? LOSS_LOG_INTERVAL_MS, () => this.#bounds())
  }

  /** Takes the job, skips it as recent, or counts and logs its loss; never waits for the queue, never throws. */
  enqueue = async (job: MirrorJob): Promise<void> => {
    let body: string
    try {
      body = encodeMirrorJob(job)
    } catch (error) {
      // Over the job bound (or not a job): refused before it takes any room.
      const reason = toServiceError(error).data?.['reason'] === QueueFailureReason.TOO_LARGE ? 'too_large' : 'refused'
      this.#counts.dropped++
      this.#losses.lost(job, reason)
      return
    }
    const key = mirrorJobKey(job)
    if (this.#keys.has(key)) {
      this.#counts.recent++
      return
    }
    const held: Held = { body, key, package: job.package, version: job.version, charge: 2 * Buffer.byteLength(body) + JOB_OVERHEAD_BYTES }
    if (this.#closed || this.#bytes + held.charge > this.#maxBytes) {
      this.#counts.dropped++
      this.#losses.lost(held, this.#closed ? 'shutdown' : 'full')
      return
    }
    // Held (and charged) from here, while the memory is asked too.
    this.#keys.add(key)
    this.#bytes += held.charge
    if (this.#memory !== undefined && this.#memoryTtlMs > 0 && !await this.#claim(key)) {
      // The standing claim is another job's: it stays.
      this.#release(held, false)
      this.#counts.recent++
      return
    }
    // The drain ended while the memory answered: nothing will send it.
    if (this.#stopped) {
      this.#lose(held, 'shutdown', 'dropped')
      return
    }
    this.#waiting.push(held)
    this.#pump()
  }

  stats(): EnqueueBufferStats {
    return { buffered: this.#keys.size, bufferedBytes: this.#bytes, maxBytes: this.#maxBytes, ...this.#counts }
  }

  /** True while the bytes held exceed READY_SHARE of the bound (readiness reads it). */
  pastShare(): boolean {
    return this.#bytes > READY_SHARE * this.#maxBytes
  }

  /**
   * Refuses new jobs and sends the held ones, for up to `graceMs` (a wait for
   * a retry is cut short: the drain tries at once). Whatever is still held
   * then is lost, counted and logged.
   */
  async close(graceMs: number): Promise<void> {
    this.#closed = true
    if (this.#retryTimer !== undefined) {
      clearTimeout(this.#retryTimer)
      this.#retryTimer = undefined
      this.#pump()
    }
    if (this.#keys.size > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise<void>((resolve) => this.#idle.push(resolve)),
        new Promise<void>((resolve) => { timer = setTimeout(resolve, graceMs) }),
      ])
      clearTimeout(timer)
    }
    this.#stopped = true
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer)
    // Still held at the bound: lost, whatever a send still on its way may yet be answered.
    for (const held of this.#waiting.splice(0)) this.#lose(held, 'shutdown', 'dropped')
    for (const batch of this.#sending) for (const held of batch) this.#lose(held, 'shutdown', 'dropped')
    this.#sending.clear()
    this.#losses.flush()
  }

  async #claim(key: string): Promise<boolean> {
    try {
      return await this.#memory!.claim(key, this.#memoryTtlMs)
    } catch (error) {
      this.#logger.debug(MIRROR_ENQUEUE_MEMORY_FAILED, { error: String((error as Error)?.message ?? error) })
      return true
    }
  }

  #pump(): void {
    while (!this.#stopped && this.#retryTimer === undefined && this.#waiting.length > 0 && this.#sending.size < (this.#refusals > 0 ? 1 : this.#batchesInFlight)) {
      const batch = this.#waiting.splice(0, QUEUE_LIMITS.maxMessagesPerBatch)
      this.#sending.add(batch)
      void this.#send(batch, this.#round).finally(() => this.#pump())
    }
  }

  async #send(batch: Held[], round: number): Promise<void> {
    let outcomes: SendBatchOutcome[]
    try {
      outcomes = await this.#queue.sendBatch(batch.map((held) => ({ body: held.body, dedupKey: held.key })))
    } catch (error) {
      const failure = toServiceError(error, 'QUEUE_FAILURE')
      outcomes = batch.map(() => ({ failure }))
    }
    // Abandoned at the end of the drain bound: already counted as lost.
    if (!this.#sending.delete(batch)) return
    const again: Held[] = []
    let refusal: ServiceError | undefined
    batch.forEach((held, index) => {
      const outcome = outcomes[index] ?? { failure: new ServiceError('QUEUE_FAILURE', { message: 'the queue answered nothing for this job', data: { reason: QueueFailureReason.UNAVAILABLE } }) }
      if (outcome.failure === undefined) {
        if (outcome.deduplicated === true) this.#counts.deduplicated++
        else this.#counts.sent++
        // Sent: no longer held, but its claim stands for the memory's time to live.
        this.#keys.delete(held.key)
        this.#bytes -= held.charge
        this.#settled()
      } else if (outcome.failure.data?.['reason'] === QueueFailureReason.UNAVAILABLE && !this.#stopped) {
        again.push(held)
        refusal = outcome.failure
      } else {
        this.#lose(held, this.#stopped ? 'shutdown' : lossReason(outcome.failure), this.#stopped ? 'dropped' : 'failed')
      }
    })
    if (refusal !== undefined) {
      this.#waiting = [...again, ...this.#waiting]
      this.#counts.retried += again.length
      this.#backOff(refusal, round)
    } else if (this.#refusals > 0) {
      this.#logger.info(MIRROR_QUEUE_ACCEPTING, { refusals: this.#refusals, buffered: this.#keys.size })
      this.#refusals = 0
    }
  }

  /** Pauses sending after a refusal; batches of one round (sent before the pause) count once. */
  #backOff(refusal: ServiceError, round: number): void {
    if (round === this.#round) {
      this.#round++
      this.#refusals++
      if (this.#refusals === 1) {
        this.#logger.warn(MIRROR_QUEUE_REFUSING, {
          code: refusal.code, reason: refusal.data?.['reason'], ...(refusal.data?.['transport'] === undefined ? {} : { transport: refusal.data['transport'] }),
          buffered: this.#keys.size, bufferedBytes: this.#bytes, maxBytes: this.#maxBytes,
        })
      }
    }
    if (this.#retryTimer !== undefined || this.#stopped) return
    const ceiling = Math.min(this.#retryMaxMs, this.#retryBaseMs * 2 ** Math.min(this.#refusals - 1, 30))
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      this.#pump()
    }, ceiling / 2 + Math.random() * (ceiling / 2))
    this.#retryTimer.unref()
  }

  #lose(held: Held, reason: LossReason, counter: 'dropped' | 'failed'): void {
    this.#counts[counter]++
    this.#release(held)
    this.#losses.lost(held, reason)
  }

  /** No longer held: its bytes and key come back, and so does its claim when it holds one (the next download enqueues it again). */
  #release(held: Held, claimed = true): void {
    if (!this.#keys.delete(held.key)) return
    this.#bytes -= held.charge
    if (claimed && this.#memory !== undefined && this.#memoryTtlMs > 0) this.#memory.release(held.key).catch(() => {})
    this.#settled()
  }

  /** Wakes a waiting `close` once nothing is held. */
  #settled(): void {
    if (this.#keys.size === 0) for (const wake of this.#idle.splice(0)) wake()
  }

  #bounds(): Record<string, number> {
    return { buffered: this.#keys.size, bufferedBytes: this.#bytes, maxBytes: this.#maxBytes }
  }
}

function lossReason(failure: ServiceError): LossReason {
  switch (failure.data?.['reason']) {
    case QueueFailureReason.FULL: return 'queue_full'
    case QueueFailureReason.TOO_LARGE: return 'too_large'
    default: return 'refused'
  }
}

/**
 * MIRROR_JOBS_LOST, paced: the first loss is logged at once; those within
 * the interval after a line are counted into the next line, written when
 * the interval ends (or at `flush`). Every loss is in some line's count.
 */
class LossLog {
  readonly #logger: Logger
  readonly #clock: Clock
  readonly #intervalMs: number
  readonly #bounds: () => Record<string, number>
  #count = 0
  #reasons: Partial<Record<LossReason, number>> = {}
  #last: { package: string, version: string } | undefined
  #lastLineAt = Number.NEGATIVE_INFINITY
  #timer: NodeJS.Timeout | undefined

  constructor(logger: Logger, clock: Clock, intervalMs: number, bounds: () => Record<string, number>) {
    this.#logger = logger
    this.#clock = clock
    this.#intervalMs = intervalMs
    this.#bounds = bounds
  }

  lost(job: { package: string, version: string }, reason: LossReason): void {
    this.#count++
    this.#reasons[reason] = (this.#reasons[reason] ?? 0) + 1
    this.#last = { package: job.package, version: job.version }
    const wait = this.#lastLineAt + this.#intervalMs - this.#clock.now()
    if (wait <= 0) this.flush()
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), wait)
      this.#timer.unref()
    }
  }

  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#count === 0) return
    this.#logger.error(MIRROR_JOBS_LOST, { lost: this.#count, reasons: this.#reasons, ...this.#last, ...this.#bounds() })
    this.#count = 0
    this.#reasons = {}
    this.#lastLineAt = this.#clock.now()
  }
}
