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
import type { Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import { encodePackageName } from '../npm/names.js'
import { NO_STRUCTURE_LIMITS, scanPackument } from '../packument/scanner.js'
import { digestSet, type DigestSet } from './artifact-digest.js'
import { TargetConnection, targetBase, type ChunkCharge, type TargetAnswer, type TargetConnectionOptions } from './target-connection.js'

export interface MirrorTargetOptions extends TargetConnectionOptions {
  /** The registry base URL (a path is kept). No userinfo, query or fragment. */
  readonly url: string
}

export type TargetVersion =
  | { readonly kind: 'absent' }
  | { readonly kind: 'present'; readonly digests: DigestSet; readonly integrity: string | undefined; readonly shasum: string | undefined }

/** The status, and for a refusal the target's own reason. */
export type PublishAnswer = TargetAnswer

const ABBREVIATED = 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8'

export class MirrorTarget {
  readonly #base: URL
  readonly #connection: TargetConnection

  constructor(options: MirrorTargetOptions) {
    this.#base = targetBase(options.url, 'mirror target')
    this.#connection = new TargetConnection(options, this.#base.host, (token) => `Bearer ${token.reveal()}`)
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

  /**
   * What the target holds for `version`. Throws UPSTREAM_UNAVAILABLE (data.status
   * when the target answered) for a transient failure, UPSTREAM_REFUSED for
   * any other refusal, UPSTREAM_DECODE for a document that is not one.
   */
  async lookup(packageName: string, version: string, signal?: AbortSignal, onChunk?: ChunkCharge): Promise<TargetVersion> {
    const url = this.documentUrl(packageName)
    const where = { target: this.authority, package: packageName }
    const response = await this.#connection.page(url, ABBREVIATED, where, signal)
    if (response === undefined) return { kind: 'absent' }
    // Scanned, not parsed whole: a large document costs its bytes and an index (1.1 B per byte, SPEC.md 8.1), not a tree of objects.
    const chunks = await readBoundedChunks(response.body, this.#connection.maxDocumentBytes, where, onChunk)
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
    return this.#connection.send('PUT', this.documentUrl(packageName), { 'content-type': 'application/json', accept: 'application/json' }, body, { target: this.authority, package: packageName }, signal)
  }

  async close(): Promise<void> {
    await this.#connection.close()
  }
}

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
