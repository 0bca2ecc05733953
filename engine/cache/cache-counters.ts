/**
 * Per-store request counters and residency (SPEC.md 6.3 "Cache semantics"),
 * kept now and read by telemetry later through `snapshot()`:
 * a hit uses a retained value; a miss leads a fetch or render; a collapsed
 * request joins an existing leader (counted once, even when it takes over
 * after the leader's cancellation); a refusal is a fetched value the store
 * could not retain (counted per value, never per follower).
 */

export interface StoreSnapshot {
  readonly hit: number
  readonly miss: number
  readonly collapsed: number
  readonly refused: number
  /** Accounted bytes after insertion, eviction and expiry. */
  readonly residentBytes: number
  readonly entries: number
}

export class StoreCounters {
  hit = 0
  miss = 0
  collapsed = 0
  refused = 0

  snapshot(residentBytes: number, entries: number): StoreSnapshot {
    return Object.freeze({ hit: this.hit, miss: this.miss, collapsed: this.collapsed, refused: this.refused, residentBytes, entries })
  }
}
