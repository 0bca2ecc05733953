/**
 * The counter `service.dredger.removals` by inventory and result (SPEC.md
 * 6.3 names no Dredger metric; this is the name the README gives). Telemetry
 * reads `snapshot()` through RunningRole.metrics; nothing here exports.
 */
import { INVENTORIES, type InventoryName } from './npm-inventory.js'

export const REMOVAL_RESULTS = [
  /** The version's tarball and its document entry are gone. */
  'removed',
  /** The inventory no longer held the version when the removal came (removed meanwhile). */
  'absent',
  /** The inventory refused or failed a write; the next cycle tries again. */
  'failed',
  /** Judged for removal past the per-cycle cap: left in place, and the Dredger halted. */
  'withheld_by_cap',
] as const
export type RemovalCount = (typeof REMOVAL_RESULTS)[number]

export class DredgerCounters {
  readonly #counts = new Map<string, number>()

  record(inventory: InventoryName, result: RemovalCount, by = 1): void {
    const key = `${inventory} ${result}`
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + by)
  }

  get(inventory: InventoryName, result: RemovalCount): number {
    return this.#counts.get(`${inventory} ${result}`) ?? 0
  }

  /** Every inventory and result with its running total, zeros included; a fresh object each call. */
  snapshot(): Record<InventoryName, Record<RemovalCount, number>> {
    const out = {} as Record<InventoryName, Record<RemovalCount, number>>
    for (const inventory of INVENTORIES) {
      const row = {} as Record<RemovalCount, number>
      for (const result of REMOVAL_RESULTS) row[result] = this.get(inventory, result)
      out[inventory] = row
    }
    return out
  }
}
