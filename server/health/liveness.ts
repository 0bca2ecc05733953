/**
 * Liveness (SPEC.md 2.6, 3.2). A process with no mirror worker is live while
 * its listener is (the probe answering is the proof). With a mirror worker,
 * the worker must make a successful poll or complete a job within 660 s of
 * the heartbeat's creation and of each later success, or /livez answers 503.
 *
 * SPEC.md leaves the `status` values "not shown": `ok` and `stalled`.
 */
import type { Clock } from '../../engine/clock.js'

export const LIVENESS_ALLOWANCE_MS = 660_000

export interface LivenessBody {
  readonly status: 'ok' | 'stalled'
  readonly lastPoll: string | null
}

export class Heartbeat {
  readonly #clock: Clock
  #since: number
  #lastSuccess: number | undefined

  constructor(clock: Clock) {
    this.#clock = clock
    this.#since = clock.now()
  }

  /** A successful poll or a completed job. */
  beat(): void {
    this.#lastSuccess = this.#clock.now()
    this.#since = this.#lastSuccess
  }

  healthy(): boolean {
    return this.#clock.now() - this.#since < LIVENESS_ALLOWANCE_MS
  }

  lastPoll(): string | null {
    return this.#lastSuccess === undefined ? null : new Date(this.#lastSuccess).toISOString()
  }
}

export class Liveness {
  #heartbeat: Heartbeat | undefined

  /** Only a process that runs a mirror worker has one. */
  attachMirrorHeartbeat(heartbeat: Heartbeat): void { this.#heartbeat = heartbeat }

  body(): LivenessBody {
    const hb = this.#heartbeat
    if (hb === undefined) return { status: 'ok', lastPoll: null }
    return { status: hb.healthy() ? 'ok' : 'stalled', lastPoll: hb.lastPoll() }
  }
}
