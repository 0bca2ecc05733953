/**
 * The same merge, gate and render as pipeline.ts, written the obvious way:
 * JSON.parse both documents, edit the objects, JSON.stringify the answer.
 * It is the oracle of the tests (parse the engine's output and compare) and
 * the baseline of bench/scenarios/packument-pipeline.ts. It is not used to
 * serve: it holds a tree of JS objects, several times the source bytes.
 */
import { canonicalVersion } from '../npm/canonical-version.js'
import type { Ecosystem } from '../advisory/database.js'
import type { VersionFacts } from '../policy/decision.js'
import { ABBREVIATED_MANIFEST_FIELDS, INSTALL_SCRIPTS } from './abbreviated-fields.js'
import { newestSurvivingVersion } from './latest.js'
import type { Decide } from './merge.js'
import { TarballRewriter, tarballFilenameSegment } from './tarball-url.js'

type Json = Record<string, unknown>

export interface ReferenceRequest {
  readonly packageName: string
  readonly baseUrl: string
  readonly abbreviated: boolean
  readonly decide: Decide
  readonly ecosystem?: Ecosystem
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function tarballOf(manifest: Json): string | undefined {
  const dist = manifest['dist']
  if (!isObject(dist) || typeof dist['tarball'] !== 'string') return undefined
  return tarballFilenameSegment(dist['tarball'])
}

function rewrite(manifest: Json, rewriter: TarballRewriter): Json {
  const segment = tarballOf(manifest)
  if (segment === undefined) return manifest
  return { ...manifest, dist: { ...(manifest['dist'] as Json), tarball: rewriter.url(segment) } }
}

function abbreviate(manifest: Json): Json {
  const out: Json = {}
  for (const [key, value] of Object.entries(manifest)) {
    if (ABBREVIATED_MANIFEST_FIELDS.has(key)) out[key] = value
  }
  if (!('bundleDependencies' in manifest) && 'bundledDependencies' in manifest) out['bundleDependencies'] = manifest['bundledDependencies']
  const scripts = manifest['scripts']
  if (!('hasInstallScript' in manifest) && isObject(scripts) && [...INSTALL_SCRIPTS].some((s) => Boolean(scripts[s]))) {
    out['hasInstallScript'] = true
  }
  return out
}

/** Returns the synthesized document as an object, or undefined when nothing survived. */
export function referenceMerge(request: ReferenceRequest, privateText: string | undefined, publicText: string | undefined): Json | undefined {
  const priv = privateText === undefined ? undefined : (JSON.parse(privateText) as Json)
  const pub = publicText === undefined ? undefined : (JSON.parse(publicText) as Json)
  const rewriter = new TarballRewriter(request.baseUrl, request.packageName)
  const versions: Json = {}
  const from = new Map<string, Json>()
  let candidates = 0
  for (const doc of [priv, pub]) {
    if (doc === undefined) continue
    const docVersions = isObject(doc['versions']) ? doc['versions'] : {}
    const docTime = isObject(doc['time']) ? doc['time'] : {}
    for (const [version, manifest] of Object.entries(docVersions)) {
      if (doc === pub) {
        // Dropped before the gate (merge.ts DropReason): an alias or unreadable key, a manifest naming another package or version.
        if (canonicalVersion(version) !== version) { candidates++; continue }
      }
      if (from.has(version)) continue
      if (doc === pub) {
        candidates++
        const own = manifest as Json
        if ((typeof own['name'] === 'string' && own['name'] !== request.packageName) || (typeof own['version'] === 'string' && own['version'] !== version)) continue
        const text = docTime[version]
        const ms = typeof text === 'string' ? Date.parse(text) : NaN
        const facts: VersionFacts = {
          ecosystem: request.ecosystem ?? 'js',
          name: request.packageName,
          version,
          publishedAt: Number.isNaN(ms) ? undefined : new Date(ms),
        }
        if (request.decide(facts).verdict !== 'admit') continue
        if (tarballOf(manifest as Json) === undefined) continue
      }
      versions[version] = rewrite(manifest as Json, rewriter)
      from.set(version, doc)
    }
  }
  if (from.size === 0 && candidates > 0) return undefined

  const tags: Json = {}
  for (const doc of [priv, pub]) {
    const docTags = doc !== undefined && isObject(doc['dist-tags']) ? doc['dist-tags'] : {}
    for (const [tag, version] of Object.entries(docTags)) {
      if (!(tag in tags) && typeof version === 'string' && from.has(version)) tags[tag] = version
    }
  }
  const latest = newestSurvivingVersion(from.keys())
  if (latest !== undefined) tags['latest'] = latest

  const time: Json = {}
  let anyTime = false
  for (const key of ['modified', 'created']) {
    for (const doc of [priv, pub]) {
      if (doc === undefined || !isObject(doc['time'])) continue
      anyTime = true
      if (!(key in time) && key in doc['time']) time[key] = doc['time'][key]
    }
  }
  for (const [version, doc] of from) {
    const docTime = doc['time']
    if (isObject(docTime) && version in docTime) time[version] = docTime[version]
  }

  if (request.abbreviated) {
    const out: Json = { name: request.packageName, 'dist-tags': tags }
    const modified = priv?.['modified'] ?? pub?.['modified'] ?? time['modified']
    if (modified !== undefined) out['modified'] = modified
    out['versions'] = Object.fromEntries(Object.entries(versions).map(([v, m]) => [v, abbreviate(m as Json)]))
    if (Object.keys(time).length > 0) out['time'] = time
    return out
  }
  const out: Json = { ...(pub ?? {}), ...(priv ?? {}) }
  out['name'] = request.packageName
  out['dist-tags'] = tags
  out['versions'] = versions
  if (anyTime || Object.keys(time).length > 0) out['time'] = time
  else delete out['time']
  return out
}
