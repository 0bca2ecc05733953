/**
 * One upstream read and one render per package across the tier (issue 29,
 * docs/cache.md "Collapsing across replicas"): the work on a package is
 * leased in the shared backend. The replica that gets the lease looks once
 * more for the result (another replica may have just written it), then
 * fetches, renders, writes the result, releases the lease and tells the
 * watchers; a replica that finds the lease held waits for that release, at
 * most `cache.collapseWaitMs`, then reads the shared result (counted
 * `collapsed`, SPEC.md 6.3). It shares the leader's failure too. When the
 * release says done but its own result is not there (another form, another
 * generation, a write that failed), it tries the lease again; when the wait
 * runs out, it does the work itself.
 *
 * Why a lease (SET NX PX) and a release message (PUBLISH), not polling: the
 * waiter hears the release within a round trip, and costs nothing while it
 * waits; the lease's own time to live frees it when a leader dies, and the
 * bounded wait covers a lost message. The watch is registered before the
 * lease is tried, and the result is read after, so a release between the
 * two is never missed.
 *
 * A backend failure on the way is absorbed (SPEC.md 6.3): counted refused,
 * the work done here, nothing written.
 */
import { isServiceError, ServiceError, type ErrorCode } from '../errors.js'
import { LEASE_LOST, type SharedCacheBackend } from './shared-backend.js'

export interface SharedTierOptions {
  readonly backend: SharedCacheBackend
  /** `cache.sharedTtlSeconds` in milliseconds: the time to live of every value written. */
  readonly ttlMs: number
  /** `cache.maxValueBytes`: a larger encoded value is not shared. */
  readonly maxValueBytes: number
  /** `cache.collapseWaitMs`: how long a replica waits for another's work (and the lease's time to live); 0: no collapsing across replicas. */
  readonly collapseWaitMs: number
}

/** What a lookup of the result found: the group's stamp, and the value when present. */
export interface StampedValue<V> {
  readonly stamp: string
  readonly value: V | undefined
}

export interface AcrossTier<V> {
  /** The stamped read of the result; throws CACHE_BACKEND_FAILED. */
  lookup(): Promise<StampedValue<V>>
  /** The fetch and render; `stamp` undefined: the backend failed, write nothing shared. */
  work(stamp: string | undefined): Promise<V>
  /** Writes the result under `stamp` (absorbs its own failures). */
  publish(value: V, stamp: string): Promise<void>
  /** A backend operation failed (counted refused by the store). */
  refused(): void
  readonly signal?: AbortSignal | undefined
}

/** The value, and whether it is another replica's work (the request counts as collapsed); or the failure of the replica it joined. */
export type LeadResult<V> =
  | { readonly joined: boolean, readonly value: V, readonly failure?: undefined }
  | { readonly joined: true, readonly failure: ServiceError }

const DONE = 'done'
const FAILED = 'failed '

/** The release message of a failed leader: its error's code and message, so a waiter fails alike. */
function failedOutcome(error: unknown): string {
  const e = isServiceError(error) ? error : new ServiceError('INTERNAL')
  return FAILED + JSON.stringify({ code: e.code, message: e.message })
}

function sharedFailure(outcome: string): ServiceError | undefined {
  if (!outcome.startsWith(FAILED)) return undefined
  try {
    const { code, message } = JSON.parse(outcome.slice(FAILED.length)) as { code: ErrorCode, message: string }
    return new ServiceError(code, { message })
  } catch {
    return undefined
  }
}

export class SharedTier {
  readonly backend: SharedCacheBackend
  readonly ttlMs: number
  readonly maxValueBytes: number
  readonly collapseWaitMs: number

  constructor(options: SharedTierOptions) {
    this.backend = options.backend
    this.ttlMs = options.ttlMs
    this.maxValueBytes = options.maxValueBytes
    this.collapseWaitMs = options.collapseWaitMs
  }

  /** Leads the work on `leaseKey` across the tier, or joins the replica that leads it. */
  async lead<V>(leaseKey: string, across: AcrossTier<V>): Promise<LeadResult<V>> {
    const deadline = Date.now() + this.collapseWaitMs
    for (;;) {
      const found = await this.#lookup(across)
      if (found === undefined) return { value: await across.work(undefined), joined: false }
      if (found.value !== undefined) return { value: found.value, joined: true }
      if (this.collapseWaitMs === 0) return { value: await this.#publishWork(across, found.stamp), joined: false }
      const watch = this.backend.watch(leaseKey)
      let lease
      try {
        lease = await this.backend.lease(leaseKey, this.collapseWaitMs)
      } catch {
        watch.cancel()
        across.refused()
        return { value: await across.work(undefined), joined: false }
      }
      if (lease !== undefined) {
        watch.cancel()
        // Another replica may have written it between the lookup and the lease.
        const again = await this.#lookup(across)
        if (again?.value !== undefined) {
          await this.backend.release(lease, DONE).catch(() => undefined)
          return { value: again.value, joined: true }
        }
        try {
          const value = await this.#publishWork(across, again?.stamp)
          await this.backend.release(lease, DONE).catch(() => undefined)
          return { value, joined: false }
        } catch (error) {
          await this.backend.release(lease, failedOutcome(error)).catch(() => undefined)
          throw error
        }
      }
      const outcome = await this.#wait(watch.settled, deadline - Date.now(), across.signal).finally(() => watch.cancel())
      if (outcome === undefined || outcome === LEASE_LOST) {
        // The wait ran out, or the release cannot be heard: do the work here (the leader may be gone; its lease expires by itself).
        const last = await this.#lookup(across)
        if (last?.value !== undefined) return { value: last.value, joined: true }
        return { value: await this.#publishWork(across, last?.stamp), joined: false }
      }
      const failure = sharedFailure(outcome)
      if (failure !== undefined) return { joined: true, failure }
      // Done, but perhaps not this request's form: look again, lead if it is still missing.
    }
  }

  /**
   * Work behind a request already served (a revalidation): done here only
   * when no replica is working on the package; otherwise left to that one.
   * Resolves undefined when skipped.
   */
  async behind<V>(leaseKey: string, across: AcrossTier<V>): Promise<V | undefined> {
    let found: StampedValue<V> | undefined
    try {
      found = await across.lookup()
    } catch {
      across.refused()
      return across.work(undefined)
    }
    if (this.collapseWaitMs === 0) return this.#publishWork(across, found.stamp)
    let lease
    try {
      lease = await this.backend.lease(leaseKey, this.collapseWaitMs)
    } catch {
      across.refused()
      return across.work(undefined)
    }
    if (lease === undefined) return undefined
    try {
      const value = await this.#publishWork(across, found.stamp)
      await this.backend.release(lease, DONE).catch(() => undefined)
      return value
    } catch (error) {
      await this.backend.release(lease, failedOutcome(error)).catch(() => undefined)
      throw error
    }
  }

  async #lookup<V>(across: AcrossTier<V>): Promise<StampedValue<V> | undefined> {
    try {
      return await across.lookup()
    } catch {
      across.refused()
      return undefined
    }
  }

  async #publishWork<V>(across: AcrossTier<V>, stamp: string | undefined): Promise<V> {
    const value = await across.work(stamp)
    if (stamp !== undefined) await across.publish(value, stamp)
    return value
  }

  /** The release's outcome, or undefined when `ms` pass first; rejects when `signal` aborts. */
  #wait(settled: Promise<string>, ms: number, signal: AbortSignal | undefined): Promise<string | undefined> {
    if (ms <= 0) return Promise.resolve(undefined)
    return new Promise<string | undefined>((resolve, reject) => {
      const timer = setTimeout(() => { done(); resolve(undefined) }, ms)
      const onAbort = (): void => { done(); reject(signal?.reason) }
      const done = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      if (signal?.aborted === true) {
        onAbort()
        return
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      settled.then((outcome) => { done(); resolve(outcome) }, () => { done(); resolve(undefined) })
    })
  }
}
