/**
 * The `py` project page path without the network (issue 16's bench): read an
 * upstream page (PEP 503 HTML or PEP 691 JSON), merge, gate and render it
 * (PEP 691 JSON and PEP 503 HTML, every URL rewritten under the proxy)
 * against JSON.parse plus JSON.stringify of the same page's JSON form, the
 * floor any JSON-handling proxy pays.
 *
 * The page is the largest real one in ../shared/data/pypi-simple: Django's
 * PEP 503 page (469 files). Its JSON form is built from it once (the same
 * files, URLs and digests, as a PEP 691 upstream would serve them); no
 * complete real PEP 691 page of a popular project is in the data set (see
 * its README). The gate is an admit-all callback: rule cost is the
 * advisory-gate scenario's subject. Medians per page over ROUNDS rounds
 * after WARMUP, each round repeating the page MIN_FILES files' worth; "cold"
 * means no cache between requests (every request reads and renders), not a
 * cold JIT.
 */
import { readFileSync } from 'node:fs'
import type { Decision } from '../../engine/policy/decision.js'
import { gateProject } from '../../engine/pypi/project-gate.js'
import { mergeProjects } from '../../engine/pypi/project-merge.js'
import { readSimpleHtml } from '../../engine/pypi/simple-html-reader.js'
import { readSimpleJson } from '../../engine/pypi/simple-json-reader.js'
import type { SimpleProject } from '../../engine/pypi/simple-model.js'
import { renderSimpleHtml, renderSimpleJson } from '../../engine/pypi/simple-render.js'
import type { Row, Scenario, ScenarioResult } from '../lib/scenario.js'
import { sharedDataDir } from '../peers/shared-data.js'

const PAGE = `${sharedDataDir()}/pypi-simple/pep503-html/dependabot-core/pypi_simple_response_django.html`
const PAGE_URL = 'http://upstream.test/simple/django/'
const BASE = 'http://proxy.test:4873'
const ROUNDS = 9
const WARMUP = 3
const MIN_FILES = 50_000

const ADMIT: Decision = Object.freeze({ verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 0, reason: 'quarantine', evidence: [], skipped: [], advisory: [] })

function nowMs(): number { return Number(process.hrtime.bigint()) / 1e6 }

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** The page as a PEP 691 upstream would serve it: upstream URLs, not the proxy's. */
function asUpstreamJson(project: SimpleProject): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({
    meta: { 'api-version': '1.0' },
    name: 'django',
    files: project.files.map((f) => ({
      filename: f.filename,
      url: f.url,
      hashes: f.hashes,
      ...(f.requiresPython === undefined ? {} : { 'requires-python': f.requiresPython }),
      ...(f.yanked === undefined ? {} : { yanked: f.yanked }),
    })),
  }))
}

function time(reps: number, work: () => unknown): number {
  const t0 = nowMs()
  for (let r = 0; r < reps; r++) work()
  return (nowMs() - t0) / reps
}

const scenario: Scenario = {
  name: 'py-project-page',
  async run(): Promise<ScenarioResult> {
    const html = new Uint8Array(readFileSync(PAGE))
    const model = readSimpleHtml(html, 'django', PAGE_URL).project
    const json = asUpstreamJson(model)
    const files = model.files.length
    const reps = Math.max(1, Math.ceil(MIN_FILES / files))
    const decoder = new TextDecoder()
    const encoder = new TextEncoder()

    const page = (read: () => SimpleProject, render: (p: SimpleProject) => string): Uint8Array => {
      const merged = mergeProjects(undefined, read())
      if (merged === undefined) throw new Error('no page')
      return encoder.encode(render(gateProject(merged.project, () => ADMIT).project))
    }
    const cases: [string, () => unknown][] = [
      ['JSON upstream -> JSON', () => page(() => readSimpleJson(json, 'django', PAGE_URL).project, (p) => renderSimpleJson(p, { baseUrl: BASE }))],
      ['JSON upstream -> HTML', () => page(() => readSimpleJson(json, 'django', PAGE_URL).project, (p) => renderSimpleHtml(p, { baseUrl: BASE }))],
      ['HTML upstream -> JSON', () => page(() => readSimpleHtml(html, 'django', PAGE_URL).project, (p) => renderSimpleJson(p, { baseUrl: BASE }))],
      ['HTML upstream -> HTML', () => page(() => readSimpleHtml(html, 'django', PAGE_URL).project, (p) => renderSimpleHtml(p, { baseUrl: BASE }))],
    ]
    const baseline = (): Uint8Array => encoder.encode(JSON.stringify(JSON.parse(decoder.decode(json))))
    const samples = new Map<string, number[]>(cases.map(([name]) => [name, []]))
    const base: number[] = []
    for (let k = 0; k < ROUNDS + WARMUP; k++) {
      const b = time(reps, baseline)
      const round = cases.map(([name, work]) => [name, time(reps, work)] as const)
      if (k < WARMUP) continue
      base.push(b)
      for (const [name, ms] of round) samples.get(name)!.push(ms)
    }
    const baseMs = median(base)
    const rows: Row[] = cases.map(([name]) => ({
      metric: `django page (${files} files), ${name}, read+merge+gate+render per page`,
      project: { unit: 'ms', better: 'lower', value: median(samples.get(name)!) },
      baselines: { 'JSON.parse+stringify': { unit: 'ms', better: 'lower', value: baseMs } },
    }))
    return {
      title: 'py project page: read, merge, gate, render against JSON.parse+stringify',
      rows,
      notes: [
        `Page: ${PAGE} (${html.byteLength} bytes HTML; its JSON form ${json.byteLength} bytes). Medians of ${ROUNDS} rounds after ${WARMUP} warm-up rounds, each round ${reps} pages.`,
        'Every file URL is rewritten (base64url token of the upstream URL), which JSON.parse+stringify does not do.',
      ],
    }
  },
}

export default scenario
