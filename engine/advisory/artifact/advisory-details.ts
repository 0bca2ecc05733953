/**
 * What an advisory says to a person, beyond what the rules look up: the
 * fields of npm's bulk advisory answer (`/-/npm/v1/security/advisories/bulk`:
 * title, url, severity, cwe, cvss, vulnerable_versions), read from the OSV
 * record by Pilot and kept in the artifact's details section
 * (artifact-format.ts, format 2).
 *
 * Where a record is silent:
 * - title: the `summary`, else the first line of `details`, else the id;
 * - url: a GHSA id names its GitHub advisory page (what npm links to); any
 *   other id a reference of type ADVISORY that names it, else its OSV page;
 * - severity: `database_specific.severity` (GHSA: LOW, MODERATE, HIGH,
 *   CRITICAL), else the CVSS v3 base score's band, else `critical` for a
 *   malicious-package record (`MAL-*`), else not recorded;
 * - cvss: the CVSS v3 vector of `severity[]` with its base score computed
 *   (CVSS v3.1 section 7); a record with only a v4 vector records none.
 */
import { sortRangeEvents } from './osv-evaluate.js'
import { ecosystemMatches, isVersionRange, packageKey, type OsvRecord } from './osv-record.js'
import type { Ecosystem } from './database.js'
import { parseNpmVersion } from './npm-version.js'

export type Severity = 'low' | 'moderate' | 'high' | 'critical'

export interface AdvisoryDetails {
  readonly title: string
  readonly url: string
  /** undefined: the record says nothing usable. */
  readonly severity: Severity | undefined
  readonly cwe: readonly string[]
  /** undefined: no CVSS v3 vector. */
  readonly cvss: { readonly score: number; readonly vectorString: string } | undefined
}

/** Bounds on what one record may put in the artifact. */
const MAX_TITLE = 512
const MAX_URL = 2048
const MAX_VECTOR = 256
const MAX_CWE = 32
const MAX_RANGE_TEXT = 8192

const CWE = /^CWE-\d{1,6}$/
const SEVERITY_WORDS: Readonly<Record<string, Severity>> = { LOW: 'low', MODERATE: 'moderate', MEDIUM: 'moderate', HIGH: 'high', CRITICAL: 'critical' }

interface RecordExtras {
  readonly summary?: unknown
  readonly details?: unknown
  readonly database_specific?: { readonly severity?: unknown; readonly cwe_ids?: unknown }
  readonly severity?: readonly { readonly type?: unknown; readonly score?: unknown }[]
  readonly references?: readonly { readonly type?: unknown; readonly url?: unknown }[]
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`
}

export function advisoryDetailsOf(record: OsvRecord): AdvisoryDetails {
  const r = record as OsvRecord & RecordExtras
  const id = String(record.id)
  let title = typeof r.summary === 'string' ? r.summary.trim() : ''
  if (title === '' && typeof r.details === 'string') title = r.details.trim().split('\n')[0]?.trim() ?? ''
  if (title === '') title = id

  let url: string | undefined
  if (id.startsWith('GHSA-')) url = `https://github.com/advisories/${id}`
  else if (Array.isArray(r.references)) {
    url = r.references.find((ref) => ref?.type === 'ADVISORY' && typeof ref.url === 'string' && ref.url.includes(id) && /^https?:\/\//.test(ref.url))?.url as string | undefined
  }
  url ??= `https://osv.dev/vulnerability/${encodeURIComponent(id)}`

  let cvss: AdvisoryDetails['cvss']
  if (Array.isArray(r.severity)) {
    for (const s of r.severity) {
      if (s?.type !== 'CVSS_V3' || typeof s.score !== 'string' || s.score.length > MAX_VECTOR) continue
      const score = cvss3BaseScore(s.score)
      if (score !== undefined) { cvss = { score, vectorString: s.score }; break }
    }
  }

  const word = r.database_specific?.severity
  let severity: Severity | undefined = typeof word === 'string' ? SEVERITY_WORDS[word.toUpperCase()] : undefined
  if (severity === undefined && cvss !== undefined) severity = severityOfScore(cvss.score)
  if (severity === undefined && id.startsWith('MAL-')) severity = 'critical'

  const ids = r.database_specific?.cwe_ids
  const cwe = Array.isArray(ids) ? [...new Set(ids.filter((c): c is string => typeof c === 'string' && CWE.test(c)))].slice(0, MAX_CWE) : []
  return { title: clip(title, MAX_TITLE), url: clip(url, MAX_URL), severity, cwe, cvss }
}

/** CVSS v3 qualitative bands (v3.1 section 5), with npm's `moderate` for Medium. */
export function severityOfScore(score: number): Severity | undefined {
  if (score >= 9) return 'critical'
  if (score >= 7) return 'high'
  if (score >= 4) return 'moderate'
  if (score > 0) return 'low'
  return undefined
}

const WEIGHTS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  AV: { N: 0.85, A: 0.62, L: 0.55, P: 0.2 },
  AC: { L: 0.77, H: 0.44 },
  UI: { N: 0.85, R: 0.62 },
  C: { H: 0.56, L: 0.22, N: 0 },
  I: { H: 0.56, L: 0.22, N: 0 },
  A: { H: 0.56, L: 0.22, N: 0 },
}

/** CVSS v3.1 Roundup (Appendix A): the smallest one-decimal number at or above x, free of float error. */
function roundUp(x: number): number {
  const i = Math.round(x * 100_000)
  return i % 10_000 === 0 ? i / 100_000 : (Math.floor(i / 10_000) + 1) / 10
}

/** The base score of a `CVSS:3.0/...` or `CVSS:3.1/...` vector (v3.1 section 7.1); undefined when it is not one. */
export function cvss3BaseScore(vector: string): number | undefined {
  const parts = vector.split('/')
  if (parts[0] !== 'CVSS:3.0' && parts[0] !== 'CVSS:3.1') return undefined
  const m = new Map<string, string>()
  for (const p of parts.slice(1)) {
    const [k, v] = p.split(':')
    if (k === undefined || v === undefined) return undefined
    m.set(k, v)
  }
  const scope = m.get('S')
  if (scope !== 'U' && scope !== 'C') return undefined
  const w = (k: string): number | undefined => WEIGHTS[k]?.[m.get(k) ?? '']
  const pr = m.get('PR')
  const prWeight = pr === 'N' ? 0.85 : pr === 'L' ? (scope === 'C' ? 0.68 : 0.62) : pr === 'H' ? (scope === 'C' ? 0.5 : 0.27) : undefined
  const [av, ac, ui, c, i, a] = ['AV', 'AC', 'UI', 'C', 'I', 'A'].map(w)
  if (av === undefined || ac === undefined || ui === undefined || c === undefined || i === undefined || a === undefined || prWeight === undefined) return undefined
  const iss = 1 - (1 - c) * (1 - i) * (1 - a)
  const impact = scope === 'U' ? 6.42 * iss : 7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15
  const exploitability = 8.22 * av * ac * prWeight * ui
  if (impact <= 0) return 0
  return scope === 'U' ? roundUp(Math.min(impact + exploitability, 10)) : roundUp(Math.min(1.08 * (impact + exploitability), 10))
}

/**
 * The versions of `name` a record affects, as an npm semver range (what
 * npm's `vulnerable_versions` holds): each SEMVER or ECOSYSTEM range's
 * intervals (`introduced` to `fixed` exclusive or `last_affected`
 * inclusive; `introduced: "0"` unbounded below; `limit` read as an
 * exclusive bound) and each listed version exactly, joined with ` || `.
 * Only `js` ranges are rendered (PyPI versions are not semver); a range
 * whose versions do not parse is left out, as the lookup leaves it out. An
 * empty string means nothing renderable.
 */
export function vulnerableRangeText(ecosystem: Ecosystem, record: OsvRecord, name: string): string {
  if (ecosystem !== 'js' || !Array.isArray(record.affected)) return ''
  const key = packageKey(ecosystem, name)
  const parts: string[] = []
  const add = (part: string): void => { if (!parts.includes(part)) parts.push(part) }
  for (const a of record.affected) {
    if (a === null || typeof a !== 'object' || !ecosystemMatches(ecosystem, a.package?.ecosystem)) continue
    if (typeof a.package?.name !== 'string' || packageKey(ecosystem, a.package.name) !== key) continue
    for (const range of Array.isArray(a.ranges) ? a.ranges : []) {
      if (range === null || typeof range !== 'object' || !isVersionRange(range)) continue
      const events = sortRangeEvents(ecosystem, range)
      if (events === undefined) continue
      /** null: not inside an interval; '': open below; else its lower bound. */
      let lower: string | null = null
      const close = (bound: string): void => {
        if (lower === null) return
        add(lower === '' ? bound : `${lower} ${bound}`)
        lower = null
      }
      for (const e of events) {
        const v = e.version === undefined ? undefined : (e.version as { version: string }).version
        if (e.kind === 'introduced') { if (lower === null) lower = v === undefined ? '' : `>=${v}` }
        else if (v === undefined) continue
        else if (e.kind === 'last_affected') close(`<=${v}`)
        else close(`<${v}`)
      }
      if (lower !== null) add(lower === '' ? '*' : lower)
    }
    for (const raw of Array.isArray(a.versions) ? a.versions : []) {
      if (typeof raw !== 'string') continue
      const parsed = parseNpmVersion(raw.trim())
      if (parsed !== undefined) add(parsed.version)
    }
  }
  const text = parts.includes('*') ? '*' : parts.join(' || ')
  return text.length <= MAX_RANGE_TEXT ? text : ''
}
