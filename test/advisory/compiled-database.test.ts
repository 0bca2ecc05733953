import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import t, { type Test } from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import * as F from '../../engine/advisory/artifact/artifact-format.js'
import {
  loadAdvisoryArtifact, openSharedAdvisoryArtifact, readAdvisoryArtifactMetadata, shareAdvisoryArtifact,
} from '../../engine/advisory/artifact/compiled-database.js'
import type { AdvisoryMatch, Ecosystem } from '../../engine/advisory/artifact/database.js'
import { evaluateAffecting, evaluateRemediating } from '../../engine/advisory/artifact/osv-evaluate.js'
import { readArchiveRecords } from '../../engine/advisory/pilot/osv-archive.js'
import { packageKey, type OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import { DATA, NPM_ALL_ZIP, npmSamples, pysecSamples } from './fixtures.js'

const EPSS = new Map([
  ['CVE-2020-28500', 0.00536], ['CVE-2021-23337', 0.0218], ['CVE-2019-10744', 0.05006], ['CVE-2020-8203', 0.0223],
  ['CVE-2007-5712', 0.01], ['CVE-2023-32681', 0.06],
])

function build(ecosystem: Ecosystem, records: readonly OsvRecord[], epss: ReadonlyMap<string, number> | undefined = EPSS): Uint8Array {
  const b = new ArtifactBuilder(ecosystem)
  for (const r of records) b.add(r)
  return b.build({
    compiledAt: new Date('2026-01-01T00:00:00Z'), osvSource: '127.0.0.1:8080', osvSourceUrl: 'http://127.0.0.1:8080/npm/all.zip',
    epss, epssStatus: epss === undefined ? 'unavailable' : 'available', epssScoreDate: new Date('2025-12-31T00:00:00Z'),
  })
}

const npm = npmSamples()
const npmBytes = build('js', npm)

function invalid(fn: () => unknown): boolean {
  try { fn() } catch (err) { return isServiceError(err, 'ADVISORY_ARTIFACT_INVALID') }
  return false
}

/** Re-seals a modified artifact with a correct checksum, so that the structural checks are what refuse it. */
function reseal(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice()
  out.set(createHash('sha256').update(out.subarray(F.CHECKSUM_FROM)).digest(), F.H_CHECKSUM)
  return out
}

t.test('header and metadata', async (t) => {
  const db = loadAdvisoryArtifact(npmBytes, new Date('2026-01-02T00:00:00Z'))
  t.equal(db.ecosystem, 'js')
  t.equal(db.metadata.osvSource, '127.0.0.1:8080')
  t.equal(db.metadata.compiledAt.toISOString(), '2026-01-01T00:00:00.000Z')
  t.equal(db.metadata.epssScoreDate?.toISOString(), '2025-12-31T00:00:00.000Z')
  t.equal(db.metadata.newestAdvisoryAt?.toISOString(), new Date(Math.max(...npm.map((r) => Date.parse(r.modified!)))).toISOString())
  t.equal(db.publishedAt?.toISOString(), '2026-01-02T00:00:00.000Z')
  t.same(readAdvisoryArtifactMetadata(npmBytes), db.metadata)
  const empty = loadAdvisoryArtifact(build('py', []))
  t.equal(empty.metadata.rowCount, 0)
  t.equal(empty.metadata.newestAdvisoryAt, undefined, 'never recorded')
  t.same(empty.affecting('django', '1.0'), [])
})

t.test('a corrupt or truncated artifact is refused cleanly', async (t) => {
  t.ok(invalid(() => loadAdvisoryArtifact(new Uint8Array(0))), 'empty')
  t.ok(invalid(() => loadAdvisoryArtifact(Buffer.from('{"not":"an artifact"}'))), 'not an artifact')
  for (const cut of [1, 8, 64, F.HEADER_SIZE, F.HEADER_SIZE + 1, npmBytes.length >> 1, npmBytes.length - 1]) {
    t.ok(invalid(() => loadAdvisoryArtifact(npmBytes.subarray(0, cut))), `truncated to ${cut} bytes`)
  }
  const padded = new Uint8Array(npmBytes.length + 4)
  padded.set(npmBytes)
  t.ok(invalid(() => loadAdvisoryArtifact(padded)), 'trailing bytes')
  const flipped = npmBytes.slice()
  flipped[flipped.length - 3] = (flipped[flipped.length - 3] as number) ^ 0x01
  t.ok(invalid(() => loadAdvisoryArtifact(flipped)), 'one flipped bit fails the checksum')
  const version = npmBytes.slice()
  new DataView(version.buffer).setUint32(F.H_FORMAT_VERSION, 99, true)
  t.ok(invalid(() => loadAdvisoryArtifact(version)), 'unknown format version')
  const offset = npmBytes.slice()
  new DataView(offset.buffer).setUint32(F.H_PACKAGE_INDEX, npmBytes.length - 8, true)
  t.ok(invalid(() => loadAdvisoryArtifact(reseal(offset))), 'index past the end, checksum valid')
  t.ok(invalid(() => shareAdvisoryArtifact(flipped)), 'nothing corrupt is shared')
  t.ok(invalid(() => openSharedAdvisoryArtifact(new SharedArrayBuffer(16))))
  t.ok(invalid(() => loadAdvisoryArtifact('nope' as unknown as Uint8Array)))
})

t.test('structural fuzz: resealed random corruption never crashes a load or a lookup', async (t) => {
  let seed = 11
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
  let refused = 0
  let loaded = 0
  for (let i = 0; i < 300; i++) {
    const bytes = npmBytes.slice()
    for (let k = 0; k < 4; k++) bytes[F.CHECKSUM_FROM + rnd(bytes.length - F.CHECKSUM_FROM)] = rnd(256)
    try {
      const db = loadAdvisoryArtifact(reseal(bytes))
      loaded++
      for (const [n, v] of [['lodash', '4.17.20'], ['react', '0.4.0'], ['event-stream', '3.3.6'], ['zzz', '1.0.0']] as const) {
        db.affecting(n, v)
        db.remediating(n, v)
      }
    } catch (err) {
      if (!isServiceError(err, 'ADVISORY_ARTIFACT_INVALID')) { t.fail(`unexpected ${String(err)}`); return }
      refused++
    }
  }
  t.equal(refused + loaded, 300, `${refused} refused, ${loaded} loaded and answered without a fault`)
})

t.test('a SharedArrayBuffer opened in a worker, without copying', async (t) => {
  const shared = shareAdvisoryArtifact(npmBytes)
  t.equal(shared.byteLength, npmBytes.byteLength)
  const local = openSharedAdvisoryArtifact(shared)
  const lookups: Array<[string, string]> = [['lodash', '4.17.20'], ['lodash', '4.17.21'], ['ua-parser-js', '0.7.29'], ['react', '35.0.0']]
  const worker = new Worker(new URL('./shared-worker.ts', import.meta.url))
  t.teardown(() => worker.terminate())
  const answer = await new Promise<{ affecting: AdvisoryMatch[][]; remediating: string[][]; rowCount: number; error?: string }>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.postMessage({ shared, lookups })
  })
  t.equal(answer.error, undefined)
  t.equal(answer.rowCount, local.metadata.rowCount)
  t.same(answer.affecting, lookups.map(([n, v]) => local.affecting(n, v)))
  t.same(answer.remediating, lookups.map(([n, v]) => local.remediating(n, v).map((m) => m.id)))
  t.same(answer.affecting[0]!.map((m) => m.id).sort(), ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm'])
  t.equal(new Uint8Array(shared)[112], 42, 'the worker wrote into the same memory')
})

/** Versions worth asking about for a package: every bound and listed version, neighbours, and real releases. */
function candidateVersions(ecosystem: Ecosystem, records: readonly OsvRecord[], name: string, extra: readonly string[]): string[] {
  const out = new Set<string>(extra)
  for (const r of records) for (const a of r.affected ?? []) {
    if (a.package?.name === undefined || packageKey(ecosystem, a.package.name) !== packageKey(ecosystem, name)) continue
    for (const v of a.versions ?? []) out.add(v)
    for (const range of a.ranges ?? []) for (const e of range.events ?? []) {
      for (const v of Object.values(e) as string[]) {
        if (v === '0' || v.includes('*')) continue
        out.add(v)
        const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v)
        if (m !== null) {
          out.add(`${m[1]}.${m[2]}.${Number(m[3]) + 1}`)
          if (Number(m[3]) > 0) out.add(`${m[1]}.${m[2]}.${Number(m[3]) - 1}`)
          out.add(ecosystem === 'js' ? `${v}-rc.1` : `${v}rc1`)
        }
      }
    }
  }
  return [...out]
}

function packageNames(ecosystem: Ecosystem, records: readonly OsvRecord[]): string[] {
  const out = new Set<string>()
  for (const r of records) for (const a of r.affected ?? []) if (typeof a.package?.name === 'string') out.add(a.package.name)
  return [...out].filter((n) => n.length > 0 && (ecosystem === 'py' || !n.includes(':')))
}

function equivalence(t: Test, ecosystem: Ecosystem, records: readonly OsvRecord[], extra: Record<string, readonly string[]>): number {
  const db = loadAdvisoryArtifact(build(ecosystem, records))
  const norm = (list: readonly AdvisoryMatch[]): string => JSON.stringify([...list].map((m) => ({ ...m })).sort((a, b) => (a.id < b.id ? -1 : 1)))
  let pairs = 0
  let affected = 0
  let remediated = 0
  for (const name of packageNames(ecosystem, records)) {
    for (const version of candidateVersions(ecosystem, records, name, extra[name] ?? ['0.0.1', '1.0.0', '99.0.0'])) {
      pairs++
      const want = evaluateAffecting(ecosystem, records, EPSS, name, version)
      const got = db.affecting(name, version)
      if (norm(got) !== norm(want)) { t.fail(`affecting ${name}@${version}: ${norm(got)} != ${norm(want)}`); return pairs }
      const wantR = evaluateRemediating(ecosystem, records, EPSS, name, version)
      const gotR = db.remediating(name, version)
      if (norm(gotR) !== norm(wantR)) { t.fail(`remediating ${name}@${version}: ${norm(gotR)} != ${norm(wantR)}`); return pairs }
      if (want.length > 0) affected++
      if (wantR.length > 0) remediated++
    }
  }
  t.ok(pairs > 300, `${pairs} pairs agree (${affected} affected, ${remediated} remediating)`)
  t.ok(affected > 50 && remediated > 20, 'the pairs exercise both answers')
  return pairs
}

t.test('equivalence with the reference evaluation: npm samples', async (t) => {
  const versionsOf = (file: string): string[] => Object.keys((JSON.parse(readFileSync(`${DATA}/npm-packuments/raw/${file}`, 'utf8')) as { versions: object }).versions)
  equivalence(t, 'js', npm, { lodash: versionsOf('lodash.json'), express: versionsOf('express.json'), 'left-pad': versionsOf('left-pad.json') })
})

t.test('equivalence with the reference evaluation: PYSEC samples', async (t) => {
  const simple = (p: string): string[] => [...readFileSync(`${DATA}/pypi-simple/pep503-html/dependabot-core/pypi_simple_response_${p}.html`, 'utf8')
    .matchAll(/>[A-Za-z0-9_.]+-(\d[^<]*?)(?:\.tar\.gz|\.zip|-py[^<]*\.whl)</g)].map((m) => m[1] as string)
  equivalence(t, 'py', pysecSamples(), { django: simple('django'), requests: simple('requests'), urllib3: simple('urllib3') })
})

t.test('answers do not depend on the order of the questions', async (t) => {
  // The reader keeps the last version's answers and the last package found: interleave packages, versions and the two questions.
  const db = loadAdvisoryArtifact(build('js', npm))
  const fresh = (): ReturnType<typeof loadAdvisoryArtifact> => loadAdvisoryArtifact(build('js', npm))
  const ids = (list: readonly AdvisoryMatch[]): string => list.map((m) => m.id).join(',')
  const names = packageNames('js', npm).slice(0, 12)
  const pairs: [string, string][] = []
  for (const name of names) for (const version of candidateVersions('js', npm, name, ['0.0.1', '1.0.0', 'not-a-version'])) pairs.push([name, version])
  const want = new Map<string, [string, string]>()
  const reference = fresh()
  for (const [name, version] of pairs) want.set(`${name}@${version}`, [ids(reference.affecting(name, version)), ids(reference.remediating(name, version))])
  let checked = 0
  for (let i = 0; i < pairs.length; i++) {
    // Remediating first, then a different package, then back to affecting of the same version.
    const [name, version] = pairs[i] as [string, string]
    const [otherName, otherVersion] = pairs[(i * 7 + 3) % pairs.length] as [string, string]
    const [wantA, wantR] = want.get(`${name}@${version}`) as [string, string]
    t.equal(ids(db.remediating(name, version)), wantR, `remediating ${name}@${version}`)
    t.equal(ids(db.affecting(otherName, otherVersion)), (want.get(`${otherName}@${otherVersion}`) as [string, string])[0])
    t.equal(ids(db.affecting(name, version)), wantA, `affecting ${name}@${version}`)
    t.equal(ids(db.affecting(name, version)), wantA, 'asked twice')
    checked++
  }
  t.ok(checked > 50, `${checked} interleaved questions`)
})

t.test('pre-release and build versions: a key read from its first three numbers agrees with the reference', async (t) => {
  // The reader settles most comparisons of `M.m.p-pre` from `M.m.p`'s key and writes the rest only on a tie.
  const records: OsvRecord[] = [
    { id: 'GHSA-pre1-0000-0000', modified: '2025-01-01T00:00:00Z', affected: [{ package: { ecosystem: 'npm', name: 'pre-lib' }, ranges: [{ type: 'SEMVER', events: [{ introduced: '1.0.0-beta.2' }, { fixed: '1.0.0-rc.1' }] }] }] },
    { id: 'GHSA-pre2-0000-0000', modified: '2025-01-01T00:00:00Z', affected: [{ package: { ecosystem: 'npm', name: 'pre-lib' }, ranges: [{ type: 'SEMVER', events: [{ introduced: '0.0.1' }, { fixed: '0.14.0' }] }, { type: 'SEMVER', events: [{ introduced: '2.0.0-0' }, { last_affected: '2.0.0-alpha.9' }] }], versions: ['3.0.0-x.1', '3.0.0+build.7'] }] },
    { id: 'GHSA-pre3-0000-0000', modified: '2025-01-01T00:00:00Z', affected: [{ package: { ecosystem: 'npm', name: 'pre-lib' }, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.1.0-rc.3' }] }] }] },
  ]
  const bytes = build('js', records)
  const db = loadAdvisoryArtifact(bytes)
  const versions = [
    '0.0.0-experimental-dc9aed36-20261027', '0.0.1-0', '0.0.1', '0.13.9-rc.1', '0.14.0-rc.1', '0.14.0', '1.0.0-alpha', '1.0.0-beta.2', '1.0.0-beta.10',
    '1.0.0-rc.0', '1.0.0-rc.1', '1.0.0-rc.1+build.5', '01.0.0-rc.1', '1.0.0', '1.0.0+meta', '2.0.0-0', '2.0.0-alpha.9', '2.0.0-alpha.10', '2.0.0-beta',
    '3.0.0-x.1', '3.0.0', '3.0.0+build.7', '4.1.0-rc.2', '4.1.0-rc.3', '4.1.0-rc.3+b', '4.1.0', '19.3.0-canary-dc9aed36-20261027',
    '1.0.0-beta..1', '1.0.0-', '1.0.0-be_ta', 'v1.0.0-rc.1', ' 1.0.0-rc.1', '1.0.0-rc.1 ', '1234567890123456.0.0-rc.1', '1.0.0-rc.1\n',
  ]
  const norm = (list: readonly AdvisoryMatch[]): string => list.map((m) => m.id).sort().join(',')
  for (const first of ['affecting', 'remediating'] as const) {
    for (const version of versions) {
      const want = [norm(evaluateAffecting('js', records, EPSS, 'pre-lib', version)), norm(evaluateRemediating('js', records, EPSS, 'pre-lib', version))]
      const got = first === 'affecting'
        ? [norm(db.affecting('pre-lib', version)), norm(db.remediating('pre-lib', version))]
        : [norm(db.remediating('pre-lib', version)), norm(db.affecting('pre-lib', version))].reverse()
      t.same(got, want, `${first} first: ${JSON.stringify(version)}`)
      // A reader that has seen no other version of the package walks the ranges instead of its package table.
      const alone = loadAdvisoryArtifact(bytes)
      t.same([norm(alone.affecting('pre-lib', version)), norm(alone.remediating('pre-lib', version))], want, `alone: ${JSON.stringify(version)}`)
    }
  }
})

t.test('package tables agree with the entry-by-entry walk and the reference on the largest real packages', async (t) => {
  // The packages of the whole npm export with the most stored keys (long version lists, many ranges), and two common ones.
  const names = new Set(['@solana/web3.js', 'sid-client-manager', 'electron', 'vite', 'next', 'lodash', 'react'])
  const records: OsvRecord[] = []
  for await (const record of readArchiveRecords(NPM_ALL_ZIP)) {
    if ((record.affected ?? []).some((a) => names.has(a.package?.name ?? ''))) records.push(record)
  }
  t.ok(records.length > 50, `${records.length} records`)
  const bytes = build('js', records, undefined)
  const NO_EPSS = new Map<string, number>()
  const ids = (list: readonly AdvisoryMatch[]): string => list.map((m) => m.id).sort().join(',')
  let asked = 0
  let affected = 0
  for (const name of names) {
    const table = loadAdvisoryArtifact(bytes)
    const versions = candidateVersions('js', records, name, ['0.0.0-experimental-dc9aed36-20261027', '0.0.1', '99.0.0', 'not-a-version'])
    for (const version of versions) {
      // `table` is asked version after version (its table answers); a fresh reader per version walks the entries.
      const got = [ids(table.affecting(name, version)), ids(table.remediating(name, version))]
      const walked = loadAdvisoryArtifact(bytes)
      const want = [ids(evaluateAffecting('js', records, NO_EPSS, name, version)), ids(evaluateRemediating('js', records, NO_EPSS, name, version))]
      if (got.join('|') !== want.join('|')) { t.fail(`${name}@${version}: table ${got.join('|')}, reference ${want.join('|')}`); return }
      const direct = [ids(walked.affecting(name, version)), ids(walked.remediating(name, version))]
      if (direct.join('|') !== want.join('|')) { t.fail(`${name}@${version}: walk ${direct.join('|')}, reference ${want.join('|')}`); return }
      asked++
      if (want[0] !== '') affected++
    }
  }
  t.ok(asked > 1000 && affected > 300, `${asked} versions agree (${affected} affected)`)
})
