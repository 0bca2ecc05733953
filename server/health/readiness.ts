/**
 * Mount readiness (SPEC.md 2.7, 3.1). Each mount is reported separately; a
 * mount whose rules deny on the advisory database starts awaiting it and
 * becomes ready, one way, when its first qualified artifact is accepted; a
 * mount whose rules decide without it is ready at boot. Draining takes every
 * mount out of rotation. `halted` is the token SPEC.md 2.7 gives a latched
 * Dredger cap halt, latched by the Dredger role (server/roles/dredger.ts)
 * through `markHalted`.
 *
 * What a load balancer sees (SPEC.md 3.1 rule 1: a missing artifact of one
 * ecosystem does not remove the others from rotation): `GET /readyz` is 200
 * while the role has started, is not draining, no process condition fails,
 * and at least one mount is ready; the body names every mount's state. `GET /readyz/{mount}` answers for that mount alone, for
 * balancers that route each mount's prefix on its own. A process condition
 * (the embedded mirror queue that cannot write its journal) fails every
 * answer and is named under `conditions`.
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
  /** Failing process conditions only, each with its reason token; absent when none fails. */
  readonly conditions?: Readonly<Record<string, string>>
}

/** A process-wide condition: undefined while it holds, else a reason token. */
export type ReadinessCondition = () => string | undefined

export class Readiness {
  readonly #mounts = new Map<MountKey, MountState>()
  #started = false
  #draining = false
  readonly #conditions = new Map<string, ReadinessCondition>()

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

  /** The Dredger's removal cap latched (SPEC.md 3.1): `halted` until the process restarts. */
  markHalted(key: MountKey): void {
    if (this.#mounts.has(key)) this.#mounts.set(key, MOUNT_STATE.halted)
  }

  /** A condition every answer depends on, reported by `name` while it fails. */
  addCondition(name: string, check: ReadinessCondition): void {
    this.#conditions.set(name, check)
  }

  startDraining(): void { this.#draining = true }

  stateOf(key: MountKey): MountState | undefined {
    const state = this.#mounts.get(key)
    if (state === undefined) return undefined
    if (this.#draining) return MOUNT_STATE.draining
    return state
  }

  /** The whole process: ready while some mount is (SPEC.md 3.1 rule 1). `only` narrows it to one mount. */
  body(only?: MountKey): ReadinessBody {
    const mounts: Partial<Record<MountKey, MountState>> = {}
    let anyReady = false
    for (const key of this.#mounts.keys()) {
      if (only !== undefined && key !== only) continue
      const state = this.stateOf(key) as MountState
      mounts[key] = state
      if (state === MOUNT_STATE.ready) anyReady = true
    }
    const conditions: Record<string, string> = {}
    let failing = false
    for (const [name, check] of this.#conditions) {
      const reason = check()
      if (reason !== undefined) { conditions[name] = reason; failing = true }
    }
    const ready = this.#started && !this.#draining && !failing && (anyReady || (only === undefined && this.#mounts.size === 0))
    return { status: ready ? 'ready' : 'not_ready', mounts, ...(failing ? { conditions } : {}) }
  }

  /** Whether `key` is a mount of this role (for `/readyz/{mount}`). */
  hasMount(key: string): key is MountKey {
    return this.#mounts.has(key as MountKey)
  }
}
