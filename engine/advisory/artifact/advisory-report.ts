/**
 * The audit report of one package (AdvisoryDatabase.report, for npm's bulk
 * advisory answer, engine/npm/bulk-advisory.ts): per advisory affecting any
 * of the asked versions, its id, CVEs, details (format 2: title, URL,
 * severity, CVSS, CWEs), the range text it was compiled from, and which of
 * the versions it affects.
 */
import * as F from './artifact-format.js'
import type { ArtifactReader } from './artifact-reader.js'
import type { AdvisoryReport, AdvisorySeverity } from './database.js'

export const NO_REPORTS: readonly AdvisoryReport[] = Object.freeze([])

/** By severity code (artifact-format.ts SEVERITY_CODES); 0 is not recorded. */
const SEVERITIES: readonly (AdvisorySeverity | undefined)[] = [undefined, 'low', 'moderate', 'high', 'critical']

/** The reports of package `pkg`, in its entries' order, for the advisories `hits` names (advisory id to the versions it affects). */
export function reportsOf(reader: ArtifactReader, pkg: number, hits: Map<string, string[]>): readonly AdvisoryReport[] {
  const entries = reader.entriesOf(pkg)
  const count = reader.entryCountOf(pkg)
  const out: AdvisoryReport[] = []
  for (let e = 0; e < count; e++) {
    const advisory = reader.u32(entries + e * F.ENTRY_SIZE)
    const match = reader.matchOf(advisory)
    const affected = hits.get(match.id)
    if (affected === undefined) continue
    hits.delete(match.id)
    out.push({ id: match.id, cves: match.cves, ...detailsOf(reader, advisory), vulnerableVersions: rangeTextOf(reader, pkg, e), affectedVersions: affected })
  }
  return out
}

/** An advisory's details (format 2), or nothing recorded. */
function detailsOf(reader: ArtifactReader, advisory: number): Pick<AdvisoryReport, 'title' | 'url' | 'severity' | 'cwe' | 'cvss'> {
  const section = reader.header.details
  if (section === 0) return { title: undefined, url: undefined, severity: undefined, cwe: [], cvss: undefined }
  let p = reader.u32(section + 4 + advisory * 4)
  const title = reader.str(p)
  p += 4 + reader.u32(p)
  const url = reader.str(p)
  p += 4 + reader.u32(p)
  const severity = SEVERITIES[reader.view.getUint8(p)]
  const score = reader.view.getFloat64(p + 4, true)
  p += 12
  const vector = reader.str(p)
  const cwe = reader.strList(p + 4 + reader.u32(p))
  return { title, url, severity, cwe, cvss: Number.isNaN(score) || vector === '' ? undefined : { score, vectorString: vector } }
}

/** The range text of entry `e` of package `pkg` (format 2), undefined when not recorded. */
function rangeTextOf(reader: ArtifactReader, pkg: number, e: number): string | undefined {
  const section = reader.header.details
  if (section === 0) return undefined
  const ranges = section + 4 + reader.header.advisoryCount * 4
  const text = reader.str(reader.u32(reader.u32(ranges + 4 + pkg * 4) + e * 4))
  return text === '' ? undefined : text
}
