/**
 * One inventory the Dredger cleans (SPEC.md 1.6): an npm registry reached
 * with the npm registry protocol and a bearer token. Two are configured per
 * `js` mount:
 *
 * - `mirror_target`: `mounts.js.mirror.target`, where the mirror worker
 *   publishes admitted public versions;
 * - `private_cache`: `mounts.js.upstreams.private`, the private registry's
 *   copy of public versions (its pull-through repository), which the proxy
 *   trusts (SPEC.md 4.4a).
 *
 * Listing: a package's versions are the keys of `versions` in its document
 * (`GET /{pkg}?write=true`, which also carries `_rev`). The full walk lists
 * the packages with the npm search endpoint, `GET
 * /-/v1/search?text=&size=250&from=N`, page by page (Verdaccio 6 answers an
 * empty `text` with every local package; its `/-/verdaccio/data/packages`
 * belongs to the web UI and answers 404 when the UI is off).
 *
 * Removal is `npm unpublish pkg@ver` of the npm CLI (libnpmpublish), in the
 * opposite order: the tarball first (`DELETE /{pkg}/-/{file}/-rev/{rev}`),
 * then the document without that version (`PUT /{pkg}/-rev/{rev}`), or, for
 * the last version, the whole package (`DELETE /{pkg}/-rev/{rev}`). Why this
 * order: a crash between the two writes then leaves a document that still
 * names a version with no tarball, which fails closed (nothing can install
 * it, and the proxy's private leg answers 404 for it), and the next cycle
 * finds the version in the document and finishes the removal with no state
 * of its own. The npm CLI's order would leave a tarball that no document
 * names: still served to a lockfile that holds its URL, and invisible to
 * every later listing.
 *
 * The inventory is operator-configured and trusted: no egress guard (through
 * the forward proxy, the tunnel asks for its name), no redirect followed, bodies always consumed or destroyed and never logged.
 */
import semver from 'semver'
import { Agent, type Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import { encodePackageName } from '../npm/names.js'
import type { BearerToken } from '../secret.js'
import type { ForwardProxy } from '../upstream/forward-proxy.js'
import { trustedTargetConnector } from '../upstream/proxied-connector.js'

export const INVENTORIES = ['mirror_target', 'private_cache'] as const
export type InventoryName = (typeof INVENTORIES)[number]

/** The page size of the search listing (the npm registry's largest). */
export const SEARCH_PAGE_SIZE = 250

export interface NpmInventoryOptions {
  readonly name: InventoryName
  /** The registry base URL (a path is kept). */
  readonly url: string
  readonly token?: BearerToken | undefined
  /** A minted credential sent instead of `token`, asked for on each request (engine/upstream/credentials/). */
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> } | undefined
  /** Largest document read (the metadata ingest ceiling). */
  readonly maxDocumentBytes: number
  /** Tests pass their own. */
  readonly dispatcher?: Dispatcher
  /** The forward proxy the inventory is reached through (docs/security.md#forward-proxy); direct when unset. Not used with `dispatcher`. */
  readonly forwardProxy?: ForwardProxy | undefined
}

export type RemovalResult = 'removed' | 'absent'

interface WriteDocument {
  _rev?: unknown
  versions?: Record<string, { dist?: { tarball?: unknown } } | undefined>
  'dist-tags'?: Record<string, unknown>
  [key: string]: unknown
}

function isTransient(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

export class NpmInventory {
  readonly name: InventoryName
  readonly #base: URL
  readonly #token: BearerToken | undefined
  readonly #credential: NpmInventoryOptions['credential']
  readonly #maxDocumentBytes: number
  readonly #dispatcher: Dispatcher
  readonly #owned: boolean

  constructor(options: NpmInventoryOptions) {
    let url: URL
    try {
      url = new URL(options.url)
    } catch {
      throw new ServiceError('CONFIG_INVALID', { message: `the ${options.name} URL does not parse` })
    }
    if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
      throw new ServiceError('CONFIG_INVALID', { message: `the ${options.name} URL must carry no userinfo, query or fragment` })
    }
    if (!Number.isSafeInteger(options.maxDocumentBytes) || options.maxDocumentBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxDocumentBytes must be a positive integer' })
    }
    this.name = options.name
    this.#base = new URL(url.href.endsWith('/') ? url.href : `${url.href}/`)
    this.#token = options.token
    this.#credential = options.credential
    this.#maxDocumentBytes = options.maxDocumentBytes
    this.#owned = options.dispatcher === undefined
    this.#dispatcher = options.dispatcher ?? new Agent({ headersTimeout: 60_000, bodyTimeout: 60_000, connections: 4, ...trustedTargetConnector(options.forwardProxy) })
  }

  /** The base URL, for telling two inventories on one registry apart. */
  get baseUrl(): string {
    return this.#base.href
  }

  get authority(): string {
    return this.#base.host
  }

  /** The versions the inventory holds for `name`; empty when it has no such package. */
  async versions(name: string, signal?: AbortSignal): Promise<readonly string[]> {
    const doc = await this.#writeDocument(name, signal)
    return doc === undefined ? [] : Object.keys(doc.versions ?? {})
  }

  /**
   * Every package name, from the search listing. A registry that ignores
   * `from` answers the same page again: the walk stops at a page that brings
   * no new name, so it cannot loop.
   */
  async packages(signal?: AbortSignal): Promise<readonly string[]> {
    const names = new Set<string>()
    for (let from = 0; ; from += SEARCH_PAGE_SIZE) {
      const page = await this.#searchPage(from, signal)
      let fresh = 0
      for (const name of page) if (!names.has(name)) { names.add(name); fresh++ }
      if (page.length < SEARCH_PAGE_SIZE || fresh === 0) return [...names]
    }
  }

  /**
   * Removes one version (tarball, then document; see the module comment).
   * 'absent' when the document does not name it (already removed, or never
   * held). Throws UPSTREAM_UNAVAILABLE (transient) or UPSTREAM_REFUSED.
   */
  async remove(name: string, version: string, signal?: AbortSignal): Promise<RemovalResult> {
    const doc = await this.#writeDocument(name, signal)
    const manifest = doc?.versions?.[version]
    if (doc === undefined || manifest === undefined) return 'absent'
    const pkg = encodePackageName(name)
    if (Object.keys(doc.versions ?? {}).length === 1) {
      // The last version: one request removes the document and every tarball (`npm unpublish` does the same).
      await this.#write('DELETE', `${pkg}/-rev/${encodeURIComponent(revOf(doc, name))}`, undefined, name, signal, true)
      return 'removed'
    }
    const file = tarballFile(manifest.dist?.tarball, name, version)
    // 404: a crash after this step last time; the document is what is left to write.
    await this.#write('DELETE', `${pkg}/-/${encodeURIComponent(file)}/-rev/${encodeURIComponent(revOf(doc, name))}`, undefined, name, signal, true)
    // The tarball delete moved the revision: read it again, as `npm unpublish` does between its writes.
    for (let attempt = 0; ; attempt++) {
      const fresh = await this.#writeDocument(name, signal)
      if (fresh?.versions?.[version] === undefined) return 'removed'
      const status = await this.#write('PUT', `${pkg}/-rev/${encodeURIComponent(revOf(fresh, name))}`, withoutVersion(fresh, version), name, signal, false, attempt === 0 ? [409] : [])
      if (status !== 409) return 'removed'
      // 409: someone else wrote the document between our read and our write; read it once more.
    }
  }

  async close(): Promise<void> {
    if (this.#owned) await this.#dispatcher.close()
  }

  async #headers(extra: Record<string, string>, where: Record<string, unknown>, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    // A credential refusal (breaker open, mint failed) is transient: the removal fails this cycle and the next one tries again.
    const token = this.#credential === undefined ? this.#token : await this.#credential.token(signal).catch((cause: unknown) => {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'credential' } })
    })
    return token === undefined ? extra : { ...extra, authorization: `Bearer ${token.reveal()}` }
  }

  async #request(method: string, path: string, body: string | undefined, where: Record<string, unknown>, signal: AbortSignal | undefined): Promise<Dispatcher.ResponseData> {
    const url = new URL(`${this.#base.href}${path}`)
    const headers = await this.#headers(body === undefined
      ? { accept: 'application/json', 'accept-encoding': 'identity' }
      : { accept: 'application/json', 'accept-encoding': 'identity', 'content-type': 'application/json' }, where, signal)
    try {
      return await this.#dispatcher.request({
        origin: url.origin, path: `${url.pathname}${url.search}`, method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'no answer' } })
    }
  }

  #where(name?: string): Record<string, unknown> {
    return name === undefined ? { inventory: this.name, authority: this.authority } : { inventory: this.name, authority: this.authority, package: name }
  }

  async #writeDocument(name: string, signal: AbortSignal | undefined): Promise<WriteDocument | undefined> {
    const where = this.#where(name)
    const response = await this.#request('GET', `${encodePackageName(name)}?write=true`, undefined, where, signal)
    const status = response.statusCode
    if (status === 404) {
      await response.body.dump()
      return undefined
    }
    if (status !== 200) {
      await response.body.dump()
      throw new ServiceError(isTransient(status) ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_REFUSED', { data: { ...where, status } })
    }
    const doc = parseObject(await readBounded(response.body, this.#maxDocumentBytes, where), where) as WriteDocument
    if (doc.versions !== undefined && (typeof doc.versions !== 'object' || doc.versions === null || Array.isArray(doc.versions))) {
      throw new ServiceError('UPSTREAM_DECODE', { data: { ...where, reason: '`versions` is not an object' } })
    }
    return doc
  }

  async #searchPage(from: number, signal: AbortSignal | undefined): Promise<string[]> {
    const where = this.#where()
    const response = await this.#request('GET', `-/v1/search?text=&size=${SEARCH_PAGE_SIZE}&from=${from}`, undefined, where, signal)
    const status = response.statusCode
    if (status !== 200) {
      await response.body.dump()
      throw new ServiceError(isTransient(status) ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_REFUSED', { data: { ...where, status, reason: 'search listing' } })
    }
    const doc = parseObject(await readBounded(response.body, this.#maxDocumentBytes, where), where) as { objects?: unknown }
    if (!Array.isArray(doc.objects)) throw new ServiceError('UPSTREAM_DECODE', { data: { ...where, reason: 'the search answer has no `objects` list' } })
    const names: string[] = []
    for (const object of doc.objects as { package?: { name?: unknown } }[]) {
      const name = object?.package?.name
      if (typeof name === 'string' && name !== '') names.push(name)
    }
    return names
  }

  /** A write; 2xx passes, `tolerated` statuses come back, anything else throws. */
  async #write(method: 'PUT' | 'DELETE', path: string, body: string | undefined, name: string, signal: AbortSignal | undefined, missingIsDone: boolean, tolerated: readonly number[] = []): Promise<number> {
    const where = this.#where(name)
    const response = await this.#request(method, path, body, where, signal)
    const status = response.statusCode
    await response.body.dump()
    if (status >= 200 && status < 300) return status
    if (missingIsDone && status === 404) return status
    if (tolerated.includes(status)) return status
    throw new ServiceError(isTransient(status) ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_REFUSED', { data: { ...where, status, method } })
  }
}

function revOf(doc: WriteDocument, name: string): string {
  if (typeof doc._rev !== 'string' || doc._rev === '') {
    throw new ServiceError('UPSTREAM_DECODE', { data: { package: name, reason: 'the document has no `_rev`; the registry does not take npm unpublish' } })
  }
  return doc._rev
}

/**
 * The document `npm unpublish pkg@ver` PUTs: the version gone, every
 * dist-tag naming it gone, `latest` moved to the highest remaining version
 * when it named it, and no `_attachments` or `_revisions`.
 */
export function withoutVersion(doc: WriteDocument, version: string): string {
  const versions = { ...doc.versions }
  delete versions[version]
  const tags: Record<string, unknown> = { ...doc['dist-tags'] }
  const latest = tags['latest']
  for (const [tag, value] of Object.entries(tags)) if (value === version) delete tags[tag]
  if (latest === version) {
    const highest = highestVersion(Object.keys(versions))
    if (highest !== undefined) tags['latest'] = highest
  }
  const out: WriteDocument = { ...doc, versions, 'dist-tags': tags }
  delete out['_attachments']
  delete out['_revisions']
  return JSON.stringify(out)
}

function highestVersion(versions: readonly string[]): string | undefined {
  let best: string | undefined
  for (const version of versions) if (best === undefined || semverCompareLoose(version, best) > 0) best = version
  return best
}

function semverCompareLoose(a: string, b: string): number {
  const pa = semver.parse(a, { loose: true })
  const pb = semver.parse(b, { loose: true })
  if (pa === null || pb === null) return pa === null ? (pb === null ? a.localeCompare(b) : -1) : 1
  return semver.compare(pa, pb)
}

/**
 * The tarball's file name: the last path segment of `dist.tarball` (the
 * registry may have rewritten its host), else npm's conventional
 * `{unscoped name}-{version}.tgz`. The delete is addressed under this
 * inventory's own base, never at the host the document names.
 */
export function tarballFile(tarball: unknown, name: string, version: string): string {
  if (typeof tarball === 'string') {
    try {
      const segment = new URL(tarball).pathname.split('/').pop()
      if (segment !== undefined && segment !== '') return decodeURIComponent(segment)
    } catch { /* not a URL: fall back to the conventional name */ }
  }
  const unscoped = name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name
  return `${unscoped}-${version}.tgz`
}

function parseObject(text: string, where: Record<string, unknown>): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (cause) {
    throw new ServiceError('UPSTREAM_DECODE', { cause, data: { ...where, reason: 'not JSON' } })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ServiceError('UPSTREAM_DECODE', { data: { ...where, reason: 'not a JSON object' } })
  }
  return value as Record<string, unknown>
}

async function readBounded(body: Dispatcher.ResponseData['body'], max: number, where: Record<string, unknown>): Promise<string> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.byteLength
    if (bytes > max) {
      body.destroy()
      throw new ServiceError('RESPONSE_TOO_LARGE', { data: { ...where, limit: max } })
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}
