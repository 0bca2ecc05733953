/**
 * OSV range evaluation over parsed records, written straight from the
 * schema's "Evaluation" pseudocode (IsVulnerable, IncludedInVersions,
 * IncludedInRanges, BeforeLimits). It is the reference the compiled artifact
 * is checked against, and what an in-memory advisory database can use.
 *
 * Choices where the schema leaves room, shared with the compiler:
 * - Only SEMVER and ECOSYSTEM ranges count; for npm both compare as semver
 *   (the `semver` package, loose parsing, partial `X.Y` read as `X.Y.0`), for PyPI both as PEP 440. GIT
 *   ranges name commits and are ignored.
 * - `introduced: "0"` sorts before every version and `limit: "*"` after.
 * - Events are sorted stably by version; ties keep record order.
 * - A range holding an event version that does not parse (other than "0" and
 *   "*") is ignored whole: its bounds cannot be placed.
 * - A queried version that does not parse matches an explicit version list
 *   by its trimmed string, and matches a range only when that range affects
 *   every version (`introduced: "0"` with no fixed or last_affected event and
 *   no finite limit), as malicious-package records do.
 * - Explicit version lists compare by ecosystem equality (PEP 440 `1.0` ==
 *   `1.0.0`; whitespace trimmed, so the real `"0.0.9 "` lists `0.0.9`).
 */
import semver from 'semver'
import type { AdvisoryMatch, Ecosystem } from './database.js'
import { parseNpmVersion } from './npm-version.js'
import { comparePep440, parsePep440, type Pep440Version } from './pep440.js'
import {
  cveIds, ecosystemMatches, isLiveRecord, isVersionRange, packageKey,
  type OsvAffected, type OsvRange, type OsvRecord,
} from './osv-record.js'

type Parsed = semver.SemVer | Pep440Version

function parse(ecosystem: Ecosystem, v: string): Parsed | undefined {
  if (ecosystem === 'js') return parseNpmVersion(v)
  return parsePep440(v)
}

function compare(ecosystem: Ecosystem, a: Parsed, b: Parsed): number {
  if (ecosystem === 'js') return semver.compare(a as semver.SemVer, b as semver.SemVer)
  return comparePep440(a as Pep440Version, b as Pep440Version)
}

type EventKind = 'introduced' | 'fixed' | 'last_affected' | 'limit'

interface SortedEvent {
  readonly kind: EventKind
  /** undefined: `introduced: "0"` (minus infinity) or `limit: "*"` (plus infinity). */
  readonly version: Parsed | undefined
}

/** The range's events sorted by version, or undefined when one does not parse. */
export function sortRangeEvents(ecosystem: Ecosystem, range: OsvRange): SortedEvent[] | undefined {
  const out: SortedEvent[] = []
  for (const e of range.events ?? []) {
    const kinds: EventKind[] = ['introduced', 'fixed', 'last_affected', 'limit']
    for (const kind of kinds) {
      const raw = e[kind]
      if (typeof raw !== 'string') continue
      if (kind === 'introduced' && raw.trim() === '0') { out.push({ kind, version: undefined }); continue }
      if (kind === 'limit' && raw.includes('*')) { out.push({ kind, version: undefined }); continue }
      const version = parse(ecosystem, raw)
      if (version === undefined) return undefined
      out.push({ kind, version })
    }
  }
  const rank = (e: SortedEvent): number => (e.version !== undefined ? 0 : e.kind === 'introduced' ? -1 : 1)
  return out.sort((a, b) => {
    const ra = rank(a)
    const rb = rank(b)
    if (ra !== 0 || rb !== 0) return ra - rb
    return compare(ecosystem, a.version as Parsed, b.version as Parsed)
  })
}

function includedInRange(ecosystem: Ecosystem, v: Parsed | undefined, events: readonly SortedEvent[]): boolean {
  if (v === undefined) {
    return events.some((e) => e.kind === 'introduced' && e.version === undefined) &&
      events.every((e) => (e.kind === 'introduced' && e.version === undefined) || (e.kind === 'limit' && e.version === undefined))
  }
  const limits = events.filter((e) => e.kind === 'limit')
  if (limits.length > 0 && !limits.some((e) => e.version === undefined || compare(ecosystem, v, e.version) < 0)) return false
  let vulnerable = false
  for (const e of events) {
    const c = e.version === undefined ? 1 : compare(ecosystem, v, e.version)
    if (e.kind === 'introduced' && c >= 0) vulnerable = true
    else if (e.kind === 'fixed' && c >= 0) vulnerable = false
    else if (e.kind === 'last_affected' && c > 0) vulnerable = false
  }
  return vulnerable
}

function includedInVersions(ecosystem: Ecosystem, version: string, v: Parsed | undefined, versions: readonly unknown[]): boolean {
  for (const raw of versions) {
    if (typeof raw !== 'string') continue
    const p = parse(ecosystem, raw)
    if (v !== undefined && p !== undefined) {
      if (compare(ecosystem, v, p) === 0) return true
    } else if (v === undefined && p === undefined && raw.trim() === version.trim()) {
      return true
    }
  }
  return false
}

function entriesFor(ecosystem: Ecosystem, record: OsvRecord, name: string): OsvAffected[] {
  if (!isLiveRecord(record) || !Array.isArray(record.affected)) return []
  const key = packageKey(ecosystem, name)
  return record.affected.filter((a) =>
    ecosystemMatches(ecosystem, a.package?.ecosystem) &&
    typeof a.package?.name === 'string' && packageKey(ecosystem, a.package.name) === key)
}

/** OSV IsVulnerable for one record. */
export function recordAffects(ecosystem: Ecosystem, record: OsvRecord, name: string, version: string): boolean {
  const v = parse(ecosystem, version)
  for (const a of entriesFor(ecosystem, record, name)) {
    if (Array.isArray(a.versions) && includedInVersions(ecosystem, version, v, a.versions)) return true
    for (const r of a.ranges ?? []) {
      if (!isVersionRange(r)) continue
      const events = sortRangeEvents(ecosystem, r)
      if (events !== undefined && includedInRange(ecosystem, v, events)) return true
    }
  }
  return false
}

/**
 * Whether `version` is a `fixed` bound, preceded in its sorted range by an
 * `introduced` bound below it (so earlier versions are affected), of a record
 * that does not affect `version` itself.
 */
export function recordRemediatedBy(ecosystem: Ecosystem, record: OsvRecord, name: string, version: string): boolean {
  const v = parse(ecosystem, version)
  if (v === undefined) return false
  let isFixBound = false
  for (const a of entriesFor(ecosystem, record, name)) {
    for (const r of a.ranges ?? []) {
      if (!isVersionRange(r)) continue
      const events = sortRangeEvents(ecosystem, r)
      if (events === undefined) continue
      let introducedBelow = false
      for (const e of events) {
        if (e.kind === 'introduced') introducedBelow = true
        else if (e.kind === 'fixed' && introducedBelow && e.version !== undefined && compare(ecosystem, v, e.version) === 0) {
          isFixBound = true
        }
      }
    }
  }
  return isFixBound && !recordAffects(ecosystem, record, name, version)
}

/** The AdvisoryMatch of a record, with the highest EPSS score among its CVEs. */
export function advisoryMatchOf(record: OsvRecord, epss: ReadonlyMap<string, number>): AdvisoryMatch {
  const cves = cveIds(record)
  let best: number | undefined
  for (const c of cves) {
    const s = epss.get(c)
    if (s !== undefined && (best === undefined || s > best)) best = s
  }
  return { id: record.id as string, cves, epss: best }
}

/** Reference `affecting` over a list of records. */
export function evaluateAffecting(
  ecosystem: Ecosystem, records: readonly OsvRecord[], epss: ReadonlyMap<string, number>, name: string, version: string,
): AdvisoryMatch[] {
  return records.filter((r) => recordAffects(ecosystem, r, name, version)).map((r) => advisoryMatchOf(r, epss))
}

/** Reference `remediating` over a list of records. */
export function evaluateRemediating(
  ecosystem: Ecosystem, records: readonly OsvRecord[], epss: ReadonlyMap<string, number>, name: string, version: string,
): AdvisoryMatch[] {
  return records.filter((r) => recordRemediatedBy(ecosystem, r, name, version)).map((r) => advisoryMatchOf(r, epss))
}
