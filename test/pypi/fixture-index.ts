/**
 * A Simple repository (PEP 503, PEP 691) on 127.0.0.1 that serves REAL
 * distributions, for pip to resolve, download, verify and install from,
 * directly or through the proxy's `/py` mount.
 *
 * The wheels and sdists are built at start by build-dists.py beside this
 * file, run by Debian's `/usr/bin/python3` (stdlib only), into a temp
 * folder. Two modes:
 *
 * - `json` (a PyPI-like index): PEP 691 `application/vnd.pypi.simple.v1+json`
 *   pages, api-version 1.1 (PEP 700: `versions`, and `size` and
 *   `upload-time` on every file), `yanked` false/true/reason (PEP 592),
 *   `requires-python`, `hashes.sha256`, and `core-metadata` (PEP 714) for
 *   each wheel with its METADATA at the file URL + `.metadata` (PEP 658).
 *   HTML only when the Accept header takes no JSON type.
 * - `html` (a pypiserver-like index): PEP 503 HTML whatever the Accept
 *   header says, always `text/html`: anchors with `#sha256=` fragments,
 *   `data-requires-python` (HTML-escaped), `data-yanked`; no upload time.
 *
 * File URLs are absolute, on this server: `{url}/files/{filename}`. Every
 * request is recorded (method, path, Accept, Authorization, User-Agent) so a
 * test can tell who fetched what. Real pages of ../shared/data/pypi-simple
 * can be served verbatim for a project (`pages`); their file URLs point at
 * public hosts and MUST NOT be fetched: such a page is for reading only.
 *
 * `startFixtureIndex` registers its own stop on the test's teardown, so the
 * server closes even when the test fails.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { sharedDataPath } from '../../bench/peers/shared-data.js'

/** Debian's interpreter; never a pyenv shim or other python3 on PATH (CI is a fresh Debian 12). */
export const SYSTEM_PYTHON = '/usr/bin/python3'

export const PEP691_JSON = 'application/vnd.pypi.simple.v1+json'

const BUILD_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'build-dists.py')

/** An upload time long past any quarantine. */
export const OLD_UPLOAD_TIME = '2020-01-01T00:00:00.000000Z'

/** An ISO 8601 UTC time `seconds` ago (0: now). */
export function uploadedAgo(seconds: number): string {
  return new Date(Date.now() - seconds * 1000).toISOString()
}

export type DistKind = 'wheel' | 'sdist'

/** What can differ per file; unset values fall back to the release's. */
export interface FixtureFileOptions {
  /** ISO 8601 UTC; default the release's, else OLD_UPLOAD_TIME. */
  readonly uploadTime?: string
  /** PEP 592: false (default), true, or the reason text. */
  readonly yanked?: boolean | string
  /** A PEP 440 specifier set, e.g. `>=3.8,<4`. */
  readonly requiresPython?: string
  /** Advertise a sha256 that does not match the bytes served (the bytes stay right): a verifying client refuses the file. */
  readonly wrongHash?: boolean
}

export interface FixtureFileSpec extends FixtureFileOptions {
  readonly kind: DistKind
}

export interface FixtureRelease extends FixtureFileOptions {
  readonly version: string
  /** `Requires-Dist` lines of the METADATA, e.g. `itsdangerous>=2.0`. */
  readonly requiresDist?: readonly string[]
  /** Default: one wheel. */
  readonly files?: readonly (DistKind | FixtureFileSpec)[]
}

export interface FixtureProject {
  /** As it appears in METADATA `Name:`; pages are keyed by its PEP 503 normal form. */
  readonly name: string
  readonly releases: readonly FixtureRelease[]
}

/**
 * Which keys announce the `.metadata` file of a wheel: `core` (PEP 714
 * `core-metadata` / `data-core-metadata`), `core-and-legacy` (also the
 * PEP 658 `dist-info-metadata` / `data-dist-info-metadata`, as PyPI serves
 * both), or `none`. Default: `core` in json mode, `none` in html mode (as
 * pypiserver). The `.metadata` file is served in every case.
 */
export type MetadataKeys = 'core' | 'core-and-legacy' | 'none'

export interface FixtureIndexOptions {
  readonly mode: 'json' | 'html'
  readonly projects?: readonly FixtureProject[]
  /** https with this CA's server certificate (127.0.0.1, localhost), or with a throwaway CA made here when true. Default http. */
  readonly https?: boolean | TestCa
  readonly metadataKeys?: MetadataKeys
  /**
   * Real pages served verbatim at `/simple/{project}/`: normal project name
   * to a path under ../shared/data/pypi-simple, e.g.
   * `{ django: 'pep503-html/dependabot-core/pypi_simple_response_django.html' }`.
   * The content type follows the extension (`.json`: PEP 691 JSON).
   */
  readonly pages?: Readonly<Record<string, string>>
}

export interface RecordedRequest {
  readonly method: string
  /** The request target as sent (path and query). */
  readonly path: string
  readonly accept: string | undefined
  readonly authorization: string | undefined
  readonly userAgent: string | undefined
}

export interface FixtureDist {
  readonly project: string
  readonly version: string
  readonly kind: DistKind
  readonly filename: string
  /** Absolute URL on this server. */
  readonly url: string
  readonly sha256: string
  /** What the page advertises (differs from sha256 only with `wrongHash`). */
  readonly advertisedSha256: string
  readonly size: number
  readonly uploadTime: string
  readonly yanked: boolean | string
  readonly requiresPython: string | undefined
  /** The core metadata (METADATA of a wheel, PKG-INFO of an sdist). */
  readonly metadata: string
  readonly metadataSha256: string
  readonly bytes: Buffer
}

export interface FixtureIndex {
  /** `http(s)://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string
  /** `{url}/simple/`: what pip's `--index-url` or an upstream `url` takes. */
  readonly simpleUrl: string
  readonly mode: 'json' | 'html'
  /** The CA to trust, when https. */
  readonly caFile: string | undefined
  readonly dists: readonly FixtureDist[]
  /** Every request, in arrival order. */
  readonly requests: readonly RecordedRequest[]
  /** The built file by name; throws when there is none. */
  dist(filename: string): FixtureDist
  /** File names whose bytes (not `.metadata`) were requested with GET, in order. */
  fileRequests(): string[]
  /** Requests for the project page of a (normal) name. */
  pageRequests(project: string): RecordedRequest[]
  stop(): Promise<void>
}

interface Teardown { teardown(fn: () => unknown): void }

/** PEP 503 normal form. */
export function normalizeProjectName(name: string): string {
  return name.replace(/[-_.]+/g, '-').toLowerCase()
}

interface BuildRequest {
  readonly project: string
  readonly version: string
  readonly kind: DistKind
  readonly requiresDist: readonly string[]
  readonly requiresPython: string | undefined
}

interface BuiltFile {
  readonly filename: string
  readonly path: string
  readonly sha256: string
  readonly size: number
  readonly metadata: string
  readonly metadataSha256: string
}

function buildDists(outDir: string, requests: readonly BuildRequest[]): Promise<BuiltFile[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(SYSTEM_PYTHON, [BUILD_SCRIPT, outDir], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) {
        reject(new Error(`${BUILD_SCRIPT} failed: ${error.message}\n${stderr}`))
        return
      }
      resolve(JSON.parse(stdout) as BuiltFile[])
    })
    child.stdin?.end(JSON.stringify(requests))
  })
}

function fileSpecs(release: FixtureRelease): FixtureFileSpec[] {
  return (release.files ?? ['wheel']).map((f) => (typeof f === 'string' ? { kind: f } : f))
}

const escapeHtml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')

/** The q of the best Accept range matching `type` (RFC 9110 12.5.1); 0 when none does. An absent header takes anything. */
export function acceptQuality(accept: string | undefined, type: string): number {
  if (accept === undefined || accept.trim() === '') return 1
  const [major] = type.split('/')
  let best = -1
  let bestSpecificity = -1
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1
    if (specificity < bestSpecificity || specificity < 0) continue
    const qParam = params.find((p) => p.startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    bestSpecificity = specificity
    best = Number.isFinite(q) ? q : 0
  }
  return Math.max(best, 0)
}

function takesJson(accept: string | undefined): boolean {
  return acceptQuality(accept, PEP691_JSON) > 0 || acceptQuality(accept, 'application/vnd.pypi.simple.latest+json') > 0
}

function jsonPage(name: string, versions: readonly string[], dists: readonly FixtureDist[], keys: MetadataKeys): Buffer {
  return Buffer.from(JSON.stringify({
    meta: { 'api-version': '1.1' },
    name,
    versions,
    files: dists.map((d) => {
      const entry: Record<string, unknown> = {
        filename: d.filename,
        url: d.url,
        hashes: { sha256: d.advertisedSha256 },
      }
      if (d.requiresPython !== undefined) entry['requires-python'] = d.requiresPython
      entry['yanked'] = d.yanked
      entry['size'] = d.size
      entry['upload-time'] = d.uploadTime
      if (d.kind === 'wheel' && keys !== 'none') {
        entry['core-metadata'] = { sha256: d.metadataSha256 }
        if (keys === 'core-and-legacy') entry['dist-info-metadata'] = { sha256: d.metadataSha256 }
      }
      return entry
    }),
  }, null, 1))
}

function htmlPage(name: string, dists: readonly FixtureDist[], keys: MetadataKeys): Buffer {
  const anchors = dists.map((d) => {
    let attributes = `href="${escapeHtml(`${d.url}#sha256=${d.advertisedSha256}`)}"`
    if (d.requiresPython !== undefined) attributes += ` data-requires-python="${escapeHtml(d.requiresPython)}"`
    if (d.yanked !== false) attributes += ` data-yanked="${d.yanked === true ? '' : escapeHtml(d.yanked)}"`
    if (d.kind === 'wheel' && keys !== 'none') {
      attributes += ` data-core-metadata="sha256=${d.metadataSha256}"`
      if (keys === 'core-and-legacy') attributes += ` data-dist-info-metadata="sha256=${d.metadataSha256}"`
    }
    return `    <a ${attributes}>${escapeHtml(d.filename)}</a><br>\n`
  })
  return Buffer.from(`<!DOCTYPE html>\n<html>\n  <head>\n    <title>Links for ${escapeHtml(name)}</title>\n  </head>\n  <body>\n    <h1>Links for ${escapeHtml(name)}</h1>\n${anchors.join('')}  </body>\n</html>\n`)
}

function rootPage(names: readonly string[], json: boolean): Buffer {
  if (json) return Buffer.from(JSON.stringify({ meta: { 'api-version': '1.1' }, projects: names.map((name) => ({ name })) }))
  const anchors = names.map((n) => `    <a href="/simple/${n}/">${escapeHtml(n)}</a><br>\n`).join('')
  return Buffer.from(`<!DOCTYPE html>\n<html>\n  <head>\n    <title>Simple index</title>\n  </head>\n  <body>\n${anchors}  </body>\n</html>\n`)
}

export async function startFixtureIndex(t: Teardown, options: FixtureIndexOptions): Promise<FixtureIndex> {
  const keys: MetadataKeys = options.metadataKeys ?? (options.mode === 'json' ? 'core' : 'none')
  const dir = await mkdtemp(join(tmpdir(), 'pypi-fixture-'))
  let ownCa: TestCa | undefined
  let server: Server | undefined
  let stopped: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (server !== undefined) {
        const s = server
        await new Promise<void>((resolve) => {
          s.close(() => resolve())
          // pip and undici keep connections alive; close() alone waits for them.
          s.closeAllConnections()
        })
      }
      await rm(dir, { recursive: true, force: true })
      await ownCa?.remove()
    })()
    return stopped
  }
  t.teardown(stop)

  const ca = options.https === true ? (ownCa = await makeTestCa()) : options.https === false || options.https === undefined ? undefined : options.https
  const requests: RecordedRequest[] = []
  const pages = new Map<string, { readonly type: string; readonly body: Buffer }>()
  const files = new Map<string, { readonly bytes: Buffer; readonly metadata: Buffer | undefined }>()
  const projects = new Map<string, { readonly name: string; readonly versions: string[]; readonly dists: FixtureDist[] }>()
  let url = ''

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      accept: req.headers.accept,
      authorization: req.headers.authorization,
      userAgent: req.headers['user-agent'],
    }
    requests.push(record)
    const send = (status: number, headers: Record<string, string>, body: Buffer): void => {
      res.writeHead(status, { ...headers, 'content-length': String(body.byteLength) })
      res.end(record.method === 'HEAD' ? undefined : body)
    }
    const notFound = (): void => send(404, { 'content-type': 'text/plain' }, Buffer.from('not found\n'))
    if (record.method !== 'GET' && record.method !== 'HEAD') {
      send(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }, Buffer.from('method not allowed\n'))
      return
    }
    const path = new URL(record.path, 'http://x').pathname
    const json = options.mode === 'json' && takesJson(record.accept)
    const pageHeaders = (type: string): Record<string, string> => (options.mode === 'json' ? { 'content-type': type, vary: 'Accept' } : { 'content-type': type })
    if (path === '/simple/') {
      send(200, pageHeaders(json ? PEP691_JSON : 'text/html'), rootPage([...projects.keys(), ...pages.keys()].sort(), json))
      return
    }
    const simple = /^\/simple\/([^/]+)(\/?)$/.exec(path)
    if (simple !== null) {
      const raw = decodeURIComponent(simple[1] ?? '')
      const normal = normalizeProjectName(raw)
      // As PyPI: one canonical URL per project, reached by a permanent redirect.
      if (raw !== normal || simple[2] !== '/') {
        res.writeHead(301, { location: `/simple/${normal}/`, 'content-length': '0' }).end()
        return
      }
      const verbatim = pages.get(normal)
      if (verbatim !== undefined) {
        send(200, { 'content-type': verbatim.type }, verbatim.body)
        return
      }
      const project = projects.get(normal)
      if (project === undefined) {
        notFound()
        return
      }
      if (json) send(200, pageHeaders(PEP691_JSON), jsonPage(project.name, project.versions, project.dists, keys))
      else send(200, pageHeaders('text/html'), htmlPage(project.name, project.dists, keys))
      return
    }
    const file = /^\/files\/([^/]+)$/.exec(path)
    if (file !== null) {
      const name = decodeURIComponent(file[1] ?? '')
      const hit = files.get(name)
      if (hit !== undefined) {
        send(200, { 'content-type': 'application/octet-stream' }, hit.bytes)
        return
      }
      const metadataOf = name.endsWith('.metadata') ? files.get(name.slice(0, -'.metadata'.length)) : undefined
      if (metadataOf?.metadata !== undefined) {
        send(200, { 'content-type': 'application/octet-stream' }, metadataOf.metadata)
        return
      }
    }
    notFound()
  }

  server = ca === undefined ? createHttpServer(handler) : createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, handler)
  const listening = server
  await new Promise<void>((resolve, reject) => {
    listening.once('error', reject)
    listening.listen(0, '127.0.0.1', () => resolve())
  })
  url = `${ca === undefined ? 'http' : 'https'}://127.0.0.1:${(listening.address() as AddressInfo).port}`

  for (const [project, file] of Object.entries(options.pages ?? {})) {
    const body = await readFile(sharedDataPath('pypi-simple', file))
    pages.set(normalizeProjectName(project), { type: file.endsWith('.json') ? PEP691_JSON : 'text/html', body })
  }

  const wanted: { project: FixtureProject; release: FixtureRelease; spec: FixtureFileSpec }[] = []
  for (const project of options.projects ?? []) {
    for (const release of project.releases) for (const spec of fileSpecs(release)) wanted.push({ project, release, spec })
  }
  const built = wanted.length === 0 ? [] : await buildDists(dir, wanted.map(({ project, release, spec }) => ({
    project: project.name,
    version: release.version,
    kind: spec.kind,
    requiresDist: release.requiresDist ?? [],
    requiresPython: spec.requiresPython ?? release.requiresPython,
  })))
  const dists: FixtureDist[] = []
  for (const [i, { project, release, spec }] of wanted.entries()) {
    const b = built[i]
    if (b === undefined) throw new Error(`${BUILD_SCRIPT} built ${built.length} of ${wanted.length} files`)
    const bytes = await readFile(b.path)
    const dist: FixtureDist = {
      project: project.name,
      version: release.version,
      kind: spec.kind,
      filename: b.filename,
      url: `${url}/files/${encodeURIComponent(b.filename)}`,
      sha256: b.sha256,
      advertisedSha256: (spec.wrongHash ?? release.wrongHash) === true ? createHash('sha256').update('not these bytes').update(b.sha256).digest('hex') : b.sha256,
      size: b.size,
      uploadTime: spec.uploadTime ?? release.uploadTime ?? OLD_UPLOAD_TIME,
      yanked: spec.yanked ?? release.yanked ?? false,
      requiresPython: spec.requiresPython ?? release.requiresPython,
      metadata: b.metadata,
      metadataSha256: b.metadataSha256,
      bytes,
    }
    if (files.has(dist.filename)) throw new Error(`two fixture files are named ${dist.filename}`)
    files.set(dist.filename, { bytes, metadata: spec.kind === 'wheel' ? Buffer.from(b.metadata) : undefined })
    dists.push(dist)
    const normal = normalizeProjectName(project.name)
    const entry = projects.get(normal) ?? { name: project.name, versions: [], dists: [] }
    if (!entry.versions.includes(release.version)) entry.versions.push(release.version)
    entry.dists.push(dist)
    projects.set(normal, entry)
  }

  return {
    url,
    simpleUrl: `${url}/simple/`,
    mode: options.mode,
    caFile: ca?.caFile,
    dists,
    requests,
    dist(filename) {
      const hit = dists.find((d) => d.filename === filename)
      if (hit === undefined) throw new Error(`no fixture file ${filename}; have ${dists.map((d) => d.filename).join(', ')}`)
      return hit
    },
    fileRequests: () => requests
      .filter((r) => r.method === 'GET' && r.path.startsWith('/files/') && !r.path.endsWith('.metadata'))
      .map((r) => decodeURIComponent(r.path.slice('/files/'.length))),
    pageRequests: (project) => requests.filter((r) => r.path === `/simple/${normalizeProjectName(project)}/`),
    stop,
  }
}
