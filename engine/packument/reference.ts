/**
 * The same merge, gate and render as pipeline.ts, written the obvious way:
 * JSON.parse both documents, edit the objects, JSON.stringify the answer.
 * It is the oracle of the tests (parse the engine's output and compare) and
 * the baseline of bench/scenarios/packument-pipeline.ts. It is not used to
 * serve: it holds a tree of JS objects, several times the source bytes.
 */
import { canonicalVersion } from '../npm/canonical-version.js'
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { VersionFacts } from '../policy/decision.js'
import { ABBREVIATED_MANIFEST_FIELDS, INSTALL_SCRIPTS } from './abbreviated-fields.js'
import { newestSurvivingVersion } from './latest.js'
import { PICKER_FIELDS, type Decide } from './merge.js'
import { decodeFilename, TarballRewriter, tarballFilenameSegment } from './tarball-url.js'

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

/** An own member, as a client's JSON.parse made it (`__proto__` and `constructor` are data here, never inherited). */
function own(object: Json, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined
}

function has(object: Json, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key)
}

/** Sets an own member as JSON.parse does (CreateDataProperty): a key `__proto__` is a member, not the prototype. */
function put(object: Json, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true })
}

function tarballOf(manifest: Json): string | undefined {
  const dist = own(manifest, 'dist')
  if (!isObject(dist)) return undefined
  const tarball = own(dist, 'tarball')
  return typeof tarball === 'string' ? tarballFilenameSegment(tarball) : undefined
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
  if (!has(manifest, 'bundleDependencies') && has(manifest, 'bundledDependencies')) out['bundleDependencies'] = manifest['bundledDependencies']
  const scripts = own(manifest, 'scripts')
  if (!has(manifest, 'hasInstallScript') && isObject(scripts) && [...INSTALL_SCRIPTS].some((s) => Boolean(own(scripts, s)))) {
    out['hasInstallScript'] = true
  }
  return out
}

/** Why a public manifest cannot stand under its key (merge.ts DropReason), or undefined. */
function dropped(key: string, manifest: Json, packageName: string): boolean {
  if (canonicalVersion(key) !== key) return true
  return (has(manifest, 'name') && manifest['name'] !== packageName) || (has(manifest, 'version') && manifest['version'] !== key)
}

/** Returns the synthesized document as an object, or undefined when nothing survived. */
export function referenceMerge(request: ReferenceRequest, privateText: string | undefined, publicText: string | undefined): Json | undefined {
  const priv = privateText === undefined ? undefined : (JSON.parse(privateText) as Json)
  const pub = publicText === undefined ? undefined : (JSON.parse(publicText) as Json)
  const rewriter = new TarballRewriter(request.baseUrl, request.packageName)
  const versions: Json = {}
  const from = new Map<string, Json>()
  // The versions the private side names, as npm's picker reads its keys: a public key naming one of them is shadowed.
  const privateVersions = new Set<string>()
  let candidates = 0
  const gated: Array<{ readonly version: string; readonly filename: string; readonly admitted: boolean }> = []
  for (const doc of [priv, pub]) {
    if (doc === undefined) continue
    const docVersions = isObject(own(doc, 'versions')) ? own(doc, 'versions') as Json : {}
    const docTime = isObject(own(doc, 'time')) ? own(doc, 'time') as Json : {}
    for (const [version, manifest] of Object.entries(docVersions)) {
      if (doc === pub) {
        candidates++
        if (privateVersions.has(version)) continue
        // Dropped before the gate (merge.ts DropReason): an alias or unreadable key, a manifest naming another package or version.
        if (dropped(version, manifest as Json, request.packageName)) continue
        const text = own(docTime, version)
        const ms = typeof text === 'string' ? Date.parse(text) : NaN
        const facts: VersionFacts = {
          ecosystem: request.ecosystem ?? 'js',
          name: request.packageName,
          version,
          publishedAt: Number.isNaN(ms) ? undefined : new Date(ms),
        }
        const segment = tarballOf(manifest as Json)
        const admitted = request.decide(facts).verdict === 'admit'
        if (segment !== undefined) gated.push({ version, filename: decodeFilename(segment), admitted })
        if (!admitted || segment === undefined) continue
      } else {
        privateVersions.add(version)
        privateVersions.add(canonicalVersion(version) ?? version)
      }
      put(versions, version, rewrite(manifest as Json, rewriter))
      from.set(version, doc)
    }
  }
  // One file name, one verdict (merge.ts): an admitted version whose file name a refused one has is withheld.
  const refusedFiles = new Set(gated.filter((g) => !g.admitted).map((g) => g.filename))
  for (const g of gated) {
    if (g.admitted && refusedFiles.has(g.filename)) {
      delete versions[g.version]
      from.delete(g.version)
    }
  }
  if (from.size === 0 && candidates > 0) return undefined

  const tags: Json = {}
  for (const doc of [priv, pub]) {
    const docTags = doc !== undefined && isObject(own(doc, 'dist-tags')) ? own(doc, 'dist-tags') as Json : {}
    for (const [tag, version] of Object.entries(docTags)) {
      if (!has(tags, tag) && typeof version === 'string' && from.has(version)) put(tags, tag, version)
    }
  }
  const latest = newestSurvivingVersion(from.keys())
  if (latest !== undefined) tags['latest'] = latest

  const time: Json = {}
  let anyTime = false
  for (const key of ['modified', 'created']) {
    for (const doc of [priv, pub]) {
      if (doc === undefined || !has(doc, 'time')) continue
      // A `time` member of any value makes the full form write one (the synthesized object).
      anyTime = true
      const docTime = doc['time']
      if (!isObject(docTime)) continue
      if (!has(time, key) && has(docTime, key)) time[key] = docTime[key]
    }
  }
  for (const [version, doc] of from) {
    const docTime = own(doc, 'time')
    if (isObject(docTime) && has(docTime, version)) put(time, version, docTime[version])
  }

  if (request.abbreviated) {
    const out: Json = { name: request.packageName, 'dist-tags': tags }
    // The first document's own top-level `modified`, whatever its value; else `time.modified`.
    const withModified = [priv, pub].find((doc) => doc !== undefined && has(doc, 'modified'))
    if (withModified !== undefined) out['modified'] = withModified['modified']
    else if (has(time, 'modified')) out['modified'] = time['modified']
    out['versions'] = Object.fromEntries(Object.entries(versions).map(([v, m]) => [v, abbreviate(m as Json)]))
    if (Object.keys(time).length > 0) out['time'] = time
    return out
  }
  const out: Json = { ...withoutPickerFields(pub), ...(priv ?? {}) }
  out['name'] = request.packageName
  out['dist-tags'] = tags
  out['versions'] = versions
  if (anyTime || Object.keys(time).length > 0) out['time'] = time
  else delete out['time']
  return out
}

/** The public document's top-level members but those npm's picker reads versions from (merge.ts PICKER_FIELDS). */
function withoutPickerFields(doc: Json | undefined): Json {
  const out: Json = {}
  if (doc === undefined) return out
  for (const [key, value] of Object.entries(doc)) if (!PICKER_FIELDS.has(key)) put(out, key, value)
  return out
}
