/**
 * The one byte bound and one entry bound that the selected-version and
 * assembled-response stores share (SPEC.md 6.3): no reserved shares, no
 * eviction floors. The budget only accounts; each store evicts its own
 * entries (retention-store.ts).
 */
import { ServiceError } from '../errors.js'

/** What a store sharing the budget lets the others ask of it. */
export interface BudgetMember {
  /** Drops the member's expired entries (an insert anywhere is a retaining insert for expiry). */
  sweepExpired(now: number): void
}

export class CacheBudget {
  readonly maxBytes: number
  readonly maxEntries: number
  #bytes = 0
  #entries = 0
  #members: BudgetMember[] = []

  constructor(maxBytes: number, maxEntries: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new ServiceError('CONFIG_INVALID', { message: `cache maxBytes must be a whole number of bytes, at least 0; got ${maxBytes}` })
    }
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 0) {
      throw new ServiceError('CONFIG_INVALID', { message: `cache maxEntries must be a whole number, at least 0; got ${maxEntries}` })
    }
    this.maxBytes = maxBytes
    this.maxEntries = maxEntries
  }

  get residentBytes(): number { return this.#bytes }
  get entries(): number { return this.#entries }
  get freeBytes(): number { return this.maxBytes - this.#bytes }
  get freeEntries(): number { return this.maxEntries - this.#entries }

  join(member: BudgetMember): void { this.#members.push(member) }

  sweepExpired(now: number): void {
    for (const member of this.#members) member.sweepExpired(now)
  }

  charge(bytes: number): void {
    this.#bytes += bytes
    this.#entries += 1
  }

  release(bytes: number): void {
    this.#bytes -= bytes
    this.#entries -= 1
  }
}
