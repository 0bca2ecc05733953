/**
 * Public versions the merge dropped before the gate (merge.ts DropReason):
 * counted every time, by reason, and logged at warn once per package,
 * version and reason while the record remembers it (the newest 4096), so a
 * hostile document that every install reads cannot flood the log.
 */
import { LRUCache } from 'lru-cache'
import type { Logger } from '../log/logger.js'
import type { DropReason, DroppedVersion } from './merge.js'

export const PUBLIC_VERSION_DROPPED = 'public version dropped'

const REMEMBERED = 4096

export class DroppedVersionRecord {
  readonly #logger: Logger
  readonly #ecosystem: string
  readonly #logged = new LRUCache<string, true>({ max: REMEMBERED })
  readonly #counts: Record<DropReason, number> = { unreadable_key: 0, alias_key: 0, name_mismatch: 0, version_mismatch: 0 }
  #unlisted = 0

  constructor(options: { logger: Logger; ecosystem: string }) {
    this.#logger = options.logger
    this.#ecosystem = options.ecosystem
  }

  /** One merge's drops: `listed` is its bounded list, `total` how many it dropped in all. */
  record(packageName: string, listed: readonly DroppedVersion[], total: number): void {
    for (const { version, reason } of listed) {
      this.#counts[reason]++
      const key = `${packageName}\u0000${version}\u0000${reason}`
      if (this.#logged.has(key)) continue
      this.#logged.set(key, true)
      this.#logger.warn(PUBLIC_VERSION_DROPPED, { ecosystem: this.#ecosystem, package: packageName, version, reason })
    }
    // Past the listed ones the reason is not known: they have a bucket of their own.
    if (total > listed.length) this.#unlisted += total - listed.length
  }

  /** `service.packument.versions.dropped` by reason; `unlisted` counts drops past a merge's listed ones. */
  snapshot(): Readonly<Record<DropReason | 'unlisted', number>> {
    return { ...this.#counts, unlisted: this.#unlisted }
  }
}
