/**
 * When Pilot runs next, and its alarm for an artifact never published
 * (SPEC.md 6.2 "Other logged facts").
 *
 * SPEC.md leaves the schedule and the boot retry budget open; they are:
 * - a run at start, then one every `advisories.pilotIntervalSeconds` (an
 *   hour by default, PILOT_RUN_INTERVAL_MS; 900 runs every 15 minutes, so a
 *   malware record reaches the proxies within about 15 minutes plus one
 *   poll) once every mounted ecosystem has been published; every run publishes, even
 *   unchanged bytes, so the proxy's push age stays far below any maximum
 *   age of SPEC.md 8 (three days at least);
 * - the boot retry budget: five runs in all, the retries after 30 s, 1, 2
 *   and 4 minutes (about 7.5 minutes), while some mounted ecosystem has
 *   never been published;
 * - once that budget is spent with an ecosystem still unpublished, an ERROR
 *   naming Pilot and the store, repeated every 15 minutes while it stays
 *   so, with a run every 15 minutes meanwhile.
 * The schedule is a pure state machine on the injected clock; the role owns
 * the timer.
 */
import type { Clock } from '../../clock.js'
import type { Logger } from '../../log/logger.js'
import type { Ecosystem } from '../artifact/database.js'

/** error: the boot retry budget is spent and some mounted ecosystem has no artifact in the store. */
export const PILOT_NO_ARTIFACT = 'pilot has published no advisory artifact'

export const PILOT_RUN_INTERVAL_MS = 60 * 60 * 1000
/** Delays before the retries of the boot retry budget; with the first run, five runs. */
export const BOOT_RETRY_DELAYS_MS: readonly number[] = Object.freeze([30_000, 60_000, 120_000, 240_000])
export const NO_ARTIFACT_REPEAT_MS = 15 * 60 * 1000

export interface PilotScheduleOptions {
  readonly ecosystems: readonly Ecosystem[]
  /** The store as the alarm names it, e.g. `embedded:./var/store` or `s3://bucket/prefix`. */
  readonly store: string
  readonly clock: Clock
  readonly logger: Logger
  /** Milliseconds between two runs once every ecosystem is published; default PILOT_RUN_INTERVAL_MS. */
  readonly intervalMs?: number
}

export class PilotSchedule {
  readonly #options: PilotScheduleOptions
  readonly #published = new Set<Ecosystem>()
  readonly #startedAt: number
  #runs = 0
  #lastAlarm: number | undefined

  constructor(options: PilotScheduleOptions) {
    this.#options = options
    this.#startedAt = options.clock.now()
  }

  get runs(): number { return this.#runs }

  /** Mounted ecosystems never published since this Pilot started. */
  missing(): Ecosystem[] { return this.#options.ecosystems.filter((e) => !this.#published.has(e)) }

  /** Records one run (the ecosystems it published) and returns the milliseconds until the next run. */
  afterRun(published: readonly Ecosystem[]): number {
    this.#runs++
    for (const e of published) this.#published.add(e)
    const missing = this.missing()
    if (missing.length === 0) return this.#options.intervalMs ?? PILOT_RUN_INTERVAL_MS
    const retry = BOOT_RETRY_DELAYS_MS[this.#runs - 1]
    if (retry !== undefined) return retry
    const now = this.#options.clock.now()
    if (this.#lastAlarm === undefined || now - this.#lastAlarm >= NO_ARTIFACT_REPEAT_MS) {
      this.#lastAlarm = now
      this.#options.logger.error(PILOT_NO_ARTIFACT, {
        role: 'pilot',
        store: this.#options.store,
        ecosystems: missing,
        runs: this.#runs,
        sinceSeconds: Math.floor((now - this.#startedAt) / 1000),
      })
    }
    return NO_ARTIFACT_REPEAT_MS
  }
}
