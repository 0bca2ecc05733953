/**
 * What the shared metadata cache asks of its backend (docs/cache.md), with
 * two implementations: Valkey/Redis (redis-backend.ts, `cache.backend:
 * redis`, shared by every replica and surviving restarts) and the process's
 * own memory (memory-backend.ts: the `local` backend's claims and
 * invalidations, and the reference the shared test suite holds both to).
 *
 * Values live in groups, one group per package of one ecosystem. A group has
 * a stamp, its invalidation count: every value is written under the stamp
 * its writer read before it fetched or rendered, and read under the current
 * one. Invalidating a group (a publish, a mirror success, a Dredger removal)
 * moves the stamp, so every value written before is unreachable at once on
 * every replica, with no scan and no race: a render that started before the
 * invalidation lands under the old stamp, where no one reads it. A replica's
 * near copy names the stamp it was read under, so one round trip tells it
 * whether its copy is still current.
 *
 * Every operation may reject with CACHE_BACKEND_FAILED (down, timed out,
 * refused); the caller absorbs it (SPEC.md 6.3: a failed read goes to the
 * origin, a failed write skips retention, neither falls back to local).
 */

/** Once across the tier: the enqueue path's "one job per artifact", and anything else that must happen once. */
export interface ClaimOnce {
  /** True for the first caller to claim `key` within `ttlMs`, false for every other caller until the claim expires. */
  claim(key: string, ttlMs: number): Promise<boolean>
  /** Gives a claim back before it expires (its work did not happen), so the next caller claims it again. */
  unclaim(key: string): Promise<void>
}

/** What a publish relay, a mirror worker and the Dredger call when a package's private side changed. */
export interface CacheInvalidation {
  /** Forgets every shared value of one package: the next request on any replica reads the upstreams again. */
  invalidate(ecosystem: string, packageName: string): Promise<void>
}

/** A read under a group's current stamp. */
export interface StampedRead {
  /** The group's stamp now ('0' until it is first invalidated). */
  readonly stamp: string
  /** True when the caller's `known` stamp is the current one: its near copy is current and nothing was sent. */
  readonly current: boolean
  /** The value under the current stamp; undefined when absent, or when `current`. */
  readonly value: Buffer | undefined
}

/** The outcome a watch settles with when the release cannot be heard (the backend's connection is down): the waiter does the work itself. */
export const LEASE_LOST = 'lost'

/** A lease on a piece of work across the tier (one upstream read and one render per package). */
export interface Lease {
  readonly key: string
  readonly token: string
}

/** A wait for the end of another replica's lease; `settled` resolves with its outcome (`release`'s), `cancel` stops listening. */
export interface LeaseWatch {
  readonly settled: Promise<string>
  cancel(): void
}

export interface SharedCacheBackend extends ClaimOnce {
  /** `name` of `group` under its current stamp, unless `known` is that stamp. */
  read(group: string, name: string, known?: string): Promise<StampedRead>
  /** Writes `name` of `group` under `stamp` (the one read before the work), for `ttlMs`. */
  write(group: string, stamp: string, name: string, value: Uint8Array, ttlMs: number): Promise<void>
  /** One field of the record `name` of `group` (a record of many small values: the selected versions of a package). */
  readField(group: string, name: string, field: string, known?: string): Promise<StampedRead>
  /** Writes fields of the record `name` of `group` under `stamp`; the record's time to live restarts. */
  writeFields(group: string, stamp: string, name: string, fields: ReadonlyMap<string, Uint8Array>, ttlMs: number): Promise<void>
  /** Moves the group's stamp: every value written under an older one is unreachable. */
  bump(group: string): Promise<void>
  /** The lease on `key` for `ttlMs`, or undefined when another holder has it. */
  lease(key: string, ttlMs: number): Promise<Lease | undefined>
  /** Ends a lease (if still held) and tells every watcher of its key the outcome. */
  release(lease: Lease, outcome: string): Promise<void>
  /** Listens for the release of `key`'s lease; register before checking for the result, so no release is missed. */
  watch(key: string): LeaseWatch
  close(): Promise<void>
}

/** The group of one package of one ecosystem (names never hold `|`: npm's URL-safe names, PEP 503 normal names). */
export function packageGroup(ecosystem: string, packageName: string): string {
  return `${ecosystem}|${packageName}`
}

/** Invalidation over a backend: the package's group gets a new stamp. */
export function backendInvalidation(backend: Pick<SharedCacheBackend, 'bump'>): CacheInvalidation {
  return { invalidate: (ecosystem, packageName) => backend.bump(packageGroup(ecosystem, packageName)) }
}

/** Several invalidations as one (the shared backend's and this process's local caches), all tried, the first failure reported. */
export function allInvalidations(targets: readonly CacheInvalidation[]): CacheInvalidation {
  return {
    async invalidate(ecosystem, packageName) {
      const results = await Promise.allSettled(targets.map((t) => t.invalidate(ecosystem, packageName)))
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      if (failed !== undefined) throw failed.reason
    },
  }
}
