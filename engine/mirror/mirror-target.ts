/**
 * The mirror target (`mounts.<m>.mirror: { target, token }`): an npm
 * registry that takes `npm publish` (Verdaccio, Artifactory, Nexus,
 * CodeArtifact). Two exchanges: `lookup` reads what the target holds for one
 * version (the idempotency check), `publish` PUTs a publish document whose
 * body streams (publish-body.ts).
 *
 * The target is operator-configured and trusted, like the private upstream:
 * no egress guard, its credential as `Authorization: Bearer`, and no
 * redirect followed (undici's request follows none). Bodies are always
 * consumed or destroyed; none is logged.
 */
import { Readable } from 'node:stream'
import { Agent, type Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import { encodePackageName } from '../npm/names.js'
import { NO_STRUCTURE_LIMITS, scanPackument } from '../packument/scanner.js'
import type { BearerToken } from '../secret.js'
import { digestSet, type DigestSet } from './artifact-digest.js'

export interface MirrorTargetOptions {
  /** The registry base URL (a path is kept). No userinfo, query or fragment. */
  readonly url: string
  readonly token?: BearerToken | undefined
  /** A minted credential sent instead of `token`, asked for on each request (engine/upstream/credentials/). */
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> } | undefined
  /** Largest document `lookup` reads (the metadata ingest ceiling). */
  readonly maxDocumentBytes: number
  /** Milliseconds to wait for response headers (a publish waits for the target to store the artifact). */
  readonly headersTimeoutMs?: number
  /** Milliseconds of silence allowed between body chunks. */
  readonly bodyTimeoutMs?: number
  /** Tests pass their own. */
  readonly dispatcher?: Dispatcher
}

export type TargetVersion =
  | { readonly kind: 'absent' }
  | { readonly kind: 'present'; readonly digests: DigestSet; readonly integrity: string | undefined; readonly shasum: string | undefined }

export interface PublishAnswer {
  readonly status: number
}

/** Statuses that say "try again": the target is overloaded or briefly failing. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

const ABBREVIATED = 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8'

export class MirrorTarget {
  readonly #base: URL
  readonly #token: BearerToken | undefined
  readonly #credential: MirrorTargetOptions['credential']
  readonly #maxDocumentBytes: number
  readonly #dispatcher: Dispatcher
  readonly #owned: boolean

  constructor(options: MirrorTargetOptions) {
    let url: URL
    try {
      url = new URL(options.url)
    } catch {
      throw new ServiceError('CONFIG_INVALID', { message: 'the mirror target URL does not parse' })
    }
    if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
      throw new ServiceError('CONFIG_INVALID', { message: 'the mirror target URL must carry no userinfo, query or fragment; use mirror.token' })
    }
    if (!Number.isSafeInteger(options.maxDocumentBytes) || options.maxDocumentBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxDocumentBytes must be a positive integer' })
    }
    this.#base = new URL(url.href.endsWith('/') ? url.href : `${url.href}/`)
    this.#token = options.token
    this.#credential = options.credential
    this.#maxDocumentBytes = options.maxDocumentBytes
    this.#owned = options.dispatcher === undefined
    this.#dispatcher = options.dispatcher ?? new Agent({
      headersTimeout: options.headersTimeoutMs ?? 300_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
      connections: 8,
    })
  }

  /** `{target}/{package}`, the document and publish location. */
  documentUrl(packageName: string): URL {
    return new URL(`${this.#base.href}${encodePackageName(packageName)}`)
  }

  /** `{target}/{package}/-/{file}`: where a published artifact is read (the private leg's path). */
  artifactUrl(packageName: string, filename: string): URL {
    return new URL(`${this.#base.href}${encodePackageName(packageName)}/-/${encodeURIComponent(filename)}`)
  }

  get authority(): string {
    return this.#base.host
  }

  async #headers(extra: Record<string, string>, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    // A credential refusal (breaker open, mint failed) is a transient target failure: the job is retried.
    const token = this.#credential === undefined ? this.#token : await this.#credential.token(signal).catch((cause: unknown) => {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { target: this.authority, reason: 'credential' } })
    })
    return token === undefined ? extra : { ...extra, authorization: `Bearer ${token.reveal()}` }
  }

  /**
   * What the target holds for `version`. Throws UPSTREAM_UNAVAILABLE (data.status
   * when the target answered) for a transient failure, UPSTREAM_REFUSED for
   * any other refusal, UPSTREAM_DECODE for a document that is not one.
   */
  async lookup(packageName: string, version: string, signal?: AbortSignal, onChunk?: ChunkCharge): Promise<TargetVersion> {
    const url = this.documentUrl(packageName)
    const where = { target: this.authority, package: packageName }
    let response: Dispatcher.ResponseData
    try {
      response = await this.#dispatcher.request({
        origin: url.origin, path: url.pathname, method: 'GET',
        headers: await this.#headers({ accept: ABBREVIATED, 'accept-encoding': 'identity' }, signal),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'no answer' } })
    }
    const status = response.statusCode
    if (status === 404) {
      await response.body.dump()
      return { kind: 'absent' }
    }
    if (status !== 200) {
      await response.body.dump()
      throw new ServiceError(isTransientStatus(status) ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_REFUSED', { data: { ...where, status } })
    }
    // Scanned, not parsed whole: a large document costs its bytes and an index (1.1 B per byte, SPEC.md 8.1), not a tree of objects.
    const chunks = await readBoundedChunks(response.body, this.#maxDocumentBytes, where, onChunk)
    let dist: { integrity?: unknown, shasum?: unknown } | undefined
    try {
      const index = scanPackument(chunks, { limits: NO_STRUCTURE_LIMITS, recordMembers: false })
      const entry = index.versions.get(version)
      if (entry === undefined) return { kind: 'absent' }
      const manifest = JSON.parse(index.source.utf8(entry.valueStart, entry.valueEnd)) as { dist?: { integrity?: unknown, shasum?: unknown } } | null
      dist = (typeof manifest === 'object' && manifest !== null && typeof manifest.dist === 'object' && manifest.dist !== null) ? manifest.dist : {}
    } catch (cause) {
      throw new ServiceError('UPSTREAM_DECODE', { cause, data: { ...where, reason: 'the target document is not JSON' } })
    }
    const integrity = typeof dist.integrity === 'string' ? dist.integrity : undefined
    const shasum = typeof dist.shasum === 'string' ? dist.shasum : undefined
    return { kind: 'present', digests: digestSet(integrity, shasum), integrity, shasum }
  }

  /**
   * PUTs a publish document. `body` is pulled as the connection drains, so a
   * slow target slows the upstream read (backpressure end to end). A body
   * that throws aborts the request, and its error is what this throws.
   * Any HTTP status comes back; a request that got no answer throws
   * UPSTREAM_UNAVAILABLE.
   */
  async publish(packageName: string, body: AsyncIterable<string | Uint8Array>, signal?: AbortSignal): Promise<PublishAnswer> {
    const url = this.documentUrl(packageName)
    let bodyError: unknown
    let bodyFailed = false
    async function* guarded(): AsyncGenerator<Uint8Array> {
      try {
        for await (const part of body) yield typeof part === 'string' ? Buffer.from(part, 'utf8') : part
      } catch (error) {
        bodyFailed = true
        bodyError = error
        throw error
      }
    }
    let response: Dispatcher.ResponseData
    try {
      response = await this.#dispatcher.request({
        origin: url.origin, path: url.pathname, method: 'PUT',
        headers: await this.#headers({ 'content-type': 'application/json', accept: 'application/json' }, signal),
        // Readable.from pulls the generator only as the socket drains.
        body: Readable.from(guarded(), { objectMode: false }),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (bodyFailed) throw bodyError
      if (signal?.aborted === true) throw signal.reason
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { target: this.authority, package: packageName, reason: 'no answer' } })
    }
    await response.body.dump()
    // The target answered before the body ended (e.g. a 401 read from the headers): the body's own failure, if any, comes first.
    if (bodyFailed) throw bodyError
    return { status: response.statusCode }
  }

  async close(): Promise<void> {
    if (this.#owned) await this.#dispatcher.close()
  }
}

/** Charges one chunk of a document read before the next is read (the embedded worker's memory gate); undefined when it fits at once. */
export type ChunkCharge = (chunk: Uint8Array) => Promise<void> | undefined

async function readBoundedChunks(body: Dispatcher.ResponseData['body'], max: number, where: Record<string, unknown>, onChunk: ChunkCharge | undefined): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = []
  let bytes = 0
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength
      if (bytes > max) throw new ServiceError('RESPONSE_TOO_LARGE', { data: { ...where, limit: max } })
      const pending = onChunk?.(chunk)
      if (pending !== undefined) await pending
      chunks.push(chunk)
    }
  } catch (error) {
    body.destroy()
    throw error
  }
  return chunks
}
