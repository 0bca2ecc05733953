/**
 * The shared-backend contract (shared-backend.ts) in this process's memory:
 * the `local` backend's claims (one enqueue per artifact in one process),
 * and the reference implementation the shared test suite runs beside the
 * Redis one. Expiry is checked on access, on the injected clock; there is
 * no timer. Nothing here is bounded by the cache budget: the local metadata
 * cache keeps its values in its own stores (retention-store.ts), and what
 * lives here is claims, leases and stamps. Each insert also drops the
 * expired entries at the old end of its map (insertion order, which is
 * expiry order for one time to live), so claims that are never asked about
 * again do not pile up.
 */
import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { Lease, LeaseWatch, SharedCacheBackend, StampedRead } from './shared-backend.js'
import { LeaseWatchers } from './lease-watchers.js'

interface Held<V> {
  readonly value: V
  readonly expiresAt: number
}

export class MemoryBackend implements SharedCacheBackend {
  readonly #clock: Clock
  readonly #values = new Map<string, Held<Buffer>>()
  readonly #records = new Map<string, Held<Map<string, Buffer>>>()
  readonly #stamps = new Map<string, number>()
  readonly #leases = new Map<string, Held<string>>()
  readonly #claims = new Map<string, Held<true>>()
  readonly #watchers = new LeaseWatchers()

  constructor(clock: Clock) {
    this.#clock = clock
  }

  async read(group: string, name: string, known?: string): Promise<StampedRead> {
    const stamp = this.#stamp(group)
    if (known === stamp) return { stamp, current: true, value: undefined }
    return { stamp, current: false, value: this.#live(this.#values, `${group}|${stamp}|${name}`) }
  }

  async write(group: string, stamp: string, name: string, value: Uint8Array, ttlMs: number): Promise<void> {
    this.#insert(this.#values, `${group}|${stamp}|${name}`, Buffer.from(value), ttlMs)
  }

  async readField(group: string, name: string, field: string, known?: string): Promise<StampedRead> {
    const stamp = this.#stamp(group)
    if (known === stamp) return { stamp, current: true, value: undefined }
    return { stamp, current: false, value: this.#live(this.#records, `${group}|${stamp}|${name}`)?.get(field) }
  }

  async writeFields(group: string, stamp: string, name: string, fields: ReadonlyMap<string, Uint8Array>, ttlMs: number): Promise<void> {
    const key = `${group}|${stamp}|${name}`
    const record = this.#live(this.#records, key) ?? new Map<string, Buffer>()
    for (const [field, value] of fields) record.set(field, Buffer.from(value))
    this.#records.delete(key)
    this.#insert(this.#records, key, record, ttlMs)
  }

  async bump(group: string): Promise<void> {
    this.#stamps.set(group, (this.#stamps.get(group) ?? 0) + 1)
  }

  async lease(key: string, ttlMs: number): Promise<Lease | undefined> {
    if (this.#live(this.#leases, key) !== undefined) return undefined
    const token = randomUUID()
    this.#insert(this.#leases, key, token, ttlMs)
    return { key, token }
  }

  async release(lease: Lease, outcome: string): Promise<void> {
    if (this.#live(this.#leases, lease.key) === lease.token) this.#leases.delete(lease.key)
    this.#watchers.released(lease.key, outcome)
  }

  watch(key: string): LeaseWatch {
    return this.#watchers.watch(key)
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    if (this.#live(this.#claims, key) !== undefined) return false
    this.#insert(this.#claims, key, true, ttlMs)
    return true
  }

  async unclaim(key: string): Promise<void> {
    this.#claims.delete(key)
  }

  async close(): Promise<void> {
    this.#watchers.clear()
  }

  #stamp(group: string): string {
    return String(this.#stamps.get(group) ?? 0)
  }

  #insert<V>(map: Map<string, Held<V>>, key: string, value: V, ttlMs: number): void {
    const now = this.#clock.now()
    for (const [old, held] of map) {
      if (held.expiresAt > now) break
      map.delete(old)
    }
    map.delete(key)
    map.set(key, { value, expiresAt: now + ttlMs })
  }

  #live<V>(map: Map<string, Held<V>>, key: string): V | undefined {
    const held = map.get(key)
    if (held === undefined) return undefined
    if (held.expiresAt <= this.#clock.now()) {
      map.delete(key)
      return undefined
    }
    return held.value
  }
}
