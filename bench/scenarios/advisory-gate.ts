/**
 * The cost of gating with the advisory rules (SPEC.md 1.7), per version, as a
 * share of the packument pipeline's time on the same document.
 *
 * The database is the whole npm OSV export (25,363 records) compiled into the
 * artifact, loaded the way the proxy's consumer loads it (into a
 * SharedArrayBuffer), with an EPSS score on every CVE so DenyIfEpss reads a
 * value. The gate is the evaluator a worker builds over the slot
 * (engine/policy/evaluator.ts) with the rule list of DESIGN.md's sketch:
 * DenyIfCve, DenyIfEpss, AllowIfRemediatesCve, AllowIfOlderThan. Each row
 * times the gate over every version of a real packument against the
 * pipeline (scan, merge, render) on that document with a gate that admits
 * without reading anything; the ratio column is the gate's share of the
 * pipeline (the target is under 5%).
 *
 * Both figures are steady-state: every timed sample (and every warm-up round)
 * repeats its work over at least MIN_VERSIONS versions, so a small packument
 * (lodash: 117 versions) is timed over tens of microseconds of work no more,
 * and its code paths are compiled as a long-running proxy's are, not
 * measured half-interpreted after a few hundred calls.
 */
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import { loadAdvisoryArtifact, shareAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import { readArchiveRecords } from '../../engine/advisory/pilot/osv-archive.js'
import type { Clock } from '../../engine/clock.js'
import { runPackumentPipeline, type PackumentRequest } from '../../engine/packument/pipeline.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { sharedDataDir } from '../peers/shared-data.js'

const DATA = sharedDataDir()
const NPM_ZIP = `${DATA}/osv/npm/all.zip`
const CHUNK = 65536
const ROUNDS = 7
const WARMUP = 3
/** Versions each timed sample and each warm-up round covers, at least (the packument is run as many times as that takes). */
const MIN_VERSIONS = 10_000

function nowMs(): number { return Number(process.hrtime.bigint()) / 1e6 }

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

interface Packument { readonly chunks: Uint8Array[]; readonly facts: VersionFacts[] }

function packument(file: string, name: string): Packument {
  const raw = readFileSync(`${DATA}/npm-packuments/raw/${file}`)
  const bytes = new Uint8Array(file.endsWith('.gz') ? gunzipSync(raw) : raw)
  const doc = JSON.parse(Buffer.from(bytes).toString('utf8')) as { versions: Record<string, unknown>; time?: Record<string, string> }
  const facts = Object.keys(doc.versions).map((version): VersionFacts => {
    const at = doc.time?.[version]
    return { ecosystem: 'js', name, version, publishedAt: at === undefined ? undefined : new Date(at) }
  })
  const chunks: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.slice(i, i + CHUNK))
  return { chunks, facts }
}

const ADMIT: Decision = Object.freeze({ verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 0, reason: 'quarantine', evidence: [], skipped: [], advisory: [] })

const scenario: Scenario = {
  name: 'advisory-gate',
  async run(): Promise<ScenarioResult> {
    const builder = new ArtifactBuilder('js')
    for await (const record of readArchiveRecords(NPM_ZIP)) builder.add(record)
    const epss = new Map([...builder.cves()].map((cve, i) => [cve, (i % 100) / 100]))
    const compiledAt = new Date('2026-03-01T00:00:00Z')
    const bytes = builder.build({ compiledAt, osvSource: 'bench:0', osvSourceUrl: 'http://bench:0/npm/all.zip', epss, epssStatus: 'available', epssScoreDate: compiledAt })
    // An hour after the compile: the database is fresh for every sample.
    const fixedNow = compiledAt.getTime() + 3_600_000
    const clock: Clock = { now: () => fixedNow }
    const shared = shareAdvisoryArtifact(bytes)
    const database = loadAdvisoryArtifact(shared, compiledAt)
    const gate = createEvaluator([
      { rule: 'DenyIfCve' },
      { rule: 'DenyIfEpss', threshold: 0.5 },
      { rule: 'AllowIfRemediatesCve' },
      { rule: 'AllowIfOlderThan', seconds: 7 * 86400 },
    ], { ecosystem: 'js', database: () => database, clock, maxAgeSeconds: 6 * 86400 })

    const rows: Row[] = []
    const notes: string[] = []
    for (const [file, name] of [['react.json.gz', 'react'], ['lodash.json', 'lodash'], ['typescript.json.gz', 'typescript']] as const) {
      const doc = packument(file, name)
      const request: PackumentRequest = { packageName: name, baseUrl: 'http://proxy.test:4873', abbreviated: false, decide: () => ADMIT }
      const gated: PackumentRequest = { ...request, decide: (facts) => gate.evaluate(facts, 'admission') }
      const pipeline: number[] = []
      const gating: number[] = []
      const gatedPipeline: number[] = []
      let denied = 0
      const n = doc.facts.length
      const reps = Math.max(1, Math.ceil(MIN_VERSIONS / n))
      for (let k = 0; k < ROUNDS + WARMUP; k++) {
        let t0 = nowMs()
        for (let r = 0; r < reps; r++) runPackumentPipeline(request, undefined, doc.chunks)
        const p = (nowMs() - t0) / reps
        t0 = nowMs()
        for (let r = 0; r < reps; r++) {
          denied = 0
          for (const facts of doc.facts) if (gate.evaluate(facts, 'admission').verdict !== 'admit') denied++
        }
        const g = (nowMs() - t0) / reps
        t0 = nowMs()
        for (let r = 0; r < reps; r++) runPackumentPipeline(gated, undefined, doc.chunks)
        const gp = (nowMs() - t0) / reps
        if (k >= WARMUP) { pipeline.push(p); gating.push(g); gatedPipeline.push(gp) }
      }
      const ns = (ms: number): number => Math.round((ms * 1e6) / n)
      rows.push({
        metric: `gate per version, ${name} (${n} versions, ${database.affecting(name, doc.facts[0]!.version).length} advisories on the first; ${denied} not admitted)`,
        project: { unit: 'ns', better: 'lower', value: ns(median(gating)) },
        baselines: {
          'packument pipeline per version (admit-all gate)': { unit: 'ns', better: 'lower', value: ns(median(pipeline)) },
        },
        // The full rule list costs at most 5% of the pipeline per version (advisory issue's goal).
        goal: { baseline: 'packument pipeline per version (admit-all gate)', goodness: 20, text: '<= 5% of the pipeline' },
      })
      notes.push(`${name}: pipeline with the advisory gate ${median(gatedPipeline).toFixed(1)} ms against ${median(pipeline).toFixed(1)} ms with the admit-all gate (denied versions are not rendered, so this can be lower).`)
    }
    return {
      title: 'Advisory gate: rule evaluation per version against the packument pipeline',
      rows,
      notes: [
        `Database: the whole npm OSV export compiled (${bytes.byteLength} bytes), EPSS values synthetic (every CVE scored, spread 0..0.99). Medians of ${ROUNDS} rounds after ${WARMUP} warm-up rounds; each round runs a packument (pipeline, gate, gated pipeline) as often as it takes to cover ${MIN_VERSIONS} versions; ratio = the gate's share of the pipeline (target under 5%).`,
        ...notes,
      ],
    }
  },
}

export default scenario
