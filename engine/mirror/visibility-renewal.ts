/**
 * Visibility renewal of one received mirror message (SPEC.md 3.7, 8): the
 * message stays hidden while its job runs. Each renewal asks for the same
 * window again, a third of the way into what remains of the current one, and
 * never reaches past twelve hours from the receive (SQS's ceiling per
 * receipt). A renewal that keeps failing gives the job up: the caller
 * cancels it (or skips it if it has not started) and leaves the message to
 * its window; the redelivery counts against the receive budget.
 *
 * "Keeps failing": the receipt is stale (another consumer has the message),
 * or three renewals in a row failed, or the window ran out before one
 * succeeded. A failed renewal is retried a third of the way into what
 * remains, like a due one.
 */
import type { Clock } from '../clock.js'
import { isServiceError } from '../errors.js'
import { systemTimers, type TimerHandle, type Timers } from '../memory/timers.js'
import { QUEUE_LIMITS, QueueFailureReason, type Queue } from '../queue/queue.js'

/** Consecutive failed renewals after which the job is given up. */
export const RENEWAL_ATTEMPTS = 3

export interface GiveUp {
  /** The queue failure's reason (`receipt-handle-stale`, `visibility-limit`...) or `window-ended`. */
  readonly reason: string
  /** What the transport said: the queue error's own detail, when there is one. */
  readonly transport: string | undefined
}

export interface VisibilityRenewalOptions {
  readonly queue: Pick<Queue, 'changeVisibility'>
  readonly receiptHandle: string
  readonly windowSeconds: number
  /** When the message was received, on `clock`. */
  readonly receivedAt: number
  readonly clock: Clock
  readonly onGiveUp: (why: GiveUp) => void
  /** Tests pass timers on their own clock; default the system's. */
  readonly timers?: Timers
}

const LIFETIME_MS = QUEUE_LIMITS.maxVisibilitySeconds * 1000

export class VisibilityRenewal {
  readonly #options: VisibilityRenewalOptions
  #deadline: number
  #failures = 0
  #timer: TimerHandle | undefined
  #stopped = false
  #renewals = 0

  constructor(options: VisibilityRenewalOptions) {
    this.#options = options
    this.#deadline = options.receivedAt + options.windowSeconds * 1000
    this.#schedule()
  }

  /** Successful renewals so far. */
  get renewals(): number { return this.#renewals }

  stop(): void {
    this.#stopped = true
    this.#timer?.clear()
  }

  #schedule(): void {
    if (this.#stopped) return
    const remaining = Math.max(0, this.#deadline - this.#options.clock.now())
    this.#timer = (this.#options.timers ?? systemTimers).after(Math.floor(remaining / 3), () => { void this.#renew() })
    this.#timer.unref()
  }

  async #renew(): Promise<void> {
    if (this.#stopped) return
    const { queue, receiptHandle, windowSeconds, receivedAt, clock } = this.#options
    const now = clock.now()
    // Never past twelve hours from the receive: the last renewal asks only for what is left.
    const seconds = Math.min(windowSeconds, Math.floor((receivedAt + LIFETIME_MS - now) / 1000))
    if (seconds <= 0) return this.#giveUp({ reason: QueueFailureReason.VISIBILITY_LIMIT, transport: undefined })
    try {
      await queue.changeVisibility(receiptHandle, seconds)
    } catch (error) {
      if (this.#stopped) return
      const reason = isServiceError(error, 'QUEUE_FAILURE') && typeof error.data?.['reason'] === 'string' ? error.data['reason'] : 'renewal-failed'
      const transport = transportOf(error)
      this.#failures++
      const windowEnded = clock.now() >= this.#deadline
      if (reason === QueueFailureReason.RECEIPT_HANDLE_STALE || this.#failures >= RENEWAL_ATTEMPTS || windowEnded) {
        return this.#giveUp({ reason: windowEnded && reason === 'renewal-failed' ? 'window-ended' : reason, transport })
      }
      this.#schedule()
      return
    }
    if (this.#stopped) return
    this.#renewals++
    this.#failures = 0
    this.#deadline = now + seconds * 1000
    this.#schedule()
  }

  #giveUp(why: GiveUp): void {
    if (this.#stopped) return
    this.stop()
    this.#options.onGiveUp(why)
  }
}

function transportOf(error: unknown): string | undefined {
  if (isServiceError(error)) {
    const transport = error.data?.['transport']
    if (typeof transport === 'string') return transport
    return error.message
  }
  return error instanceof Error ? error.message : undefined
}
