/**
 * The mirror worker's consume loop (SPEC.md 3.7, 6.1): long-polls the queue
 * for as many messages as it has free job slots, runs each through the
 * worker with its visibility renewed, and settles every delivery:
 *
 * - success (mirrored, already present): deleted;
 * - anything else: left to its window; a job that cannot succeed is thus
 *   redelivered until the redrive policy moves it to the dead-letter queue;
 * - a job this consumer found `refused` (the target refused every try,
 *   mirror-worker.ts) is not tried again when its message comes back: the
 *   redelivery is left to its window at once, with no request to the
 *   target, no counter and a debug line, until the redrive policy takes it
 *   (remembered by message id, REFUSED_MEMORY entries for REFUSED_MEMORY_MS);
 * - a delivery at the receive budget that did not succeed: discarded
 *   (deleted) with an error log naming the job and the reason, counted as
 *   `result=discarded`. With a readable redrive policy the budget is one
 *   above its `maxReceiveCount`, so the dead-letter queue captures first;
 * - an undecodable payload: rejected before the worker, at debug and
 *   without the payload, with no budget, error log or counter (SPEC.md 6.1
 *   item 4); the redrive policy captures it.
 *
 * How many jobs run at once: `concurrency` (the plan's), or fewer when the
 * runner says its target wants fewer (`capacity`: the target's pace,
 * target-pace.ts, slows down on slow answers and pauses while the target
 * does not answer). The loop then receives nothing until a job ends or the
 * capacity grows, so messages wait in the queue without spending receives.
 *
 * Jobs of every mount go through this one loop: `worker` is a
 * MirrorDispatch (mirror-dispatch.ts) that hands each job to its mount's
 * worker, so budgets, counters and settle rules are the same for `js` and
 * `py`.
 *
 * Every successful poll and every settled job beats the heartbeat that
 * /livez reads (SPEC.md 3.2). `stop` is the drain, started with the
 * process's drain (not after it): no more receives, running jobs finish
 * within the bound, then the rest are cancelled and handed back unacknowledged
 * (visibility 0, so another worker takes them at once; a process killed
 * before that leaves them to their window; embedded: replayed on boot).
 */
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'
import { isServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { Queue, QueueMessage } from '../queue/queue.js'
import { inRootSpan } from '../telemetry/work-span.js'
import type { MirrorCounters } from './mirror-counters.js'
import { decodeMirrorJob, mountOf, type MirrorJob } from './mirror-job.js'
import type { MirrorOutcome } from './job-outcomes.js'
import { VisibilityRenewal, type GiveUp } from './visibility-renewal.js'

/** error: the delivery reached the receive budget without success; deleted (SPEC.md 3.7). */
export const MIRROR_JOB_DISCARDED = 'mirror job discarded at the receive budget'
/** warn: renewal kept failing; the job was cancelled or skipped and left to its window (SPEC.md 3.7). */
export const MIRROR_JOB_GIVEN_UP = 'mirror job given up: visibility renewal kept failing'
/** debug: a payload that is not a mirror job; never logged itself (SPEC.md 6.1 item 4). */
export const MIRROR_JOB_UNDECODABLE = 'undecodable mirror job rejected'
/** warn: a receive failed; the loop retries after a pause. */
export const MIRROR_RECEIVE_FAILED = 'mirror queue receive failed'
/** warn: deleting or releasing a settled delivery failed; it comes back after its window. */
export const MIRROR_SETTLE_FAILED = 'mirror job settle failed'

/** Default visibility window, seconds: long enough for most artifacts, renewed for the rest. */
export const DEFAULT_VISIBILITY_SECONDS = 120
/** Long poll, seconds (SQS's maximum): an idle worker costs one request per 20 s. */
export const DEFAULT_WAIT_SECONDS = 20
/** Pause after a failed receive. */
const RECEIVE_RETRY_MS = 5_000
/** Refused jobs remembered (by message id) so their redeliveries are not tried again. */
export const REFUSED_MEMORY = 4096
export const REFUSED_MEMORY_MS = 60 * 60 * 1000
/** debug: a redelivery of a job this consumer found refused; left to its window for the redrive policy. */
export const MIRROR_JOB_REFUSED_BEFORE = 'mirror job refused before; left for the dead-letter queue'

export interface JobRunner {
  process(job: MirrorJob, signal: AbortSignal): Promise<MirrorOutcome>
  /** Jobs the runner's targets take at once now; unset: as many as the consumer's concurrency. */
  capacity?(): number
  /** Called when `capacity` may have grown. */
  onCapacity?(listener: () => void): void
}

export interface MirrorConsumerOptions {
  readonly queue: Queue
  readonly worker: JobRunner
  readonly counters: MirrorCounters
  readonly logger: Logger
  /** Jobs at once (the memory plan's mirror-artifact capacity). */
  readonly concurrency: number
  /** Deliveries a job gets before it is discarded (SERVICE_QUEUE__MAX_RECEIVE_COUNT, or redrive + 1). */
  readonly maxReceiveCount: number
  readonly visibilitySeconds?: number
  readonly waitSeconds?: number
  /** A successful poll or a settled job (the /livez heartbeat). */
  readonly onProgress?: () => void
  readonly clock?: Clock
  /** Pause after a failed receive; tests shorten it. */
  readonly receiveRetryMs?: number
}

interface Running {
  readonly controller: AbortController
  done: Promise<void>
}

export class MirrorConsumer {
  readonly #o: MirrorConsumerOptions
  readonly #visibility: number
  readonly #wait: number
  readonly #clock: Clock
  readonly #running = new Set<Running>()
  readonly #stopPolling = new AbortController()
  /** Message ids of jobs found refused, with when they are forgotten; oldest first. */
  readonly #refused = new Map<string, number>()
  #loop: Promise<void> | undefined
  #slotFreed: (() => void) | undefined
  #stopping = false

  constructor(options: MirrorConsumerOptions) {
    if (!Number.isSafeInteger(options.concurrency) || options.concurrency < 1) throw new TypeError('concurrency must be a positive integer')
    if (!Number.isSafeInteger(options.maxReceiveCount) || options.maxReceiveCount < 1) throw new TypeError('maxReceiveCount must be a positive integer')
    this.#o = options
    this.#visibility = options.visibilitySeconds ?? DEFAULT_VISIBILITY_SECONDS
    this.#wait = options.waitSeconds ?? DEFAULT_WAIT_SECONDS
    this.#clock = options.clock ?? systemClock
    options.worker.onCapacity?.(() => this.#wake())
  }

  get running(): number { return this.#running.size }

  start(): void {
    this.#loop ??= this.#poll()
  }

  /**
   * Stops receiving, lets running jobs finish for up to `graceMs`, then
   * cancels the rest (their messages are left to their windows).
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true
    this.#stopPolling.abort()
    this.#wake()
    await this.#loop
    const all = (): Promise<unknown> => Promise.allSettled([...this.#running].map((r) => r.done))
    let timer: NodeJS.Timeout | undefined
    await Promise.race([all(), new Promise((resolve) => { timer = setTimeout(resolve, graceMs) })])
    clearTimeout(timer)
    for (const r of this.#running) r.controller.abort(new Error('drain bound reached'))
    await all()
  }

  async #poll(): Promise<void> {
    const { queue, logger } = this.#o
    while (!this.#stopping) {
      const capacity = Math.max(1, Math.min(this.#o.concurrency, this.#o.worker.capacity?.() ?? this.#o.concurrency))
      const free = capacity - this.#running.size
      if (free <= 0) {
        await new Promise<void>((resolve) => { this.#slotFreed = resolve })
        continue
      }
      let messages: QueueMessage[]
      try {
        messages = await queue.receive({ max: Math.min(free, 10), visibilitySeconds: this.#visibility, waitSeconds: this.#wait, signal: this.#stopPolling.signal })
      } catch (error) {
        if (this.#stopping) break
        logger.warn(MIRROR_RECEIVE_FAILED, { error: describe(error) })
        await this.#pause(this.#o.receiveRetryMs ?? RECEIVE_RETRY_MS)
        continue
      }
      if (this.#stopping) {
        // Received while stopping: not started, and handed back at once rather than left to a whole window.
        await Promise.all(messages.map((m) => this.#apply(() => queue.changeVisibility(m.receiptHandle, 0), { messageId: m.messageId }, 'release')))
        break
      }
      this.#o.onProgress?.()
      const receivedAt = this.#clock.now()
      for (const message of messages) this.#start(message, receivedAt)
    }
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      this.#stopPolling.signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
    })
  }

  #start(message: QueueMessage, receivedAt: number): void {
    const controller = new AbortController()
    const entry: { controller: AbortController, done: Promise<void> } = { controller, done: Promise.resolve() }
    entry.done = this.#settle(message, receivedAt, controller).finally(() => {
      this.#running.delete(entry)
      this.#wake()
    })
    this.#running.add(entry)
  }

  /** A slot was freed or the capacity may have grown: the loop looks again. */
  #wake(): void {
    const wake = this.#slotFreed
    this.#slotFreed = undefined
    wake?.()
  }

  /** Whether this consumer found the message's job refused (and forgets what has expired). */
  #refusedBefore(messageId: string): boolean {
    const now = this.#clock.now()
    for (const [id, until] of this.#refused) {
      if (until > now) break
      this.#refused.delete(id)
    }
    return this.#refused.has(messageId)
  }

  #rememberRefused(messageId: string): void {
    this.#refused.delete(messageId)
    this.#refused.set(messageId, this.#clock.now() + REFUSED_MEMORY_MS)
    if (this.#refused.size > REFUSED_MEMORY) this.#refused.delete(this.#refused.keys().next().value as string)
  }

  async #settle(message: QueueMessage, receivedAt: number, controller: AbortController): Promise<void> {
    const { queue, worker, counters, logger, maxReceiveCount } = this.#o
    let job: MirrorJob
    try {
      job = decodeMirrorJob(message.body)
    } catch (error) {
      logger.debug(MIRROR_JOB_UNDECODABLE, { messageId: message.messageId, detail: isServiceError(error) ? error.data?.['detail'] : undefined })
      return
    }
    const named = { messageId: message.messageId, mount: mountOf(job), package: job.package, version: job.version, url: job.url, receiveCount: message.receiveCount }
    if (message.receiveCount > maxReceiveCount) {
      return this.#discard(message, named, 'the delivery count is past the receive budget')
    }
    if (this.#refusedBefore(message.messageId)) {
      // No new try: the target refused every one already (issue 30 item 4); the redrive policy takes it.
      logger.debug(MIRROR_JOB_REFUSED_BEFORE, named)
      this.#o.onProgress?.()
      if (message.receiveCount >= maxReceiveCount) return this.#discard(message, named, 'the mirror target refused every try', 'refused')
      return
    }

    let givenUp: GiveUp | undefined
    const renewal = new VisibilityRenewal({
      queue, receiptHandle: message.receiptHandle, windowSeconds: this.#visibility, receivedAt, clock: this.#clock,
      onGiveUp: (why) => {
        givenUp = why
        logger.warn(MIRROR_JOB_GIVEN_UP, { ...named, reason: why.reason, ...(why.transport === undefined ? {} : { transport: why.transport }) })
        controller.abort(new Error(`visibility renewal gave up: ${why.reason}`))
      },
    })
    let outcome: MirrorOutcome | undefined
    try {
      outcome = await inRootSpan('mirror job', { 'service.mount': mountOf(job), 'package.name': job.package, 'package.version': job.version, 'messaging.message.id': message.messageId }, () => worker.process(job, controller.signal))
    } catch (error) {
      if (!controller.signal.aborted) logger.warn(MIRROR_SETTLE_FAILED, { ...named, error: describe(error) })
    } finally {
      renewal.stop()
    }
    if (givenUp !== undefined) {
      counters.record('given_up')
      return
    }
    if (outcome === undefined) {
      // Cancelled by the drain: handed back at once, so another worker need not wait out the window.
      if (this.#stopping) await this.#apply(() => queue.changeVisibility(message.receiptHandle, 0), named, 'release')
      return
    }
    this.#o.onProgress?.()
    if (outcome.disposition === 'delete') {
      counters.record(outcome.result)
      await this.#apply(() => queue.delete(message.receiptHandle), named, 'delete')
      return
    }
    if (outcome.result === 'refused') this.#rememberRefused(message.messageId)
    if (message.receiveCount >= maxReceiveCount) {
      return this.#discard(message, named, outcome.reason ?? outcome.result, outcome.result)
    }
    counters.record(outcome.result)
  }

  async #discard(message: QueueMessage, named: Record<string, unknown>, reason: string, result?: string): Promise<void> {
    this.#o.logger.error(MIRROR_JOB_DISCARDED, { ...named, budget: this.#o.maxReceiveCount, reason, ...(result === undefined ? {} : { result }) })
    this.#o.counters.record('discarded')
    await this.#apply(() => this.#o.queue.delete(message.receiptHandle), named, 'delete')
  }

  async #apply(action: () => Promise<void>, named: Record<string, unknown>, what: string): Promise<void> {
    try {
      await action()
    } catch (error) {
      this.#o.logger.warn(MIRROR_SETTLE_FAILED, { ...named, action: what, error: describe(error) })
    }
  }
}

function describe(error: unknown): string {
  if (isServiceError(error)) {
    const reason = error.data?.['reason']
    return typeof reason === 'string' ? `${error.code} ${reason}: ${error.message}` : `${error.code}: ${error.message}`
  }
  return error instanceof Error ? error.message : String(error)
}
