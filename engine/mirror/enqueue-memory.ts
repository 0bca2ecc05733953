/**
 * What the proxy enqueued recently (issue 30, "one job per artifact across
 * the tier, while it is pending"): before a job enters the enqueue buffer,
 * its artifact's key (mirror-job.ts `mirrorJobKey`) is claimed for the
 * memory's time to live; while the claim stands, every other download of
 * that artifact adds no job. So a mirror target that is down for a while
 * costs one pending job per artifact, not one per download.
 *
 * With the shared cache backend (`cache.backend: redis`) the claim is its
 * "claim once" primitive (`SET key NX PX ttl`): one memory for the whole
 * tier, every proxy asking the same question (`sharedEnqueueMemory`).
 * Without one, `LocalEnqueueMemory` is this process's own memory.
 *
 * The local memory is bounded: beyond `maxEntries` live claims the oldest
 * is forgotten early. Forgetting costs at most a duplicate job (the worker
 * finds the version present with one target lookup), never a lost one.
 */
import type { ClaimOnce } from '../cache/shared-backend.js'
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'

export interface EnqueueMemory {
  /**
   * True when no claim on `key` stood: the caller now holds it for `ttlMs`
   * and enqueues. False while an earlier claim stands: the artifact was
   * enqueued recently, here or (shared) on another proxy.
   */
  claim(key: string, ttlMs: number): Promise<boolean>
  /** Gives a claim back early: its job was lost, so the next download enqueues the artifact again. */
  release(key: string): Promise<void>
}

export interface LocalEnqueueMemoryOptions {
  /** Live claims kept; the oldest is forgotten beyond it. */
  readonly maxEntries: number
  readonly clock?: Clock
}

export class LocalEnqueueMemory implements EnqueueMemory {
  readonly #maxEntries: number
  readonly #clock: Clock
  /** Key -> when its claim ends, in claim order (a Map keeps insertion order). */
  readonly #claims = new Map<string, number>()

  constructor(options: LocalEnqueueMemoryOptions) {
    if (!Number.isSafeInteger(options.maxEntries) || options.maxEntries < 1) throw new TypeError('LocalEnqueueMemory: maxEntries must be a positive integer')
    this.#maxEntries = options.maxEntries
    this.#clock = options.clock ?? systemClock
  }

  /** Live claims now (expired ones may linger until the next claim sweeps them). */
  get size(): number { return this.#claims.size }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    const now = this.#clock.now()
    const until = this.#claims.get(key)
    if (until !== undefined && until > now) return false
    // Re-inserted at the end, so claim order stays the order of expiry for one time to live.
    this.#claims.delete(key)
    this.#claims.set(key, now + ttlMs)
    this.#sweep(now)
    return true
  }

  async release(key: string): Promise<void> {
    this.#claims.delete(key)
  }

  /** Drops expired claims from the oldest end, and the oldest live ones beyond the bound. */
  #sweep(now: number): void {
    for (const [key, until] of this.#claims) {
      if (until > now && this.#claims.size <= this.#maxEntries) return
      this.#claims.delete(key)
    }
  }
}

/** Where the tier's enqueue claims live on the shared backend, apart from its other claims. */
export const SHARED_ENQUEUE_CLAIM_PREFIX = 'enqueue|'

/**
 * The tier's memory over the shared backend's claims. A backend that fails
 * rejects, and the enqueue buffer lets the job through (a duplicate at
 * worst, never a loss); a claim it cannot give back expires with its time to
 * live, and until then that artifact's downloads add no job (the job that
 * held it was lost and counted).
 */
export function sharedEnqueueMemory(claims: ClaimOnce): EnqueueMemory {
  return {
    claim: (key, ttlMs) => claims.claim(SHARED_ENQUEUE_CLAIM_PREFIX + key, ttlMs),
    release: (key) => claims.unclaim(SHARED_ENQUEUE_CLAIM_PREFIX + key),
  }
}
