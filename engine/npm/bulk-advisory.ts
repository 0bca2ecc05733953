/**
 * npm's bulk advisory exchange (`POST /-/npm/v1/security/advisories/bulk`,
 * what `npm audit` and `npm audit fix` send since npm 7; arborist
 * `audit-report.js`): the request is `{name: [version, ...]}`, the answer
 * `{name: [{id, url, title, severity, vulnerable_versions, cwe, cvss}]}`,
 * listing for each name the advisories that affect at least one version
 * asked about, and leaving out names with none.
 *
 * Answered from the mount's advisory database alone (issue 17 item 3): the
 * request names the client's whole dependency tree, private packages
 * included, so it never leaves the proxy. A name `isPrivate` says is
 * first-party answers nothing, whatever a public advisory of the same name
 * says.
 *
 * Fields the database does not record (a format 1 artifact, a record that
 * is silent) are filled as npm reads their absence: `severity` `high`
 * (metavuln-calculator's default), `vulnerable_versions` the affected
 * versions asked about, `cvss` `{score: 0, vectorString: null}`, `title`
 * the advisory id, `url` its OSV page.
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../errors.js'
import type { AdvisoryDatabase, AdvisoryReport } from '../advisory/artifact/database.js'

/** Most names one request may carry; a real tree of thousands of packages is far below it. */
export const AUDIT_MAX_NAMES = 20_000
/** Most versions over all names of one request (with AUDIT_MAX_NAMES, a bound on one request's lookups). */
export const AUDIT_MAX_VERSIONS = 50_000
const MAX_NAME_LENGTH = 214
const MAX_VERSION_LENGTH = 256

export type BulkAdvisoryRequest = ReadonlyMap<string, readonly string[]>

export interface BulkAdvisory {
  readonly id: number
  readonly url: string
  readonly title: string
  readonly severity: string
  readonly vulnerable_versions: string
  readonly cwe: readonly string[]
  readonly cvss: { readonly score: number; readonly vectorString: string | null }
}

function malformed(reason: string): ServiceError {
  return new ServiceError('AUDIT_REQUEST_INVALID', { data: { reason } })
}

/** Parses and checks a decoded request body; AUDIT_REQUEST_INVALID (400) when it is not the bulk shape. */
export function parseBulkAdvisoryRequest(body: Uint8Array): BulkAdvisoryRequest {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
  } catch {
    throw malformed('not JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw malformed('not an object')
  const out = new Map<string, string[]>()
  let versions = 0
  for (const [name, list] of Object.entries(parsed as Record<string, unknown>)) {
    if (out.size >= AUDIT_MAX_NAMES) throw malformed(`more than ${AUDIT_MAX_NAMES} names`)
    if (name === '' || name.length > MAX_NAME_LENGTH) throw malformed('a name that is no package name')
    if (!Array.isArray(list)) throw malformed('a value that is not an array of versions')
    const kept: string[] = []
    for (const v of list) {
      if (typeof v !== 'string' || v === '' || v.length > MAX_VERSION_LENGTH) throw malformed('a version that is not a version string')
      if (++versions > AUDIT_MAX_VERSIONS) throw malformed(`more than ${AUDIT_MAX_VERSIONS} versions`)
      if (!kept.includes(v)) kept.push(v)
    }
    out.set(name, kept)
  }
  return out
}

/** A stable number for an OSV id (npm's answer carries numbers): the first 48 bits of its SHA-256. */
export function numericAdvisoryId(id: string): number {
  return createHash('sha256').update(id).digest().readUIntBE(0, 6)
}

function bulkAdvisory(report: AdvisoryReport): BulkAdvisory {
  return {
    id: numericAdvisoryId(report.id),
    url: report.url ?? `https://osv.dev/vulnerability/${encodeURIComponent(report.id)}`,
    title: report.title ?? report.id,
    severity: report.severity ?? 'high',
    vulnerable_versions: report.vulnerableVersions ?? report.affectedVersions.join(' || '),
    cwe: report.cwe,
    cvss: report.cvss ?? { score: 0, vectorString: null },
  }
}

/** The bulk answer for a request, from `database` alone. */
export function bulkAdvisories(database: Pick<AdvisoryDatabase, 'affecting' | 'report'>, request: BulkAdvisoryRequest, isPrivate: (name: string) => boolean): Record<string, BulkAdvisory[]> {
  // No prototype: a name is only ever a key (`__proto__` included).
  const out: Record<string, BulkAdvisory[]> = Object.create(null) as Record<string, BulkAdvisory[]>
  for (const [name, versions] of request) {
    if (versions.length === 0 || isPrivate(name)) continue
    const reports = database.report !== undefined
      ? database.report(name, versions)
      : reportsFromMatches(database, name, versions)
    if (reports.length > 0) out[name] = reports.map(bulkAdvisory)
  }
  return out
}

/** For a database without details: what `affecting` says, nothing more. */
function reportsFromMatches(database: Pick<AdvisoryDatabase, 'affecting'>, name: string, versions: readonly string[]): AdvisoryReport[] {
  const byId = new Map<string, AdvisoryReport & { affectedVersions: string[] }>()
  for (const version of versions) {
    for (const m of database.affecting(name, version)) {
      const known = byId.get(m.id)
      if (known !== undefined) { if (!known.affectedVersions.includes(version)) known.affectedVersions.push(version); continue }
      byId.set(m.id, { id: m.id, cves: m.cves, title: undefined, url: undefined, severity: undefined, cwe: [], cvss: undefined, vulnerableVersions: undefined, affectedVersions: [version] })
    }
  }
  return [...byId.values()]
}
