/**
 * The artifact's details section (format 2, issue 17 item 3): Pilot keeps
 * what `npm audit` shows (title, url, severity, CWE, CVSS, the affected
 * versions as a semver range) from real OSV records; a format 1 artifact
 * still opens and answers with what it has; a corrupt details section is
 * refused like any other corruption. The bulk answer is built from either.
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import * as F from '../../engine/advisory/artifact/artifact-format.js'
import { cvss3BaseScore, vulnerableRangeText } from '../../engine/advisory/artifact/advisory-details.js'
import { loadAdvisoryArtifact, openSharedAdvisoryArtifact, shareAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import { AUDIT_MAX_NAMES, AUDIT_MAX_VERSIONS, bulkAdvisories, numericAdvisoryId, parseBulkAdvisoryRequest } from '../../engine/npm/bulk-advisory.js'
import { npmSamples } from './fixtures.js'

const npm = npmSamples()

function build(records: readonly OsvRecord[], formatVersion?: 1 | 2): Uint8Array {
  const b = new ArtifactBuilder('js')
  for (const r of records) b.add(r)
  return b.build({
    compiledAt: new Date('2026-01-01T00:00:00Z'), osvSource: '127.0.0.1:8080', osvSourceUrl: 'http://127.0.0.1:8080/npm/all.zip',
    epss: undefined, epssStatus: 'unavailable', epssScoreDate: undefined,
  }, formatVersion === undefined ? {} : { formatVersion })
}

const v2 = build(npm)
const v1 = build(npm, 1)

function versionOf(bytes: Uint8Array): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(F.H_FORMAT_VERSION, true)
}

/** A copy with `edit` applied and the checksum made right again, so only the structure walk can refuse it. */
function tampered(bytes: Uint8Array, edit: (view: DataView) => void): Uint8Array {
  const copy = bytes.slice()
  edit(new DataView(copy.buffer))
  copy.set(createHash('sha256').update(copy.subarray(F.CHECKSUM_FROM)).digest(), F.H_CHECKSUM)
  return copy
}

t.test('format 2 keeps what npm audit shows, from the real records', async (t) => {
  t.equal(versionOf(v2), 2)
  const db = loadAdvisoryArtifact(v2)
  const reports = db.report?.('lodash', ['4.17.20', '4.17.21']) ?? []
  const injection = reports.find((r) => r.id === 'GHSA-35jh-r3h4-6jhm')
  t.same(injection, {
    id: 'GHSA-35jh-r3h4-6jhm',
    cves: ['CVE-2021-23337'],
    title: 'Command Injection in lodash',
    url: 'https://github.com/advisories/GHSA-35jh-r3h4-6jhm',
    severity: 'high',
    cwe: ['CWE-77', 'CWE-94'],
    cvss: { score: 7.2, vectorString: 'CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H' },
    vulnerableVersions: '<4.17.21',
    affectedVersions: ['4.17.20'],
  })
  t.same(reports.map((r) => r.id).sort(), db.affecting('lodash', '4.17.20').map((m) => m.id).sort(), 'the advisories affecting a version asked about, each once')
  t.same(db.report?.('lodash', ['4.17.21']), [], 'the fixed version has none')
  t.equal(db.report?.('lodash.template', ['4.5.0']).find((r) => r.id === 'GHSA-35jh-r3h4-6jhm')?.vulnerableVersions, '<=4.5.0', 'per package: last_affected is inclusive')
  t.same(db.report?.('no-such-package', ['1.0.0']), [])

  // The same answers from the shared copy the workers read.
  const shared = openSharedAdvisoryArtifact(shareAdvisoryArtifact(v2))
  t.same(shared.report?.('lodash', ['4.17.20']), db.report?.('lodash', ['4.17.20']))
})

t.test('a record without severity words gets the CVSS band; a MAL record is critical', async (t) => {
  const db = loadAdvisoryArtifact(v2)
  const mal = npm.find((r) => String(r.id).startsWith('MAL-') && Array.isArray(r.affected) && r.affected.some((a) => (a.versions?.length ?? 0) > 0))
  if (mal === undefined) throw new Error('no MAL sample with listed versions')
  const a = mal.affected?.find((x) => (x.versions?.length ?? 0) > 0)
  const name = a?.package?.name as string
  const version = (a?.versions?.[0] as string).trim()
  const report = db.report?.(name, [version]).find((r) => r.id === mal.id)
  t.equal(report?.severity, 'critical')
  t.ok(report?.vulnerableVersions?.split(' || ').includes(version), 'listed versions are in the range text')
  t.match(report?.url, /^https:\/\/osv\.dev\/vulnerability\/MAL-/)
})

t.test('format 1 still opens, and answers with what it has', async (t) => {
  t.equal(versionOf(v1), 1)
  t.ok(v1.byteLength < v2.byteLength, 'no details section')
  const db = loadAdvisoryArtifact(v1)
  const fresh = loadAdvisoryArtifact(v2)
  for (const version of ['4.17.4', '4.17.20', '4.17.21']) {
    t.same(db.affecting('lodash', version).map((m) => m.id), fresh.affecting('lodash', version).map((m) => m.id), `lookups agree on ${version}`)
  }
  const report = db.report?.('lodash', ['4.17.20']).find((r) => r.id === 'GHSA-35jh-r3h4-6jhm')
  t.same(report, { id: 'GHSA-35jh-r3h4-6jhm', cves: ['CVE-2021-23337'], title: undefined, url: undefined, severity: undefined, cwe: [], cvss: undefined, vulnerableVersions: undefined, affectedVersions: ['4.17.20'] })
  const answer = bulkAdvisories(db, new Map([['lodash', ['4.17.20']]]), () => false)
  t.match(answer['lodash']?.find((a) => a.title === 'GHSA-35jh-r3h4-6jhm'), {
    url: 'https://osv.dev/vulnerability/GHSA-35jh-r3h4-6jhm', severity: 'high', vulnerable_versions: '4.17.20', cwe: [], cvss: { score: 0, vectorString: null },
  }, 'npm\'s reading of absent fields; the range is the affected versions asked about')
})

t.test('a corrupt or unknown details section is refused', async (t) => {
  const invalid = (bytes: Uint8Array): boolean => {
    try { loadAdvisoryArtifact(bytes); return false } catch (e) { return isServiceError(e, 'ADVISORY_ARTIFACT_INVALID') }
  }
  t.ok(invalid(tampered(v2, (v) => v.setUint32(F.H_DETAILS, v.byteLength - 2, true))), 'section out of bounds')
  const section = new DataView(v2.buffer, v2.byteOffset).getUint32(F.H_DETAILS, true)
  t.ok(invalid(tampered(v2, (v) => v.setUint32(section, v.getUint32(section, true) + 1, true))), 'count disagrees with the advisory count')
  const firstDetail = new DataView(v2.buffer, v2.byteOffset).getUint32(section + 4, true)
  t.ok(invalid(tampered(v2, (v) => v.setUint32(firstDetail, 0xffffff, true))), 'a title longer than the artifact')
  t.ok(invalid(tampered(v2, (v) => v.setUint32(F.H_FORMAT_VERSION, 3, true))), 'a later format version')
  t.notOk(invalid(tampered(v2, (v) => v.setUint32(F.H_DETAILS, 0, true))), 'format 2 without the optional section opens')
})

t.test('CVSS v3 base scores (v3.1 specification examples) and range texts', async (t) => {
  t.equal(cvss3BaseScore('CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H'), 9.8)
  t.equal(cvss3BaseScore('CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N'), 6.1)
  t.equal(cvss3BaseScore('CVSS:3.0/AV:L/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N'), 0)
  t.equal(cvss3BaseScore('CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N'), undefined, 'v4 is not scored here')
  t.equal(cvss3BaseScore('CVSS:3.1/AV:X/AC:L'), undefined)
  const record: OsvRecord = {
    id: 'GHSA-test', affected: [
      { package: { name: 'p', ecosystem: 'npm' }, ranges: [{ type: 'SEMVER', events: [{ introduced: '1.0.0' }, { fixed: '1.2.3' }, { introduced: '2.0.0' }] }], versions: ['0.9.0'] },
      { package: { name: 'p', ecosystem: 'npm' }, ranges: [{ type: 'GIT', events: [{ introduced: 'abc' }] }] },
      { package: { name: 'q', ecosystem: 'npm' }, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }] }] },
    ],
  }
  t.equal(vulnerableRangeText('js', record, 'p'), '>=1.0.0 <1.2.3 || >=2.0.0 || 0.9.0')
  t.equal(vulnerableRangeText('js', record, 'q'), '*')
  t.equal(vulnerableRangeText('py', record, 'p'), '', 'PyPI versions are not rendered as semver')
})

t.test('the bulk answer: shape, private names, malformed requests', async (t) => {
  const db = loadAdvisoryArtifact(v2)
  const request = parseBulkAdvisoryRequest(Buffer.from(JSON.stringify({ lodash: ['4.17.20', '4.17.20'], 'lodash-es': ['4.17.20'], react: ['18.2.0'], '@acme/secret': ['1.0.0'] })))
  const answer = bulkAdvisories(db, request, (name) => name === 'lodash-es')
  t.same(Object.keys(answer), ['lodash'], 'only names with advisories; the private lodash-es answers nothing')
  const advisory = answer['lodash']?.find((a) => a.url.endsWith('GHSA-35jh-r3h4-6jhm'))
  t.same(advisory, {
    id: numericAdvisoryId('GHSA-35jh-r3h4-6jhm'), url: 'https://github.com/advisories/GHSA-35jh-r3h4-6jhm', title: 'Command Injection in lodash',
    severity: 'high', vulnerable_versions: '<4.17.21', cwe: ['CWE-77', 'CWE-94'], cvss: { score: 7.2, vectorString: 'CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H' },
  })
  t.ok(Number.isSafeInteger(advisory?.id), 'a number, as npm\'s registry answers')
  for (const bad of ['not json', '[]', 'null', '{"a": "1.0.0"}', '{"a": [1]}', '{"": ["1.0.0"]}', `{"a": ["${'9'.repeat(300)}"]}`]) {
    t.throws(() => parseBulkAdvisoryRequest(Buffer.from(bad)), { code: 'AUDIT_REQUEST_INVALID' }, bad.slice(0, 20))
  }
  const many = Object.fromEntries(Array.from({ length: AUDIT_MAX_NAMES + 1 }, (_, i) => [`p${i}`, ['1.0.0']]))
  t.throws(() => parseBulkAdvisoryRequest(Buffer.from(JSON.stringify(many))), { code: 'AUDIT_REQUEST_INVALID' }, 'over the name bound')
  t.throws(() => parseBulkAdvisoryRequest(Buffer.from(JSON.stringify({ p: Array.from({ length: AUDIT_MAX_VERSIONS + 1 }, (_, i) => `1.0.${i}`) }))), { code: 'AUDIT_REQUEST_INVALID' }, 'over the version bound')
})
