/**
 * The graceful drain (SPEC.md 3.1, 7.2, 8; STYLE.md rule 11). The first
 * SIGTERM or SIGINT drains: /readyz answers 503, /livez stays 200, every
 * response carries `Connection: close`, the listen socket stops accepting,
 * in-flight requests and streams finish, then upstream dispatchers and the
 * pool close and the process exits 0. A drain that outlives its bound exits
 * 1 with the detail. A second signal stops at once (exit 3): the drain
 * handler fires once.
 */
import type { Logger } from '../../engine/log/logger.js'
import type { FrontDoor } from '../http/front-door.js'
import type { Readiness } from '../health/readiness.js'
import { EXIT } from './exit-codes.js'

export const DRAIN_STARTED = 'drain started'
export const DRAIN_COMPLETED = 'drain completed'

export interface ShutdownOptions {
  readonly door: FrontDoor
  readonly readiness: Readiness
  readonly drainTimeoutMs: number
  readonly logger: Logger
  /**
   * Called once as the drain starts, before in-flight requests finish: the role stops taking work that does not
   * come through the front door (the mirror worker stops receiving), so it drains beside the requests, within
   * the same bound, instead of receiving new jobs until the door is idle.
   */
  readonly quiesce?: () => void
  /** Releases what the role holds (dispatchers, pool, queue), after the drain. */
  readonly release: () => Promise<void>
  /** Ends the process with a code; `detail` goes to the `service exited` line. */
  readonly exit: (code: number, detail?: string) => void
}

export class Shutdown {
  readonly #options: ShutdownOptions
  #signals = 0

  constructor(options: ShutdownOptions) {
    this.#options = options
  }

  /** Wires SIGTERM and SIGINT. */
  install(): void {
    const onSignal = (signal: NodeJS.Signals): void => this.signal(signal)
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
  }

  signal(signal: string): void {
    this.#signals++
    if (this.#signals === 1) {
      void this.drain(signal)
      return
    }
    this.#options.logger.warn('second signal during the drain: stopping at once', { signal })
    this.#options.exit(EXIT.CANCELLED)
  }

  async drain(reason: string): Promise<void> {
    const { door, readiness, logger, drainTimeoutMs } = this.#options
    readiness.startDraining()
    door.startDraining()
    this.#options.quiesce?.()
    logger.info(DRAIN_STARTED, { reason, inFlight: door.inFlight, timeoutSeconds: drainTimeoutMs / 1000 })
    let timer: NodeJS.Timeout | undefined
    const timedOut = await Promise.race([
      door.whenIdle().then(() => false),
      new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), drainTimeoutMs) }),
    ])
    clearTimeout(timer)
    if (timedOut) {
      this.#options.exit(EXIT.ABNORMAL, `drain timed out after ${drainTimeoutMs / 1000} s with ${door.inFlight} request(s) in flight`)
      return
    }
    try {
      await this.#options.release()
    } catch (error) {
      logger.warn('releasing resources after the drain failed', { error: String(error) })
    }
    logger.info(DRAIN_COMPLETED, {})
    this.#options.exit(EXIT.OK)
  }
}
