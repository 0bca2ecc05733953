/**
 * Mount readiness (SPEC.md 2.7, 3.1). Each mount is reported separately; a
 * mount whose rules deny on the advisory database starts awaiting it and
 * becomes ready, one way, when its first qualified artifact is accepted; a
 * mount whose rules decide without it is ready at boot. Draining and a
 * latched Dredger halt take every mount out of rotation.
 *
 * SPEC.md leaves the awaiting token "not shown": it is `awaiting_advisory_database`.
 */
import type { MountKey } from '../../engine/config/schema.js'

export const MOUNT_STATE = Object.freeze({
  ready: 'ready',
  awaiting: 'awaiting_advisory_database',
  halted: 'halted',
  draining: 'draining',
} as const)

export type MountState = (typeof MOUNT_STATE)[keyof typeof MOUNT_STATE]

export interface ReadinessBody {
  readonly status: 'ready' | 'not_ready'
  readonly mounts: Readonly<Partial<Record<MountKey, MountState>>>
}

export class Readiness {
  readonly #mounts = new Map<MountKey, MountState>()
  #started = false
  #draining = false
  #halted = false

  /** A mount awaits the advisory database when `awaitsAdvisories`, else it is ready at boot. */
  addMount(key: MountKey, awaitsAdvisories: boolean): void {
    this.#mounts.set(key, awaitsAdvisories ? MOUNT_STATE.awaiting : MOUNT_STATE.ready)
  }

  /** The role finished booting; until then /readyz answers 503 (SPEC.md 4.5 "during startup"). */
  markStarted(): void { this.#started = true }

  /** First qualified advisory artifact accepted for this mount: ready, never back (SPEC.md 3.1). */
  markAdvisoryReady(key: MountKey): void {
    if (this.#mounts.get(key) === MOUNT_STATE.awaiting) this.#mounts.set(key, MOUNT_STATE.ready)
  }

  startDraining(): void { this.#draining = true }
  latchHalted(): void { this.#halted = true }

  stateOf(key: MountKey): MountState | undefined {
    const state = this.#mounts.get(key)
    if (state === undefined) return undefined
    if (this.#draining) return MOUNT_STATE.draining
    if (this.#halted) return MOUNT_STATE.halted
    return state
  }

  body(): ReadinessBody {
    const mounts: Partial<Record<MountKey, MountState>> = {}
    let ready = this.#started && !this.#draining && !this.#halted
    for (const key of this.#mounts.keys()) {
      const state = this.stateOf(key) as MountState
      mounts[key] = state
      if (state !== MOUNT_STATE.ready) ready = false
    }
    return { status: ready ? 'ready' : 'not_ready', mounts }
  }
}
