/**
 * The graceful drain (SPEC.md 3.1, 7.2, 8; STYLE.md rule 11). The first
 * SIGTERM or SIGINT drains: /readyz answers 503, /livez stays 200, every
 * response carries `Connection: close`. For `drainDelayMs` (the lame-duck
 * period, `server.drainDelaySeconds`) the listen socket still accepts and
 * answers new connections, so that a load balancer that has not yet seen the
 * 503 (or an endpoint list that has not yet dropped the pod) refuses nobody;
 * then the listen socket stops accepting, in-flight requests and streams
 * finish, upstream dispatchers and the pool close and the process exits 0.
 * The whole of it, delay included, is bounded by `drainTimeoutMs`: a drain
 * that outlives it exits 1 with the detail. A second signal stops at once
 * (exit 3): the drain handler fires once.
 */
import type { Logger } from '../../engine/log/logger.js'
import { systemTimers, type TimerHandle, type Timers } from '../../engine/memory/timers.js'
import type { FrontDoor } from '../http/front-door.js'
import type { Readiness } from '../health/readiness.js'
import { EXIT } from './exit-codes.js'

export const DRAIN_STARTED = 'drain started'
export const LISTENER_CLOSED = 'listener closed'
export const DRAIN_COMPLETED = 'drain completed'

export interface ShutdownOptions {
  readonly door: Pick<FrontDoor, 'inFlight' | 'startLameDuck' | 'stopAccepting' | 'whenIdle'>
  readonly readiness: Pick<Readiness, 'startDraining'>
  /** The bound of the whole drain, from the first signal: the lame-duck period counts against it. */
  readonly drainTimeoutMs: number
  /** The lame-duck period: still accepting, every answer `Connection: close`, /readyz 503. 0: close the listener at once. */
  readonly drainDelayMs?: number
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
  /** Tests pass manual timers (test/doubles/manual-timers.ts). */
  readonly timers?: Timers
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
    const delayMs = this.#options.drainDelayMs ?? 0
    const timers = this.#options.timers ?? systemTimers
    readiness.startDraining()
    door.startLameDuck()
    this.#options.quiesce?.()
    logger.info(DRAIN_STARTED, { reason, inFlight: door.inFlight, timeoutSeconds: drainTimeoutMs / 1000, delaySeconds: delayMs / 1000 })
    const handles: TimerHandle[] = []
    const after = (ms: number): Promise<void> => new Promise((resolve) => { handles.push(timers.after(ms, resolve)) })
    const bound = after(drainTimeoutMs).then(() => true)
    try {
      // The lame-duck period: the listener still accepts while the load balancer takes the process out of rotation.
      if (delayMs > 0 && await Promise.race([after(delayMs).then(() => false), bound])) return this.#timedOut()
      door.stopAccepting()
      if (delayMs > 0) logger.info(LISTENER_CLOSED, { inFlight: door.inFlight })
      if (await Promise.race([door.whenIdle().then(() => false), bound])) return this.#timedOut()
    } finally {
      for (const handle of handles) handle.clear()
    }
    try {
      await this.#options.release()
    } catch (error) {
      logger.warn('releasing resources after the drain failed', { error: String(error) })
    }
    logger.info(DRAIN_COMPLETED, {})
    this.#options.exit(EXIT.OK)
  }

  #timedOut(): void {
    const { door, drainTimeoutMs } = this.#options
    this.#options.exit(EXIT.ABNORMAL, `drain timed out after ${drainTimeoutMs / 1000} s with ${door.inFlight} request(s) in flight`)
  }
}
