/**
 * How hard the mirror worker asks its mirror target (issue 29 item 3, issue
 * 30): the target is usually the private registry that also serves the
 * installs, so mirror work yields to them, and a target that does not
 * answer pauses mirror work rather than burning the jobs' delivery budgets.
 *
 * Concurrency, AIMD on the target's answer times. `limit` starts at the
 * plan's mirror concurrency (its ceiling) and never falls below 1:
 * - each lookup answer's time to headers is a sample (`sample`);
 * - a sample is slow when it exceeds `limits.mirrorTargetSlowMs`, or, when
 *   that is 0 (automatic), 3 x the fastest answer of the last five minutes
 *   plus 100 ms (a relative bound: a remote target is not slow for being
 *   far away, a loopback one not for a garbage-collection pause);
 * - a slow sample, or a failure (no answer, 408, 429, 5xx), halves the
 *   limit, at most once per round: a sample whose exchange started before
 *   the last decrease does not decrease it again, so one congested moment
 *   seen by several jobs in flight halves it once;
 * - `limit` fast samples in a row add one job (one per round).
 * The consumer receives no more jobs than `capacity` (mirror-consumer.ts),
 * so a busy target gets fewer mirror requests beside the installs it serves.
 *
 * Outage. A target exchange that fails without an answer, with a
 * transient status, or with the mirror's credential refused (401, 403;
 * mirror-worker.ts), pauses the target (`down`, one warning per episode):
 * `admit` then holds every job of this target, the consumer receives
 * nothing more while a job is held (`capacity` 1), and one held job at a
 * time tries again (the trial) after 1 s, then 2, 4, 8 and every 15 s. The
 * first answer of the target (any status that is not transient) resumes
 * work (one info line with how long it was paused) and every held job goes
 * on in the delivery it holds. A held job keeps its message hidden (its
 * visibility is renewed as for any running job), so an outage costs no
 * receive. Each trial beats `onTrial` (the worker's /livez heartbeat: a
 * paused worker is alive).
 */
import { systemClock, type Clock } from '../clock.js'
import type { Logger } from '../log/logger.js'
import { systemTimers, type TimerHandle, type Timers } from '../memory/timers.js'

/** warn: the target failed without an answer or with a transient status; jobs are held until it answers. */
export const MIRROR_TARGET_PAUSED = 'mirror target unavailable; mirror work paused'
/** info: the target answered again; held jobs go on. */
export const MIRROR_TARGET_RESUMED = 'mirror target answers again; mirror work resumed'

/** First wait before a held job tries the target again; doubled after each failed trial. */
export const OUTAGE_FIRST_TRIAL_MS = 1_000
/** Longest wait between two trials: work resumes at most this long after the target's return. */
export const OUTAGE_MAX_TRIAL_MS = 15_000
/** Automatic slow bound: SLOW_FACTOR x the baseline + SLOW_MARGIN_MS. */
export const SLOW_FACTOR = 3
export const SLOW_MARGIN_MS = 100
/** The baseline is the fastest answer of the last BASELINE_BUCKETS buckets of BASELINE_BUCKET_MS. */
const BASELINE_BUCKET_MS = 60_000
const BASELINE_BUCKETS = 5

export interface TargetPaceOptions {
  /** The plan's mirror concurrency: the limit's ceiling and start. */
  readonly maxConcurrency: number
  /** `limits.mirrorTargetSlowMs`; 0 or undefined: automatic. */
  readonly slowMs?: number
  /** The target's host:port and the mount, for the log lines. */
  readonly authority?: string
  readonly mount?: string
  readonly logger?: Logger
  /** Each trial while the target is down. */
  readonly onTrial?: () => void
  readonly clock?: Clock
  readonly timers?: Timers
  /** Tests shorten the waits between trials. */
  readonly firstTrialMs?: number
  readonly maxTrialMs?: number
}

/** One try admitted by `admit`: say what the target did at each exchange, then `end`. */
export interface TargetTicket {
  /** The target answered (any status but a transient one): it is up. */
  answered(): void
  /** No answer, or a transient status: the target is paused. */
  failed(cause: string): void
  /** Always, last (a trial that reported nothing lets the next held job try). */
  end(): void
}

/** `service.mirror.target.*` of one mount. */
export interface TargetPaceSnapshot {
  /** Jobs at once the target is asked for now. */
  readonly limit: number
  readonly maxConcurrency: number
  /** 1 while the target is paused. */
  readonly paused: number
  /** Pauses so far (outage episodes). */
  readonly pauses: number
  /** Answers slower than the slow bound. */
  readonly slowAnswers: number
  /** Times the limit was halved (slow answers and failures). */
  readonly decreases: number
  /** The fastest answer of the last five minutes, ms; 0 before the first. */
  readonly baselineMs: number
}

interface Waiter {
  readonly resolve: (ticket: TargetTicket) => void
  readonly reject: (reason: unknown) => void
  readonly cleanup: () => void
}

export class TargetPace {
  readonly #o: TargetPaceOptions
  readonly #max: number
  readonly #clock: Clock
  readonly #timers: Timers
  readonly #waiters: Waiter[] = []
  readonly #listeners = new Set<() => void>()
  /** Per-minute minima: [bucket index, fastest ms]. */
  readonly #buckets: Array<[number, number]> = []
  /** Jobs at once, 1 to #max. */
  #window: number
  /** Fast answers since the last change of the window. */
  #credit = 0
  #lastDecreaseAt = Number.NEGATIVE_INFINITY
  #down = false
  #pausedAt = 0
  #backoffMs: number
  #trialInFlight = false
  #nextTrialAt = 0
  #trialTimer: TimerHandle | undefined
  #counts = { pauses: 0, slowAnswers: 0, decreases: 0 }

  constructor(options: TargetPaceOptions) {
    if (!Number.isSafeInteger(options.maxConcurrency) || options.maxConcurrency < 1) throw new TypeError('maxConcurrency must be a positive integer')
    if (options.slowMs !== undefined && (!Number.isFinite(options.slowMs) || options.slowMs < 0)) throw new TypeError('slowMs must be a number of milliseconds, 0 for automatic')
    this.#o = options
    this.#max = options.maxConcurrency
    this.#window = options.maxConcurrency
    this.#clock = options.clock ?? systemClock
    this.#timers = options.timers ?? systemTimers
    this.#backoffMs = this.#firstTrialMs
  }

  /** Jobs at once the target is asked for now: 1 to the plan's mirror concurrency. */
  get limit(): number { return this.#window }

  /** Jobs the consumer may run for this target: `limit`, or 1 while it is paused (a held job, or the one that will try). */
  get capacity(): number { return this.#down ? 1 : this.limit }

  get paused(): boolean { return this.#down }

  /** Called when `capacity` may have changed. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /**
   * Resolves when this job may ask the target: at once while it answers;
   * while it is paused, when this job's trial is due. Rejects with the
   * signal's reason when the signal aborts first.
   */
  admit(signal?: AbortSignal): Promise<TargetTicket> {
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    if (!this.#down) return Promise.resolve(this.#ticket(false))
    return new Promise<TargetTicket>((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.#waiters.indexOf(waiter)
        if (at >= 0) this.#waiters.splice(at, 1)
        reject(signal?.reason)
      }
      const waiter: Waiter = { resolve, reject, cleanup: () => signal?.removeEventListener('abort', onAbort) }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(waiter)
      this.#scheduleTrial()
    })
  }

  /** A lookup's answer came after `latencyMs` (to its headers). */
  sample(latencyMs: number): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return
    const now = this.#clock.now()
    this.#remember(now, latencyMs)
    if (this.#down) return
    if (latencyMs > this.#slowBound()) {
      this.#counts.slowAnswers++
      this.#decrease(now - latencyMs)
      return
    }
    // One more job per round: after `limit` fast answers.
    if (++this.#credit < this.#window || this.#window >= this.#max) return
    this.#credit = 0
    this.#window++
    this.#changed()
  }

  snapshot(): TargetPaceSnapshot {
    return {
      limit: this.limit,
      maxConcurrency: this.#max,
      paused: this.#down ? 1 : 0,
      ...this.#counts,
      baselineMs: this.#baseline() ?? 0,
    }
  }

  /** Stops the trial timer and rejects every held job (the worker is closing). */
  close(reason: unknown): void {
    this.#trialTimer?.clear()
    this.#trialTimer = undefined
    for (const waiter of this.#waiters.splice(0)) {
      waiter.cleanup()
      waiter.reject(reason)
    }
  }

  get #firstTrialMs(): number { return this.#o.firstTrialMs ?? OUTAGE_FIRST_TRIAL_MS }

  #ticket(trial: boolean): TargetTicket {
    const startedAt = this.#clock.now()
    // A trial decides with its first report; after it, the ticket is an ordinary one.
    let trying = trial
    let ended = false
    return {
      answered: () => {
        trying = false
        this.#answered()
      },
      failed: (cause) => {
        const wasTrial = trying
        trying = false
        this.#failed(startedAt, wasTrial, cause)
      },
      end: () => {
        if (ended) return
        ended = true
        if (trying && this.#trialInFlight) {
          // A trial that ended without a verdict (the job failed elsewhere, or was cancelled): the next held job tries.
          this.#trialInFlight = false
          this.#scheduleTrial()
        }
      },
    }
  }

  #answered(): void {
    if (!this.#down) return
    this.#down = false
    this.#trialInFlight = false
    this.#trialTimer?.clear()
    this.#trialTimer = undefined
    this.#backoffMs = this.#firstTrialMs
    this.#o.logger?.info(MIRROR_TARGET_RESUMED, { ...this.#where(), pausedMs: this.#clock.now() - this.#pausedAt })
    for (const waiter of this.#waiters.splice(0)) {
      waiter.cleanup()
      waiter.resolve(this.#ticket(false))
    }
    this.#changed()
  }

  #failed(startedAt: number, trial: boolean, cause: string): void {
    this.#decrease(startedAt)
    const now = this.#clock.now()
    if (!this.#down) {
      this.#down = true
      this.#pausedAt = now
      this.#counts.pauses++
      this.#backoffMs = this.#firstTrialMs
      this.#o.logger?.warn(MIRROR_TARGET_PAUSED, { ...this.#where(), cause, retryInMs: this.#backoffMs })
      this.#changed()
    } else if (trial) {
      this.#backoffMs = Math.min(this.#backoffMs * 2, this.#o.maxTrialMs ?? OUTAGE_MAX_TRIAL_MS)
    } else {
      // A job admitted before the pause failed too: the pause stands as scheduled.
      return
    }
    this.#trialInFlight = false
    this.#nextTrialAt = now + this.#backoffMs
    this.#trialTimer?.clear()
    this.#trialTimer = undefined
    this.#scheduleTrial()
  }

  /** Lets the first held job try when its trial is due, unless one is trying. */
  #scheduleTrial(): void {
    if (!this.#down || this.#trialInFlight || this.#trialTimer !== undefined || this.#waiters.length === 0) return
    const wait = Math.max(0, this.#nextTrialAt - this.#clock.now())
    this.#trialTimer = this.#timers.after(wait, () => {
      this.#trialTimer = undefined
      if (!this.#down || this.#trialInFlight) return
      const waiter = this.#waiters.shift()
      if (waiter === undefined) return
      waiter.cleanup()
      this.#trialInFlight = true
      this.#o.onTrial?.()
      waiter.resolve(this.#ticket(true))
    })
    this.#trialTimer.unref()
  }

  #decrease(startedAt: number): void {
    // Once per round: answers to requests sent before the last decrease say nothing new.
    if (startedAt < this.#lastDecreaseAt) return
    this.#lastDecreaseAt = this.#clock.now()
    this.#counts.decreases++
    this.#credit = 0
    const before = this.#window
    this.#window = Math.max(1, Math.floor(this.#window / 2))
    if (this.#window !== before) this.#changed()
  }

  #slowBound(): number {
    const configured = this.#o.slowMs ?? 0
    if (configured > 0) return configured
    const baseline = this.#baseline()
    return baseline === undefined ? Number.POSITIVE_INFINITY : SLOW_FACTOR * baseline + SLOW_MARGIN_MS
  }

  #remember(now: number, latencyMs: number): void {
    const bucket = Math.floor(now / BASELINE_BUCKET_MS)
    const last = this.#buckets.at(-1)
    if (last !== undefined && last[0] === bucket) last[1] = Math.min(last[1], latencyMs)
    else this.#buckets.push([bucket, latencyMs])
    while (this.#buckets.length > 0 && this.#buckets[0]![0] <= bucket - BASELINE_BUCKETS) this.#buckets.shift()
  }

  #baseline(): number | undefined {
    const oldest = Math.floor(this.#clock.now() / BASELINE_BUCKET_MS) - BASELINE_BUCKETS + 1
    let fastest: number | undefined
    for (const [bucket, ms] of this.#buckets) if (bucket >= oldest) fastest = fastest === undefined ? ms : Math.min(fastest, ms)
    return fastest
  }

  #where(): Record<string, string> {
    return { ...(this.#o.mount === undefined ? {} : { mount: this.#o.mount }), ...(this.#o.authority === undefined ? {} : { target: this.#o.authority }) }
  }

  #changed(): void {
    for (const listener of this.#listeners) listener()
  }
}
