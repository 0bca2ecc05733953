/**
 * `GET /js/{package}` as a use case (SPEC.md 4.2, 8.1, 6.3 cache semantics):
 * fetch the private and public documents concurrently, charging every
 * decompressed chunk to the request's admission before it is kept; hand the
 * chunks to the renderer (a worker of the Piscina pool, injected as a
 * function so engine/ never names a worker file); decide the status; retain
 * the assembled answer and the selected versions the artifact route reads.
 *
 * Statuses when no version survives follow the most recoverable cause: a
 * transient upstream or advisory condition (503) beats a policy withholding
 * (403), which beats an upstream that answered for another package (502),
 * which beats a forwarded miss (404). An upstream failing while the other
 * answers is no error when versions survive.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { AssembledResponse, MetadataCache } from '../cache/metadata-cache.js'
import { assembledKey, selectedVersionKey } from '../cache/metadata-cache.js'
import type { Clock } from '../clock.js'
import { isServiceError, ServiceError } from '../errors.js'
import type { Admission } from '../memory/gate.js'
import { REQUEST_TIMEOUT_MS } from '../memory/gate.js'
import { fetchCharged, type ChargedFetch } from '../upstream/charged-fetch.js'
import type { UpstreamClient } from '../upstream/upstream-client.js'
import { inChildSpan } from '../telemetry/work-span.js'
import { codedEtag, COMPRESS_MIN_BYTES, type ContentCoding } from './content-coding.js'
import { withholdingError, type SelectedVersion } from './merge.js'
import type { PackumentOutcome } from './pipeline.js'
import type { StructureLimits } from './scanner.js'

/** SPEC.md 8.1: bytes charged per decompressed source byte of a listing. */
export const SOURCE_CHARGE_PER_BYTE: Readonly<Record<Ecosystem, number>> = Object.freeze({ js: 1.1, py: 3.2 })

export interface RenderJob {
  readonly packageName: string
  /** Each present document's ETag as received; strong tags on all of them let the renderer derive its own without hashing the body. */
  readonly privateEtag: string | undefined
  readonly publicEtag: string | undefined
  readonly abbreviated: boolean
  readonly now: number
  readonly privateChunks: readonly Uint8Array[] | undefined
  readonly publicChunks: readonly Uint8Array[] | undefined
  /** Charges the response's share before rendering; rejects when refused. */
  readonly charge: (bytes: number) => Promise<void>
  readonly signal: AbortSignal
}

/** Scan, merge, gate and render one packument: in production a Piscina task. */
export type Renderer = (job: RenderJob) => Promise<PackumentOutcome>

/** What the selected-version store keeps per artifact file name. */
export type SelectedArtifact = SelectedVersion

export interface PackumentServiceOptions {
  readonly ecosystem: Ecosystem
  readonly privateClient: UpstreamClient | undefined
  readonly publicClient: UpstreamClient | undefined
  readonly render: Renderer
  readonly cache: MetadataCache<SelectedArtifact>
  readonly clock: Clock
  /** Changes when the rules or the serving advisory database change; part of the assembled key. */
  readonly generation: () => number
  /** Decisions the main thread must see (outage tracking). */
  readonly observe: (outcome: PackumentOutcome, packageName: string) => void
  /**
   * Names the operator owns (inside `publish.scopes`): their public document
   * is never read, so a public package of a first-party name can never be
   * merged in (dependency confusion), not even while the private upstream is
   * down: the answer then fails with the private side's error.
   */
  readonly ownsName?: (packageName: string) => boolean
  /** Codes an assembled body (in production a pool task); without it every answer is identity. */
  readonly compress?: (body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, signal: AbortSignal) => Promise<Uint8Array>
}

export interface PackumentRequest {
  /** The decoded package name. */
  readonly packageName: string
  readonly abbreviated: boolean
  /** The content coding the client takes (negotiated by the route); default identity. */
  readonly coding?: ContentCoding
  readonly admission: Admission
  readonly signal: AbortSignal
}

/** Larger is more recoverable (SPEC.md 4.2). */
function recoverability(error: ServiceError): number {
  if (error.status === 503) return 5
  if (error.code === 'POLICY_WITHHELD') return 4
  if (error.status === 500) return 3
  if (error.code === 'UPSTREAM_WRONG_PACKAGE') return 2
  if (error.status === 404) return 1
  return 0
}

export function mostRecoverable(errors: readonly ServiceError[]): ServiceError | undefined {
  let best: ServiceError | undefined
  for (const error of errors) if (best === undefined || recoverability(error) > recoverability(best)) best = error
  return best
}

export class PackumentService {
  readonly #o: PackumentServiceOptions

  constructor(options: PackumentServiceOptions) {
    this.#o = options
  }

  /**
   * The assembled answer (from the store, or led or joined), in the request's
   * coding when it takes one and the body is worth coding. The coded form is
   * retained beside the identity one under its own key, so a warm hit costs
   * no compression; it is coded once from the identity form, which is what
   * the gate and the render produced.
   */
  async assemble(request: PackumentRequest): Promise<AssembledResponse> {
    const { ecosystem, cache, generation, compress } = this.#o
    const form = request.abbreviated ? 'abbreviated' : 'full'
    // One generation for both forms: a swap between the two lookups must not retain old bytes under the new key.
    const current = generation()
    const coding = request.coding ?? 'identity'
    const codedKey = coding === 'identity' || compress === undefined ? undefined : assembledKey(ecosystem, request.packageName, `${form}+${coding}`, current)
    if (codedKey !== undefined) {
      const hit = cache.assembled.peek(codedKey)
      if (hit !== undefined) return hit
    }
    const identity = await cache.assembled.load(assembledKey(ecosystem, request.packageName, form, current), (signal) => this.#load(request, signal), request.signal)
    if (codedKey === undefined || compress === undefined || coding === 'identity' || identity.body.byteLength < COMPRESS_MIN_BYTES) return identity
    return cache.assembled.loadDerived(codedKey, async (signal) => {
      // The copy handed to the pool thread is this request's to carry while it is coded.
      await request.admission.charge(identity.body.byteLength, { timeoutMs: REQUEST_TIMEOUT_MS, signal })
      const body = await inChildSpan('packument compress', { 'package.name': request.packageName, 'http.response.content_coding': coding }, () => compress(identity.body, coding, signal))
      return { body, etag: codedEtag(identity.etag, coding), coding }
    }, request.signal)
  }

  /** Reads the selected version for an artifact file name, fetching the public document when the store lacks it. */
  async selectVersion(packageName: string, filename: string, admission: Admission, signal: AbortSignal): Promise<SelectedArtifact | undefined> {
    const { ecosystem, cache } = this.#o
    const key = selectedVersionKey(ecosystem, packageName, filename)
    const hit = cache.version.peek(key)
    if (hit !== undefined) return hit
    // A lockfile install reads no metadata first: select through the public document, gated like any other read.
    await this.assemble({ packageName, abbreviated: true, admission, signal }).catch((error: unknown) => {
      if (!isServiceError(error) || error.code !== 'POLICY_WITHHELD') throw error
    })
    return cache.version.peek(key)
  }

  async #load(request: PackumentRequest, signal: AbortSignal): Promise<AssembledResponse> {
    const { privateClient, publicClient, ecosystem } = this.#o
    const perByte = SOURCE_CHARGE_PER_BYTE[ecosystem]
    const fetchFrom = (client: UpstreamClient | undefined): Promise<ChargedFetch> => {
      if (client !== undefined) this.#o.cache.full.read()
      return fetchCharged(client, (c, options) => c.fetchDocument(request.packageName, options), request.admission, perByte, signal)
    }
    const owned = this.#o.ownsName?.(request.packageName) === true
    const [priv, pub] = await Promise.all([fetchFrom(privateClient), fetchFrom(owned ? undefined : publicClient)])
    const failures = [priv, pub].flatMap((f) => (f.kind === 'failed' ? [f.error] : []))
    const privateChunks = priv.kind === 'document' ? priv.chunks : undefined
    const publicChunks = pub.kind === 'document' ? pub.chunks : undefined
    if (privateChunks === undefined && publicChunks === undefined) {
      throw mostRecoverable(failures) ?? new ServiceError('UPSTREAM_MISS')
    }

    let outcome: PackumentOutcome
    try {
      outcome = await inChildSpan('packument render', { 'package.name': request.packageName, 'packument.form': request.abbreviated ? 'abbreviated' : 'full' }, () => this.#o.render({
        packageName: request.packageName,
        privateEtag: priv.kind === 'document' ? priv.etag : undefined,
        publicEtag: pub.kind === 'document' ? pub.etag : undefined,
        abbreviated: request.abbreviated,
        now: this.#o.clock.now(),
        privateChunks,
        publicChunks,
        charge: (bytes) => request.admission.charge(bytes, { timeoutMs: REQUEST_TIMEOUT_MS, signal }),
        signal,
      }))
    } catch (error) {
      throw mostRecoverable([...failures, isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })])
    }
    this.#o.observe(outcome, request.packageName)
    this.#retainSelected(request.packageName, outcome)
    if (outcome.body === undefined || outcome.etag === undefined) {
      const withheld = withholdingError(outcome.withholding) ?? new ServiceError('POLICY_WITHHELD')
      throw mostRecoverable([...failures, withheld])
    }
    return { body: outcome.body, etag: outcome.etag }
  }

  #retainSelected(packageName: string, outcome: PackumentOutcome): void {
    const { ecosystem, cache } = this.#o
    for (const selected of outcome.selected) {
      cache.version.set(selectedVersionKey(ecosystem, packageName, selected.filename), selected)
    }
  }
}
