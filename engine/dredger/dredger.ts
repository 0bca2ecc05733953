/**
 * The Dredger's cycles (SPEC.md 1.6, 3.1, 9).
 *
 * - A candidate cycle looks up, in every inventory of every dredged mount,
 *   the packages that revocation-phase identity denials name, and removes
 *   each held version they deny. It does not see a rule change that names
 *   no new package: that is what the full walk is for.
 * - A malware sweep (issue 31 item 4) joins the first cycle after an
 *   advisory database is swapped in: it lists every package of every
 *   inventory, keeps those the database has a malware record for, and
 *   judges their versions (DenyIfMalicious). Until a cycle finishes it with
 *   no failed read or removal, the next cycle sweeps again.
 * - A full walk (`dredger.fullWalk: true`, once at boot) lists every package
 *   of every inventory (and the candidates, for a registry whose listing
 *   misses some) and judges every version against the same rules.
 *
 * A cycle first plans (reads only), then removes one version at a time. The
 * per-cycle cap `dredger.maxRemovalsPerCycle`: once a cycle has removed that
 * many versions, nothing more is removed, the Dredger latches halted (one
 * error line naming the cap, the count the cycle wanted and the rule of the
 * first version left) and every later cycle does nothing until a restart.
 * A rule mistake must never empty a registry.
 */
import type { AdvisoryDatabase } from '../advisory/artifact/database.js'
import type { MountKey } from '../config/schema.js'
import { isServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { DredgerCounters } from './dredger-counters.js'
import type { InventoryName, NpmInventory } from './npm-inventory.js'
import type { RevocationJudge } from './revocation-judge.js'

/** info: one version removed from one inventory; fields mount, package, version, inventory, rule. */
export const DREDGER_REMOVED = 'dredger removed a version'
/** error (SPEC.md 6.2 "halted role"): the cap was reached; fields cap, count, rule, mount. */
export const DREDGER_HALTED = 'dredger halted at the removal cap'
/** error: a removal failed; the next cycle tries again. */
export const DREDGER_REMOVAL_FAILED = 'dredger removal failed'
/** error: an inventory could not be listed or read; its versions are judged next cycle. */
export const DREDGER_INVENTORY_FAILED = 'dredger could not read an inventory'
/** info: what one cycle did. */
export const DREDGER_CYCLE_FINISHED = 'dredger cycle finished'
/** info: a latched Dredger skipped a cycle. */
export const DREDGER_CYCLE_SKIPPED_HALTED = 'dredger cycle skipped: halted until restart'

export type CycleKind = 'candidate' | 'full_walk'

export interface DredgedMount {
  readonly key: MountKey
  readonly judge: RevocationJudge
  readonly inventories: readonly NpmInventory[]
  /**
   * First-party names (inside the mount's `publish.scopes`): their versions
   * in either inventory were published by the operator, never copied from
   * the public side, so the Dredger never plans a removal of them.
   */
  readonly firstParty?: (name: string) => boolean
}

export interface PlannedRemoval {
  readonly mount: MountKey
  readonly package: string
  readonly version: string
  readonly inventory: InventoryName
  readonly rule: string
}

export interface CycleReport {
  readonly kind: CycleKind
  readonly planned: number
  readonly removed: number
  readonly absent: number
  readonly failed: number
  /** Reads that failed while planning. */
  readonly unreadable: number
  readonly halted: boolean
  /** Mounts whose malware records this cycle swept the inventories for (absent: none). */
  readonly malwareSweeps?: number
}

export interface DredgerOptions {
  readonly mounts: readonly DredgedMount[]
  readonly maxRemovalsPerCycle: number
  readonly counters: DredgerCounters
  readonly logger: Logger
  /** Called once, when the cap latches, with the mounts to report `halted`. */
  readonly onHalt?: (mounts: readonly MountKey[]) => void
  /** A version was removed: the proxies' cached view of its package is out of date (docs/cache.md "Invalidation"); never rejects. */
  readonly onRemoved?: (mount: MountKey, packageName: string) => Promise<void>
}

function failureFields(error: unknown): Record<string, unknown> {
  if (isServiceError(error)) {
    const status = error.data?.['status']
    return { code: error.code, ...(typeof status === 'number' ? { status } : {}) }
  }
  return { code: 'INTERNAL', detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }
}

/**
 * Reads every inventory and returns what the rules revoke, in a stable order
 * (mount, inventory, package, version as held). Nothing is written. Read
 * failures are logged and counted, and the rest goes on.
 */
export async function planRemovals(mounts: readonly DredgedMount[], kind: CycleKind, logger: Logger, signal?: AbortSignal): Promise<{ removals: PlannedRemoval[]; unreadable: number; sweeps: MalwareSweep[] }> {
  const removals: PlannedRemoval[] = []
  const sweeps: MalwareSweep[] = []
  let unreadable = 0
  for (const mount of mounts) {
    const sweep = mount.judge.malwareSweep()
    if (sweep !== undefined) sweeps.push({ judge: mount.judge, database: sweep })
    for (const inventory of mount.inventories) {
      let names: readonly string[] = mount.judge.candidates
      if (kind === 'full_walk' || sweep !== undefined) {
        try {
          const listed = await inventory.packages(signal)
          // A sweep alone judges only the packages a malware record names; a full walk judges every one.
          const picked = kind === 'full_walk' || sweep === undefined ? listed : listed.filter((name) => mount.judge.namesMalware(sweep, name))
          names = [...new Set([...picked, ...mount.judge.candidates])]
        } catch (error) {
          if (signal?.aborted === true) throw error
          unreadable++
          logger.error(DREDGER_INVENTORY_FAILED, { mount: mount.key, inventory: inventory.name, authority: inventory.authority, step: 'listing', ...failureFields(error) })
          // The candidates are still worth a look when the listing fails.
        }
      }
      for (const name of names) {
        let versions: readonly string[]
        try {
          versions = await inventory.versions(name, signal)
        } catch (error) {
          if (signal?.aborted === true) throw error
          unreadable++
          logger.error(DREDGER_INVENTORY_FAILED, { mount: mount.key, inventory: inventory.name, authority: inventory.authority, package: name, step: 'document', ...failureFields(error) })
          continue
        }
        if (mount.firstParty?.(name) === true) continue
        for (const version of versions) {
          const verdict = mount.judge.judge(name, version)
          if (verdict !== undefined) removals.push({ mount: mount.key, package: name, version, inventory: inventory.name, rule: verdict.rule })
        }
      }
    }
  }
  return { removals, unreadable, sweeps }
}

/** A malware sweep a cycle planned: marked done when the cycle finishes without a failed read or removal. */
export interface MalwareSweep {
  readonly judge: RevocationJudge
  readonly database: AdvisoryDatabase
}

export class Dredger {
  readonly #mounts: readonly DredgedMount[]
  readonly #cap: number
  readonly #counters: DredgerCounters
  readonly #logger: Logger
  readonly #onHalt: ((mounts: readonly MountKey[]) => void) | undefined
  readonly #onRemoved: ((mount: MountKey, packageName: string) => Promise<void>) | undefined
  readonly #inventories = new Map<string, NpmInventory>()
  #halted = false

  constructor(options: DredgerOptions) {
    if (!Number.isSafeInteger(options.maxRemovalsPerCycle) || options.maxRemovalsPerCycle < 1) {
      throw new RangeError(`maxRemovalsPerCycle must be a positive integer, got ${options.maxRemovalsPerCycle}`)
    }
    this.#mounts = options.mounts
    this.#cap = options.maxRemovalsPerCycle
    this.#counters = options.counters
    this.#logger = options.logger
    this.#onHalt = options.onHalt
    this.#onRemoved = options.onRemoved
    for (const mount of options.mounts) for (const inventory of mount.inventories) this.#inventories.set(`${mount.key} ${inventory.name}`, inventory)
  }

  /** True once the cap latched; only a restart clears it. */
  get halted(): boolean {
    return this.#halted
  }

  /** Plans and runs one cycle. An aborted signal stops it between two removals (never inside one). */
  async runCycle(kind: CycleKind, signal?: AbortSignal): Promise<CycleReport> {
    if (this.#halted) {
      this.#logger.info(DREDGER_CYCLE_SKIPPED_HALTED, { kind, cap: this.#cap })
      return { kind, planned: 0, removed: 0, absent: 0, failed: 0, unreadable: 0, halted: true }
    }
    const { removals, unreadable, sweeps } = await planRemovals(this.#mounts, kind, this.#logger, signal)
    let removed = 0
    let absent = 0
    let failed = 0
    for (let i = 0; i < removals.length; i++) {
      if (signal?.aborted === true) break
      const removal = removals[i] as PlannedRemoval
      if (removed >= this.#cap) {
        this.#halt(removals, i)
        break
      }
      const inventory = this.#inventories.get(`${removal.mount} ${removal.inventory}`) as NpmInventory
      const fields = { mount: removal.mount, package: removal.package, version: removal.version, inventory: removal.inventory, rule: removal.rule }
      try {
        // No signal: a removal that started runs to its end, so a drain never leaves it half done.
        const result = await inventory.remove(removal.package, removal.version)
        this.#counters.record(removal.inventory, result)
        if (result === 'removed') {
          removed++
          this.#logger.info(DREDGER_REMOVED, fields)
          await this.#onRemoved?.(removal.mount, removal.package)
        } else absent++
      } catch (error) {
        failed++
        this.#counters.record(removal.inventory, 'failed')
        this.#logger.error(DREDGER_REMOVAL_FAILED, { ...fields, authority: inventory.authority, ...failureFields(error) })
      }
    }
    // A sweep is done when every version it planned was dealt with; else the next cycle sweeps again.
    const finished = failed === 0 && unreadable === 0 && !this.#halted && signal?.aborted !== true
    if (finished) for (const sweep of sweeps) sweep.judge.markSwept(sweep.database)
    const report: CycleReport = { kind, planned: removals.length, removed, absent, failed, unreadable, halted: this.#halted, ...(sweeps.length === 0 ? {} : { malwareSweeps: sweeps.length }) }
    this.#logger.info(DREDGER_CYCLE_FINISHED, { ...report })
    return report
  }

  #halt(removals: readonly PlannedRemoval[], next: number): void {
    this.#halted = true
    for (let i = next; i < removals.length; i++) {
      const left = removals[i] as PlannedRemoval
      this.#counters.record(left.inventory, 'withheld_by_cap')
    }
    const first = removals[next] as PlannedRemoval
    const rules = [...new Set(removals.slice(next).map((r) => r.rule))]
    this.#logger.error(DREDGER_HALTED, {
      cap: this.#cap,
      count: removals.length,
      rule: first.rule,
      ...(rules.length > 1 ? { rules } : {}),
      mount: first.mount,
      left: removals.length - next,
    })
    this.#onHalt?.(this.#mounts.map((mount) => mount.key))
  }
}
