/**
 * The part of an OSV record (https://ossf.github.io/osv-schema) that the
 * advisory database reads, and the small rules for reading it that both the
 * compiler and the reference evaluation share: which `affected` entries count
 * for a mount, how package names are compared, which aliases are CVEs.
 * Everything else in a record (details, references, severity) is ignored.
 */
import { OSV_ECOSYSTEM, type Ecosystem } from './database.js'

export interface OsvEvent {
  readonly introduced?: string
  readonly fixed?: string
  readonly last_affected?: string
  readonly limit?: string
}

export interface OsvRange {
  readonly type?: string
  readonly events?: readonly OsvEvent[]
}

export interface OsvAffected {
  readonly package?: { readonly name?: string; readonly ecosystem?: string }
  readonly ranges?: readonly OsvRange[]
  readonly versions?: readonly string[]
}

export interface OsvRecord {
  readonly id?: string
  readonly aliases?: readonly string[]
  readonly modified?: string
  readonly withdrawn?: string
  readonly affected?: readonly OsvAffected[]
}

/** PEP 503 name normalisation: lower case, runs of `-`, `_`, `.` become one `-`. */
export function normalizePypiName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-')
}

/** The name under which a package is stored and looked up for a mount. */
export function packageKey(ecosystem: Ecosystem, name: string): string {
  // npm names are case-sensitive and compared exactly; PyPI names compare normalised.
  return ecosystem === 'py' ? normalizePypiName(name.trim()) : name
}

/**
 * Whether an `affected[].package.ecosystem` names the mount's OSV ecosystem.
 * A `:<suffix>` (a release or repository qualifier in the OSV ecosystem list)
 * is cut off first; the comparison is exact otherwise, as OSV spells them.
 */
export function ecosystemMatches(ecosystem: Ecosystem, osvEcosystem: string | undefined): boolean {
  if (typeof osvEcosystem !== 'string') return false
  const colon = osvEcosystem.indexOf(':')
  const base = colon === -1 ? osvEcosystem : osvEcosystem.slice(0, colon)
  return base === OSV_ECOSYSTEM[ecosystem]
}

const CVE_ID = /^CVE-\d{4}-\d{4,}$/

/** CVE ids among the record's id and aliases, deduplicated, in order of appearance. */
export function cveIds(record: OsvRecord): string[] {
  const out: string[] = []
  const consider = (s: unknown): void => {
    if (typeof s === 'string' && CVE_ID.test(s) && !out.includes(s)) out.push(s)
  }
  consider(record.id)
  if (Array.isArray(record.aliases)) for (const a of record.aliases) consider(a)
  return out
}

/** Range types whose events are version strings of the package's ecosystem (GIT ranges are commits). */
export function isVersionRange(range: OsvRange): boolean {
  return range.type === 'SEMVER' || range.type === 'ECOSYSTEM'
}

/** A record that counts: has an id and is not withdrawn (OSV `withdrawn`). */
export function isLiveRecord(record: OsvRecord): boolean {
  return typeof record.id === 'string' && record.id.length > 0 && record.withdrawn === undefined
}
