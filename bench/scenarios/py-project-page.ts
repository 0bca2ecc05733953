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
import { planProjectPage, renderProjectPage } from '../../engine/pypi/project-page.js'
import { DEFAULT_READ_LIMITS } from '../../engine/pypi/simple-model.js'
import { assembledKey, MetadataCache } from '../../engine/cache/metadata-cache.js'
import type { PageFile } from '../../engine/pypi/project-page.js'
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

/**
 * A large project as a PEP 691 upstream serves it: RELEASES releases of
 * FILES_PER_RELEASE files each (wheels for several platforms and an sdist),
 * every file with size, upload-time, digest and core-metadata, as PyPI's
 * own pages for projects like numpy or boto3 have.
 */
const RELEASES = 600
const PLATFORMS = ['cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64', 'cp311-cp311-macosx_11_0_arm64', 'cp311-cp311-win_amd64', 'cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64', 'cp312-cp312-macosx_11_0_arm64', 'cp312-cp312-win_amd64', 'py3-none-any']
function largeJsonPage(): Uint8Array {
  const files: Record<string, unknown>[] = []
  for (let r = 0; r < RELEASES; r++) {
    const version = `${1 + Math.floor(r / 100)}.${Math.floor(r / 10) % 10}.${r % 10}`
    const when = new Date(Date.UTC(2018, 0, 1) + r * 3 * 86_400_000).toISOString().replace('Z', '000Z')
    const names = [...PLATFORMS.map((p) => `bigproject-${version}-${p}.whl`), `bigproject-${version}.tar.gz`]
    for (const filename of names) {
      const digest = Buffer.from(`${filename}`).toString('hex').padEnd(64, '0').slice(0, 64)
      files.push({
        filename,
        url: `https://files.upstream.test/packages/${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest.slice(4)}/${filename}`,
        hashes: { sha256: digest },
        'requires-python': '>=3.9',
        size: 1_000_000 + r,
        'upload-time': when,
        'core-metadata': { sha256: digest },
        yanked: false,
      })
    }
  }
  return new TextEncoder().encode(JSON.stringify({ meta: { 'api-version': '1.1' }, name: 'bigproject', versions: [], files }))
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

    // A large project through the pool task's own functions (cold: every request reads, merges, gates, renders)
    // and through the assembled store (warm: what a repeated request costs before the socket write).
    const large = largeJsonPage()
    const largeFiles = RELEASES * (PLATFORMS.length + 1)
    const upstream = { body: large, contentType: 'application/vnd.pypi.simple.v1+json', url: 'https://upstream.test/simple/bigproject/' }
    const cold = (): Uint8Array => {
      const plan = planProjectPage({ project: 'bigproject', privatePage: undefined, publicPage: upstream, privateHidesPublic: true, limits: DEFAULT_READ_LIMITS, decide: () => ADMIT })
      if (plan === undefined) throw new Error('no page')
      return renderProjectPage(plan, 'json', BASE).body
    }
    const largeBaseline = (): Uint8Array => encoder.encode(JSON.stringify(JSON.parse(decoder.decode(large))))
    const cache = new MetadataCache<PageFile>({ maxBytes: 512 * 1024 * 1024, maxEntries: 1000, clock: { now: () => Date.now() }, selectedVersionSize: () => 256 })
    const key = assembledKey('py', 'bigproject', 'json', 0)
    const rendered = cold()
    await cache.assembled.load(key, async () => ({ body: rendered, etag: '"x"' }))
    const warm = async (): Promise<void> => { await cache.assembled.load(key, async () => { throw new Error('a warm request must not render') }) }
    const coldMs: number[] = []
    const warmMs: number[] = []
    const largeBase: number[] = []
    for (let k = 0; k < ROUNDS + WARMUP; k++) {
      const b = time(2, largeBaseline)
      const c = time(2, cold)
      const t0 = nowMs()
      for (let i = 0; i < 1000; i++) await warm()
      const w = (nowMs() - t0) / 1000
      if (k < WARMUP) continue
      largeBase.push(b)
      coldMs.push(c)
      warmMs.push(w)
    }
    const largeBaseMs = median(largeBase)
    rows.push(
      {
        metric: `large project (${RELEASES} releases, ${largeFiles} files, ${(large.byteLength / 1e6).toFixed(1)} MB JSON), cold: read+merge+gate+render per page`,
        project: { unit: 'ms', better: 'lower', value: median(coldMs) },
        baselines: { 'JSON.parse+stringify': { unit: 'ms', better: 'lower', value: largeBaseMs } },
      },
      {
        metric: `large project (${largeFiles} files), warm: assembled-store hit per request (in process, no socket)`,
        project: { unit: 'µs', better: 'lower', value: median(warmMs) * 1000 },
        baselines: { 'JSON.parse+stringify': { unit: 'µs', better: 'lower', value: largeBaseMs * 1000 } },
      },
    )
    return {
      title: 'py project page: read, merge, gate, render against JSON.parse+stringify',
      rows,
      notes: [
        `Page: ${PAGE} (${html.byteLength} bytes HTML; its JSON form ${json.byteLength} bytes). Medians of ${ROUNDS} rounds after ${WARMUP} warm-up rounds, each round ${reps} pages.`,
        'Every file URL is rewritten (base64url token of the upstream URL), which JSON.parse+stringify does not do.',
        'The large project is synthetic (no complete PEP 691 page of a large project is in the data set): every file carries size, upload-time, sha256 and core-metadata, as PyPI serves them. Cold runs the pool task\'s own functions (planProjectPage, renderProjectPage) in this thread; warm is the assembled store\'s hit, before the socket write.',
      ],
    }
  },
}

export default scenario
