/**
 * The half-maximum alarm of the advisory push age (SPEC.md 3.5): one error
 * line per crossing of half the mount's maximum age, naming the ecosystem,
 * the push time, the age and the maximum; it re-arms when a fresh push brings
 * the age back under half. The consumer checks it at every poll tick, so the
 * line comes from the clock passing the mark, not from traffic.
 *
 * The refusal at the maximum itself is the evaluator's (engine/policy/
 * advisory-access.ts), which reads the same publication time from the
 * database in the slot. A push with no publication time is expired outright;
 * the consumer logs that when it swaps such an artifact in, so it is not
 * repeated here.
 */
import type { Ecosystem } from '../artifact/database.js'
import type { Logger } from '../../log/logger.js'

/** error: the push passed half its maximum age. SPEC.md does not fix the text. */
export const PUSH_AGE_HALF_MAXIMUM = 'advisory push age passed half its maximum'

export interface PushAgeAlarmOptions {
  readonly ecosystem: Ecosystem
  readonly maxAgeSeconds: number
  readonly logger: Logger
}

export class PushAgeAlarm {
  readonly #ecosystem: Ecosystem
  readonly #maxAgeSeconds: number
  readonly #logger: Logger
  #armed = true

  constructor(options: PushAgeAlarmOptions) {
    if (!Number.isFinite(options.maxAgeSeconds) || options.maxAgeSeconds <= 0) {
      throw new RangeError(`maxAgeSeconds must be a positive number of seconds, got ${options.maxAgeSeconds}`)
    }
    this.#ecosystem = options.ecosystem
    this.#maxAgeSeconds = options.maxAgeSeconds
    this.#logger = options.logger
  }

  get armed(): boolean { return this.#armed }

  /** Checks the serving push's age at `now` (ms); returns true when this call logged the crossing. */
  check(publishedAt: Date | undefined, now: number): boolean {
    if (publishedAt === undefined || Number.isNaN(publishedAt.getTime())) return false
    const ageMs = now - publishedAt.getTime()
    // Half the maximum in ms, compared exactly: "at half the maximum" is the crossing.
    if (ageMs * 2 < this.#maxAgeSeconds * 1000) {
      this.#armed = true
      return false
    }
    if (!this.#armed) return false
    this.#armed = false
    this.#logger.error(PUSH_AGE_HALF_MAXIMUM, {
      ecosystem: this.#ecosystem,
      pushedAt: publishedAt.toISOString(),
      ageSeconds: Math.max(0, Math.floor(ageMs / 1000)),
      maxAgeSeconds: this.#maxAgeSeconds,
    })
    return true
  }
}
