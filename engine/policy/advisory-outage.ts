/**
 * The advisory outage state of one ecosystem (SPEC.md 3.3, 6.2): fed with
 * the advisory observations of each Decision on the main thread, it logs
 * when the advisory denies first cannot consult the database, repeats at
 * most every 15 minutes while they still cannot, and logs once when every
 * advisory deny reached consults it again.
 *
 * Only `DenyIfCve` and `DenyIfEpss` produce observations (evaluator.ts), so
 * a mount whose only advisory rule is `AllowIfRemediatesCve` reports no
 * outage, and a decision that never reached an advisory rule changes
 * nothing: traffic alone never adds a line.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { Clock } from '../clock.js'
import type { Logger } from '../log/logger.js'
import type { AdvisoryObservation } from './decision.js'

export const OUTAGE_BEGAN_MESSAGE = 'advisory source outage began'
export const OUTAGE_CONTINUES_MESSAGE = 'advisory source outage continues'
export const OUTAGE_RECOVERED_MESSAGE = 'advisory source outage recovered'

/** SPEC.md 8: repeat pacing of outage lines. */
export const OUTAGE_REPEAT_MS = 15 * 60 * 1000

export type OutageTransition = 'began' | 'continues' | 'recovered' | undefined

export interface AdvisoryOutageOptions {
  readonly ecosystem: Ecosystem
  readonly logger: Logger
  readonly clock: Clock
  /** Called once when the outage recovers; the skipped-check record clears itself here. */
  readonly onRecovered?: () => void
}

export class AdvisoryOutage {
  #ecosystem: Ecosystem
  #logger: Logger
  #clock: Clock
  #onRecovered: (() => void) | undefined
  #since: number | undefined
  #lastLogged = 0

  constructor(options: AdvisoryOutageOptions) {
    this.#ecosystem = options.ecosystem
    this.#logger = options.logger
    this.#clock = options.clock
    this.#onRecovered = options.onRecovered
  }

  get inOutage(): boolean { return this.#since !== undefined }

  /** Feeds one decision's observations; returns the transition it caused, if any. */
  observe(observations: readonly AdvisoryObservation[]): OutageTransition {
    if (observations.length === 0) return undefined
    const failing = observations.find((o) => o.cause !== undefined)
    const now = this.#clock.now()
    if (failing === undefined) {
      if (this.#since === undefined) return undefined
      const seconds = Math.floor((now - this.#since) / 1000)
      this.#since = undefined
      this.#logger.info(OUTAGE_RECOVERED_MESSAGE, { ecosystem: this.#ecosystem, durationSeconds: seconds })
      this.#onRecovered?.()
      return 'recovered'
    }
    const data = {
      ecosystem: this.#ecosystem,
      rule: failing.rule,
      cause: failing.cause,
      ...(failing.detail === undefined ? {} : { detail: failing.detail }),
    }
    if (this.#since === undefined) {
      this.#since = now
      this.#lastLogged = now
      this.#logger.error(OUTAGE_BEGAN_MESSAGE, data)
      return 'began'
    }
    if (now - this.#lastLogged < OUTAGE_REPEAT_MS) return undefined
    this.#lastLogged = now
    this.#logger.error(OUTAGE_CONTINUES_MESSAGE, { ...data, sinceSeconds: Math.floor((now - this.#since) / 1000) })
    return 'continues'
  }
}
