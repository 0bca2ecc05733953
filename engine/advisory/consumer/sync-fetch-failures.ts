/**
 * The advisory store poll's failure lines (SPEC.md 3.4, 6.2): `sync fetch
 * failed` at the first failed poll, `sync fetch still failing` at most every
 * 15 minutes while polls keep failing (SPEC.md 8), and `sync fetch recovered`
 * at the first poll that succeeds again. Time is the injected clock's.
 */
import type { Clock } from '../../clock.js'
import type { ServiceError } from '../../errors.js'
import type { Logger } from '../../log/logger.js'
import type { Ecosystem } from '../artifact/database.js'

export const SYNC_FETCH_FAILED = 'sync fetch failed'
export const SYNC_FETCH_STILL_FAILING = 'sync fetch still failing'
export const SYNC_FETCH_RECOVERED = 'sync fetch recovered'

/** SPEC.md 8: repeat pacing of failed-poll error lines. */
export const SYNC_FETCH_REPEAT_MS = 15 * 60 * 1000

export interface SyncFetchFailuresOptions {
  readonly ecosystem: Ecosystem
  /** The object polled, for the log lines. */
  readonly key: string
  readonly clock: Clock
  readonly logger: Logger
}

export class SyncFetchFailures {
  readonly #options: SyncFetchFailuresOptions
  #since: number | undefined
  #lastLogged = 0
  #failures = 0

  constructor(options: SyncFetchFailuresOptions) { this.#options = options }

  get failing(): boolean { return this.#since !== undefined }

  failed(error: ServiceError): void {
    const now = this.#options.clock.now()
    this.#failures++
    const cause = error.cause instanceof Error ? error.cause.message : undefined
    const data = {
      ecosystem: this.#options.ecosystem,
      key: this.#options.key,
      code: error.code,
      reason: error.message,
      ...(cause === undefined ? {} : { cause }),
    }
    if (this.#since === undefined) {
      this.#since = now
      this.#lastLogged = now
      this.#failures = 1
      this.#options.logger.error(SYNC_FETCH_FAILED, data)
      return
    }
    if (now - this.#lastLogged < SYNC_FETCH_REPEAT_MS) return
    this.#lastLogged = now
    this.#options.logger.error(SYNC_FETCH_STILL_FAILING, {
      ...data, failures: this.#failures, sinceSeconds: Math.floor((now - this.#since) / 1000),
    })
  }

  succeeded(): void {
    if (this.#since === undefined) return
    const now = this.#options.clock.now()
    this.#options.logger.info(SYNC_FETCH_RECOVERED, {
      ecosystem: this.#options.ecosystem,
      key: this.#options.key,
      failures: this.#failures,
      durationSeconds: Math.floor((now - this.#since) / 1000),
    })
    this.#since = undefined
    this.#failures = 0
  }
}
