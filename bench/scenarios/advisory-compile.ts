/**
 * The advisory database (DESIGN.md "a compact binary artifact"; SPEC.md 2.9):
 * - compile time of the largest real input, the whole npm OSV export
 *   (25,363 records, 26.6 MB zip) with a full EPSS feed (360k real scores),
 *   both served over local HTTP as Pilot fetches them, against the floor of
 *   only unzipping and JSON.parse-ing every record in the same run;
 * - the artifact's size against the zip and the records' JSON;
 * - opening it (checksum and bounds walk) against JSON.parse of every record,
 *   which is what each worker would pay without the artifact;
 * - lookup cost per version (ns) of `affecting`, against the reference
 *   evaluation over parsed JSON (engine/advisory/artifact/osv-evaluate.ts) with the
 *   records already grouped by package;
 * - the lookups for every version of the react packument against the
 *   packument pipeline on that same document (react: real, with advisories) (engine/packument/pipeline.ts):
 *   the ratio column is the lookups' share of the pipeline's time.
 */
import { execFileSync } from 'node:child_process'
import { createReadStream, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { systemClock } from '../../engine/clock.js'
import { silentLogger } from '../../engine/log/logger.js'
import { compileEcosystem } from '../../engine/advisory/pilot/compile.js'
import { loadAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import { readArchiveRecords } from '../../engine/advisory/pilot/osv-archive.js'
import { evaluateAffecting } from '../../engine/advisory/artifact/osv-evaluate.js'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import { runPackumentPipeline, type PackumentRequest } from '../../engine/packument/pipeline.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { sharedDataDir } from '../peers/shared-data.js'

const DATA = sharedDataDir()
const NPM_ZIP = `${DATA}/osv/npm/all.zip`
const EMBA = `${DATA}/epss/emba-api-dump/EMBA-EPSS-data-346ef2e.tar.gz`
const CHUNK = 65536
const MiB = 1024 * 1024

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

function nowMs(): number { return Number(process.hrtime.bigint()) / 1e6 }

/** The EMBA dump of real EPSS scores re-serialised as the FIRST daily CSV, gzip-compressed. */
function epssFeed(): Buffer {
  const text = execFileSync('tar', ['-xzOf', EMBA, '--wildcards', 'EPSS_CVE_data/CVE_*_EPSS.csv'], { maxBuffer: 256 * MiB }).toString('utf8')
  const rows: string[] = []
  for (const line of text.split('\n')) {
    const [cve, epss, pct] = line.split(';')
    if (cve?.startsWith('CVE-') === true && epss !== undefined) rows.push(`${cve},${Number(epss)},${Number(pct)}`)
  }
  rows.sort()
  return gzipSync(`#model_version:v2025.03.14,score_date:2026-08-16T00:00:00Z\ncve,epss,percentile\n${rows.join('\n')}\n`)
}

function packumentVersions(file: string): { bytes: Uint8Array; versions: string[] } {
  const raw = readFileSync(`${DATA}/npm-packuments/raw/${file}`)
  const bytes = new Uint8Array(file.endsWith('.gz') ? gunzipSync(raw) : raw)
  const doc = JSON.parse(Buffer.from(bytes).toString('utf8')) as { versions: Record<string, unknown> }
  return { bytes, versions: Object.keys(doc.versions) }
}

function decideWith(lookup: (version: string) => void): (facts: VersionFacts) => Decision {
  return (facts) => {
    lookup(facts.version)
    return { verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 0, reason: 'quarantine', evidence: [], skipped: [], advisory: [] }
  }
}

const scenario: Scenario = {
  name: 'advisory-compile',
  async run(): Promise<ScenarioResult> {
    const feed = epssFeed()
    const zipBytes = statSync(NPM_ZIP).size
    const server = createServer((req, res) => {
      if (req.url === '/osv/npm/all.zip') {
        res.setHeader('content-length', zipBytes)
        createReadStream(NPM_ZIP).pipe(res)
      } else if (req.url === '/epss/feed.csv.gz') {
        res.end(feed)
      } else {
        res.statusCode = 404
        res.end()
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const tmp = await mkdtemp(join(tmpdir(), 'bench-advisory-'))
    try {
      // Compile, as Pilot does it.
      let started = nowMs()
      const compiled = await compileEcosystem({
        ecosystem: 'js', osvExportBaseUrl: `${base}/osv`, epssFeedUrl: `${base}/epss/feed.csv.gz`,
        tmpDir: tmp, clock: systemClock, logger: silentLogger,
      })
      const compileMs = nowMs() - started

      // Floor: only unzip and JSON.parse every record (no HTTP, no compile).
      started = nowMs()
      const records: OsvRecord[] = []
      for await (const r of readArchiveRecords(NPM_ZIP)) records.push(r)
      const readMs = nowMs() - started
      const jsonText = records.map((r) => JSON.stringify(r))
      const jsonBytes = jsonText.reduce((n, s) => n + Buffer.byteLength(s), 0)

      // Opening: verify and walk the artifact, against parsing the records again.
      const loadSamples: number[] = []
      const parseSamples: number[] = []
      for (let k = 0; k < 5; k++) {
        started = nowMs()
        loadAdvisoryArtifact(compiled.bytes)
        loadSamples.push(nowMs() - started)
        started = nowMs()
        for (const s of jsonText) JSON.parse(s)
        parseSamples.push(nowMs() - started)
      }
      const db = loadAdvisoryArtifact(compiled.bytes)

      // Lookup cost per version, against the reference over records grouped by package.
      const byPackage = new Map<string, OsvRecord[]>()
      for (const r of records) {
        for (const a of r.affected ?? []) {
          const n = a.package?.name
          if (a.package?.ecosystem !== 'npm' || typeof n !== 'string') continue
          const list = byPackage.get(n) ?? []
          if (!list.includes(r)) list.push(r)
          byPackage.set(n, list)
        }
      }
      const epss = new Map<string, number>()
      const rows: Row[] = [
        {
          metric: `compile npm export (${records.length} records, ${(zipBytes / MiB).toFixed(1)} MiB zip) + EPSS feed (${compiled.summary.epssRows} rows)`,
          project: { unit: 's', better: 'lower', value: Math.round(compileMs / 100) / 10 },
          baselines: { 'unzip + JSON.parse only': { unit: 's', better: 'lower', value: Math.round(readMs / 100) / 10 } },
        },
        {
          metric: `artifact size (${compiled.summary.rowCount} advisories, ${compiled.summary.packages} packages)`,
          project: { unit: 'MiB', better: 'lower', value: Math.round((compiled.bytes.length / MiB) * 100) / 100 },
          baselines: {
            'OSV export zip': { unit: 'MiB', better: 'lower', value: Math.round((zipBytes / MiB) * 100) / 100 },
            'records as JSON': { unit: 'MiB', better: 'lower', value: Math.round((jsonBytes / MiB) * 100) / 100 },
          },
        },
        {
          metric: 'open the artifact (checksum + bounds walk)',
          project: { unit: 'ms', better: 'lower', value: Math.round(median(loadSamples)) },
          baselines: { 'JSON.parse every record': { unit: 'ms', better: 'lower', value: Math.round(median(parseSamples)) } },
        },
      ]

      const packuments = {
        lodash: packumentVersions('lodash.json').versions,
        react: packumentVersions('react.json.gz').versions,
        typescript: packumentVersions('typescript.json.gz').versions,
      }
      for (const [name, versions] of Object.entries(packuments)) {
        const reference = byPackage.get(name) ?? []
        const rounds = 20
        const project: number[] = []
        const baseline: number[] = []
        for (let k = 0; k < rounds + 3; k++) {
          let t0 = nowMs()
          for (const v of versions) db.affecting(name, v)
          const a = nowMs() - t0
          t0 = nowMs()
          for (const v of versions) evaluateAffecting('js', reference, epss, name, v)
          const b = nowMs() - t0
          if (k >= 3) { project.push(a); baseline.push(b) } // three warm-up rounds
        }
        const ns = (ms: number): number => Math.round((ms * 1e6) / versions.length)
        rows.push({
          metric: `affecting() per version, ${name} (${versions.length} versions, ${reference.length} advisories)`,
          project: { unit: 'ns', better: 'lower', value: ns(median(project)) },
          baselines: { 'reference over parsed JSON': { unit: 'ns', better: 'lower', value: ns(median(baseline)) } },
        })
      }

      // Share of the packument pipeline: every react version (react has advisories) looked up, against the pipeline on that document.
      const ts = packumentVersions('react.json.gz')
      const chunks: Uint8Array[] = []
      for (let i = 0; i < ts.bytes.length; i += CHUNK) chunks.push(ts.bytes.slice(i, i + CHUNK))
      const request: PackumentRequest = { packageName: 'react', baseUrl: 'http://proxy.test:4873', abbreviated: false, decide: decideWith(() => {}) }
      const pipelineSamples: number[] = []
      const lookupSamples: number[] = []
      for (let k = 0; k < 12; k++) {
        let t0 = nowMs()
        runPackumentPipeline(request, undefined, chunks)
        const p = nowMs() - t0
        t0 = nowMs()
        for (const v of ts.versions) { db.affecting('react', v); db.remediating('react', v) }
        const l = nowMs() - t0
        if (k >= 3) { pipelineSamples.push(p); lookupSamples.push(l) }
      }
      rows.push({
        metric: `affecting()+remediating() for all ${ts.versions.length} react versions`,
        project: { unit: 'ms', better: 'lower', value: Math.round(median(lookupSamples) * 100) / 100 },
        baselines: { 'packument pipeline, same document (full form)': { unit: 'ms', better: 'lower', value: Math.round(median(pipelineSamples) * 10) / 10 } },
      })

      return {
        title: 'Advisory database: compile the npm OSV export, open the artifact, look versions up',
        rows,
        peakRssBytes: process.resourceUsage().maxRSS * 1024,
        notes: [
          'Compile: engine/advisory/pilot/compile.ts over local HTTP (download to a temp file, yauzl entry by entry, EPSS filtered to the advisories\' CVEs). One run each; the machine is shared, so treat seconds as indicative.',
          'Lookups: medians of 20 rounds over every version of the real packument after 3 warm-up rounds; the reference is osv-evaluate.ts over the package\'s records only.',
          'Last row: the ratio is the lookups\' share of the packument pipeline\'s time on the same document (pipeline gate without advisory rules).',
          `Peak RSS includes the bench's own copies of the ${records.length} parsed records for the baselines.`,
        ],
      }
    } finally {
      await rm(tmp, { recursive: true, force: true })
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  },
}

export default scenario
