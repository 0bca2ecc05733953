/**
 * One local retention store on a shared CacheBudget (SPEC.md 6.3): an LRU
 * map with a fixed time to live.
 *
 * - Room for an insert is made by evicting only this store's own least
 *   recently used entries. When the room is held by the other store, the
 *   insert is refused (the request serves without retention) and nothing is
 *   evicted; a value above the whole byte bound is refused the same way.
 * - Expiry is checked on access and on a retaining insert (which drops the
 *   expired entries of every store on the budget); there is no timer.
 *
 * lru-cache is not used: its own bounds are per instance, and the shared
 * bound with own-only eviction and refusal is the part that matters here.
 * A Map in recency order and one in insertion order (= expiry order, as the
 * time to live is fixed per store) keep every step O(1) amortised.
 */
import type { Clock } from '../clock.js'
import { ServiceError } from '../errors.js'
import type { BudgetMember, CacheBudget } from './cache-budget.js'
import type { StoreCounters } from './cache-counters.js'

interface Entry<V> {
  readonly value: V
  readonly bytes: number
  readonly expiresAt: number
}

export type RetainResult = 'retained' | 'refused'

export interface RetentionStoreOptions<V> {
  readonly budget: CacheBudget
  readonly clock: Clock
  /** Time to live of an entry from its insertion, milliseconds. */
  readonly ttlMs: number
  /** Accounted bytes of a value; the key's length is added to it. */
  readonly sizeOf: (value: V) => number
  readonly counters: StoreCounters
  /** The group of a key (its package), so `deleteGroup` drops a package's entries without a scan. */
  readonly groupOf?: (key: string) => string
}

export class RetentionStore<V> implements BudgetMember {
  #budget: CacheBudget
  #clock: Clock
  #ttlMs: number
  #sizeOf: (value: V) => number
  #counters: StoreCounters
  /** Least recently used first. */
  #byRecency = new Map<string, Entry<V>>()
  /** Oldest insertion first, which is soonest expiry first. */
  #byInsertion = new Map<string, Entry<V>>()
  #bytes = 0
  #groupOf: ((key: string) => string) | undefined
  /** Keys by group, when keys have groups. */
  #groups = new Map<string, Set<string>>()

  constructor(options: RetentionStoreOptions<V>) {
    if (!Number.isFinite(options.ttlMs) || options.ttlMs <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: `cache ttlMs must be a positive number of milliseconds; got ${options.ttlMs}` })
    }
    this.#budget = options.budget
    this.#clock = options.clock
    this.#ttlMs = options.ttlMs
    this.#sizeOf = options.sizeOf
    this.#counters = options.counters
    this.#groupOf = options.groupOf
    options.budget.join(this)
  }

  get residentBytes(): number { return this.#bytes }
  get entries(): number { return this.#byRecency.size }

  /** The retained value, touched as most recently used; an expired one is removed. Counts nothing. */
  get(key: string): V | undefined {
    const entry = this.#byRecency.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.#clock.now()) {
      this.#remove(key, entry)
      return undefined
    }
    this.#byRecency.delete(key)
    this.#byRecency.set(key, entry)
    return entry.value
  }

  /** Retains `value`, evicting own LRU entries if that makes room; counts a refusal. */
  set(key: string, value: V): RetainResult {
    const bytes = this.#sizeOf(value) + key.length
    const previous = this.#byRecency.get(key)
    // A newer value replaces the old one whether or not it is retained: the old one is stale.
    if (previous !== undefined) this.#remove(key, previous)
    const now = this.#clock.now()
    this.#budget.sweepExpired(now)
    if (!this.#fits(bytes)) {
      this.#counters.refused++
      return 'refused'
    }
    while (this.#budget.freeBytes < bytes || this.#budget.freeEntries < 1) {
      const oldest = this.#byRecency.keys().next()
      if (oldest.done === true) break
      this.#remove(oldest.value, this.#byRecency.get(oldest.value) as Entry<V>)
    }
    const entry: Entry<V> = { value, bytes, expiresAt: now + this.#ttlMs }
    this.#byRecency.set(key, entry)
    this.#byInsertion.set(key, entry)
    if (this.#groupOf !== undefined) {
      const group = this.#groupOf(key)
      let keys = this.#groups.get(group)
      if (keys === undefined) this.#groups.set(group, keys = new Set())
      keys.add(key)
    }
    this.#bytes += bytes
    this.#budget.charge(bytes)
    return 'retained'
  }

  delete(key: string): boolean {
    const entry = this.#byRecency.get(key)
    if (entry === undefined) return false
    this.#remove(key, entry)
    return true
  }

  /** Drops every entry of `group` (a package whose private side changed); returns how many. */
  deleteGroup(group: string): number {
    const keys = this.#groups.get(group)
    if (keys === undefined) return 0
    let dropped = 0
    for (const key of [...keys]) if (this.delete(key)) dropped++
    return dropped
  }

  /** Every live entry, least recently used first (the warm file, warm-file.ts). */
  *entriesByRecency(): IterableIterator<[string, V]> {
    const now = this.#clock.now()
    for (const [key, entry] of this.#byRecency) if (entry.expiresAt > now) yield [key, entry.value]
  }

  sweepExpired(now: number): void {
    for (const [key, entry] of this.#byInsertion) {
      if (entry.expiresAt > now) break
      this.#remove(key, entry)
    }
  }

  /** True when evicting only own entries can make room; the other store's share is never touched. */
  #fits(bytes: number): boolean {
    return bytes <= this.#budget.freeBytes + this.#bytes && this.#budget.freeEntries + this.#byRecency.size >= 1
  }

  #remove(key: string, entry: Entry<V>): void {
    this.#byRecency.delete(key)
    this.#byInsertion.delete(key)
    if (this.#groupOf !== undefined) {
      const group = this.#groupOf(key)
      const keys = this.#groups.get(group)
      keys?.delete(key)
      if (keys?.size === 0) this.#groups.delete(group)
    }
    this.#bytes -= entry.bytes
    this.#budget.release(entry.bytes)
  }
}
