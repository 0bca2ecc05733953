/**
 * Counts of the publish relay, read through the proxy role's `metrics()`
 * as `service.publish`: relays by the target's status class, refusals by
 * error code. Plain counters; the telemetry layer exports the snapshot.
 */
export interface PublishSnapshot {
  readonly relayed: Readonly<Record<string, number>>
  readonly refused: Readonly<Record<string, number>>
}

export class PublishCounters {
  readonly #relayed = new Map<string, number>()
  readonly #refused = new Map<string, number>()

  /** A publish the target answered; keyed `2xx`, `4xx`, `5xx`. */
  relayed(status: number): void {
    const key = `${Math.floor(status / 100)}xx`
    this.#relayed.set(key, (this.#relayed.get(key) ?? 0) + 1)
  }

  /** A publish refused before or instead of reaching the target; keyed by error code. */
  refused(code: string): void {
    this.#refused.set(code, (this.#refused.get(code) ?? 0) + 1)
  }

  snapshot(): PublishSnapshot {
    return { relayed: Object.fromEntries(this.#relayed), refused: Object.fromEntries(this.#refused) }
  }
}
