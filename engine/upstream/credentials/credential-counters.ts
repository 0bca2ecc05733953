/**
 * `service.credential.refresh` (completed refresh attempts by provider and
 * result) and `service.credential.token.ttl.seconds` (the shortest remaining
 * lifetime among observed expiring credentials of one provider label, whole
 * seconds at each collection, clamped to zero) of SPEC.md 6.3. Read through
 * a role's `metrics()`; the telemetry layer exports the snapshot.
 *
 * One instance per process, shared by every credential source, so a
 * credential shared by several ecosystems (one source) counts once.
 */
import type { Clock } from '../../clock.js'

export const CREDENTIAL_REFRESH_METRIC = 'service.credential.refresh'
export const CREDENTIAL_TTL_METRIC = 'service.credential.token.ttl.seconds'

/** The provider labels of SPEC.md 5.5, 6.3. */
export type ProviderLabel = 'registry' | 'managedRepo' | 'selfHosted'
export type RefreshResult = 'success' | 'failure'

export interface CredentialSnapshot {
  /** `<label>.<result>` → count. */
  readonly refresh: Readonly<Record<string, number>>
  /** label → seconds; absent for a label with no observed expiring credential. */
  readonly ttlSeconds: Readonly<Partial<Record<ProviderLabel, number>>>
}

export class CredentialCounters {
  readonly #clock: Clock
  readonly #refresh = new Map<string, number>()
  /** label → (source → expiry in ms). */
  readonly #expiries = new Map<ProviderLabel, Map<object, number>>()

  constructor(clock: Clock) {
    this.#clock = clock
  }

  refreshed(label: ProviderLabel, result: RefreshResult): void {
    const key = `${label}.${result}`
    this.#refresh.set(key, (this.#refresh.get(key) ?? 0) + 1)
  }

  /** The expiry of `source`'s current credential; replaces its earlier one. */
  observeExpiry(label: ProviderLabel, source: object, expiresAt: number): void {
    let byLabel = this.#expiries.get(label)
    if (byLabel === undefined) this.#expiries.set(label, byLabel = new Map())
    byLabel.set(source, expiresAt)
  }

  snapshot(): CredentialSnapshot {
    const now = this.#clock.now()
    const ttlSeconds: Partial<Record<ProviderLabel, number>> = {}
    for (const [label, byLabel] of this.#expiries) {
      if (byLabel.size === 0) continue
      const soonest = Math.min(...byLabel.values())
      ttlSeconds[label] = Math.max(0, Math.floor((soonest - now) / 1000))
    }
    return { refresh: Object.fromEntries(this.#refresh), ttlSeconds }
  }
}
