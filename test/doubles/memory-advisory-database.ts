/**
 * An in-memory AdvisoryDatabase built from a small literal list, for tests of
 * the rules and the serving paths. It answers through the same interface as
 * the compiled artifact, so rules cannot tell them apart.
 *
 * Ranges are read in the database's ecosystem: semver for `js`; for `py`,
 * PEP 440 (engine/advisory/artifact/pep440.ts). A range is `introduced`
 * (inclusive, '0' for everything) up to `fixed` (exclusive) or
 * `lastAffected` (inclusive), as in OSV.
 */
import semver from 'semver'

import { comparePep440, parsePep440 } from '../../engine/advisory/artifact/pep440.js'
import type { AdvisoryDatabase, AdvisoryMatch, AdvisoryMetadata, Ecosystem } from '../../engine/advisory/artifact/database.js'

export interface MemoryAdvisoryRange {
  readonly introduced: string
  readonly fixed?: string
  readonly lastAffected?: string
}

export interface MemoryAdvisory {
  readonly id: string
  readonly package: string
  readonly aliases?: readonly string[]
  readonly ranges?: readonly MemoryAdvisoryRange[]
  /** Versions listed as affected one by one (OSV `affected[].versions`). */
  readonly versions?: readonly string[]
  /** Highest EPSS probability over the advisory's CVEs. */
  readonly epss?: number
  readonly withdrawn?: boolean
}

export interface MemoryAdvisoryDatabaseOptions {
  readonly ecosystem: Ecosystem
  readonly advisories: readonly MemoryAdvisory[]
  /** Push time in the store; pass `null` for an artifact whose store reported none. */
  readonly publishedAt: Date | null
  readonly epssStatus?: 'available' | 'unavailable'
  readonly compiledAt?: Date
  /** Makes every lookup throw this, to exercise the lookup-fault cause. */
  readonly lookupFault?: Error
}

const CVE = /^CVE-\d{4}-\d+$/

function compareVersions(ecosystem: Ecosystem, a: string, b: string): number | undefined {
  if (ecosystem === 'js') {
    return semver.valid(a) === null || semver.valid(b) === null ? undefined : semver.compare(a, b)
  }
  const pa = parsePep440(a)
  const pb = parsePep440(b)
  return pa === undefined || pb === undefined ? undefined : comparePep440(pa, pb)
}

function normalizeName(ecosystem: Ecosystem, name: string): string {
  return ecosystem === 'py' ? name.toLowerCase().replace(/[-_.]+/g, '-') : name
}

export class MemoryAdvisoryDatabase implements AdvisoryDatabase {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  readonly publishedAt: Date | undefined
  #advisories: readonly MemoryAdvisory[]
  #lookupFault: Error | undefined

  constructor(options: MemoryAdvisoryDatabaseOptions) {
    this.ecosystem = options.ecosystem
    this.publishedAt = options.publishedAt ?? undefined
    this.#advisories = options.advisories.filter((a) => a.withdrawn !== true)
    this.#lookupFault = options.lookupFault
    this.metadata = Object.freeze({
      ecosystem: options.ecosystem,
      osvSource: '127.0.0.1:0',
      osvSourceUrl: 'http://127.0.0.1:0/osv',
      compiledAt: options.compiledAt ?? this.publishedAt ?? new Date(0),
      newestAdvisoryAt: undefined,
      epssScoreDate: undefined,
      epssStatus: options.epssStatus,
      rowCount: this.#advisories.length,
    })
  }

  #match(advisory: MemoryAdvisory): AdvisoryMatch {
    const cves = [advisory.id, ...(advisory.aliases ?? [])].filter((id) => CVE.test(id))
    return Object.freeze({ id: advisory.id, cves: Object.freeze(cves), epss: advisory.epss })
  }

  #inRange(range: MemoryAdvisoryRange, version: string): boolean {
    const e = this.ecosystem
    if (range.introduced !== '0' && !((compareVersions(e, version, range.introduced) ?? -1) >= 0)) return false
    if (range.fixed !== undefined) return (compareVersions(e, version, range.fixed) ?? 1) < 0
    if (range.lastAffected !== undefined) return (compareVersions(e, version, range.lastAffected) ?? 1) <= 0
    return compareVersions(e, version, version) !== undefined
  }

  #affects(advisory: MemoryAdvisory, version: string): boolean {
    if (advisory.versions?.includes(version) === true) return true
    return (advisory.ranges ?? []).some((range) => this.#inRange(range, version))
  }

  #forPackage(name: string): MemoryAdvisory[] {
    if (this.#lookupFault !== undefined) throw this.#lookupFault
    const wanted = normalizeName(this.ecosystem, name)
    return this.#advisories.filter((a) => normalizeName(this.ecosystem, a.package) === wanted)
  }

  affecting(name: string, version: string): readonly AdvisoryMatch[] {
    return this.#forPackage(name).filter((a) => this.#affects(a, version)).map((a) => this.#match(a))
  }

  remediating(name: string, version: string): readonly AdvisoryMatch[] {
    return this.#forPackage(name)
      .filter((a) => !this.#affects(a, version) &&
        (a.ranges ?? []).some((r) => r.fixed !== undefined && compareVersions(this.ecosystem, r.fixed, version) === 0))
      .map((a) => this.#match(a))
  }
}
