/**
 * `GET /js/{package}` as a use case (SPEC.md 4.2, 8.1, 6.3 cache semantics):
 * fetch the private and public documents concurrently, charging every
 * decompressed chunk to the request's admission before it is kept; hand the
 * chunks to the renderer (a worker of the Piscina pool, injected as a
 * function so engine/ never names a worker file); decide the status; retain
 * the assembled answer and the selected versions the artifact route reads.
 *
 * Statuses when no version survives follow the most recoverable cause
 * (engine/listing/most-recoverable.ts). An upstream failing while the other
 * answers is no error when versions survive.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { AssembledResponse, Freshness, MetadataCache, ReadOptions, SourceValidators, Work } from '../cache/metadata-cache.js'
import { assembledKey, DEFAULT_ASSEMBLED_TTL_MS, selectedVersionKey } from '../cache/metadata-cache.js'
import { answerState, type AnswerState } from '../cache/answer-state.js'
import type { Clock } from '../clock.js'
import { isServiceError, ServiceError } from '../errors.js'
import { readThroughKeep, type DocumentKeep } from '../cache/document-keep.js'
import { fetchCharged, listingBytesCharge, type ChargedFetch } from '../listing/charged-fetch.js'
import { mostRecoverable } from '../listing/most-recoverable.js'
import { responseChargeBytes } from '../listing/output-basis.js'
import { chunkBytes, withPrepaidResponse } from '../listing/prepaid-charge.js'
import { withholdingError } from '../listing/withholding.js'
import type { Admission } from '../memory/gate.js'
import { REQUEST_TIMEOUT_MS } from '../memory/gate.js'
import { inChildSpan } from '../telemetry/work-span.js'
import type { DocumentValidators, UpstreamClient } from '../upstream/upstream-client.js'
import { codedEtag, COMPRESS_MIN_BYTES, type ContentCoding } from './content-coding.js'
import type { SelectedVersion } from './merge.js'
import type { PackumentOutcome } from './pipeline.js'
import { variantKey, type RenderVariant } from './render-variant.js'
import type { StructureLimits } from './scanner.js'

/** Logged when a revalidation behind a served answer fails (warn; debug when the gate shed it). */
export const PACKUMENT_REVALIDATION_FAILED = 'packument revalidation failed'

export interface RenderJob {
  readonly packageName: string
  /** Each present document's ETag as received; strong tags on all of them let the renderer derive its own without hashing the body. */
  readonly privateEtag: string | undefined
  readonly publicEtag: string | undefined
  readonly abbreviated: boolean
  /** The base URL of the answer's artifact URLs; undefined: the mount's configured one. */
  readonly baseUrl: string | undefined
  /** List the withheld public versions, marked (the npm audit view, render-variant.ts). */
  readonly listWithheld: boolean
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
  /** The rules-and-database generation retained answers are keyed by (mount-wiring.ts `answerGeneration`): a new one never serves an old decision. */
  readonly generation: () => number | string
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
  /**
   * Upstream documents kept with their validators (engine/cache/document-keep.ts):
   * a full read of a kept one is a conditional request, and a 304 renders
   * from the kept body. Absent: every full read reads the body.
   */
  readonly keep?: DocumentKeep | undefined
  readonly compress?: (body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, signal: AbortSignal) => Promise<Uint8Array>
  /**
   * Revalidation (issue 17 item 2). Without it an answer is reused for the
   * store's time to live and then read and rendered again in full. With it
   * an answer is served as is for `freshMs`; then, for at most `maxStaleMs`
   * more, served while one revalidation runs behind it (under its own
   * admission from `admit`); past that, a request waits for the
   * revalidation. A revalidation asks each upstream with its validators: when
   * every one answers 304 nothing is read or parsed and the answer is fresh
   * again. An answer is rendered again from full documents when a decision
   * behind it can change with time (`regateAt`), and keyed by `generation`
   * (advisory database and rules).
   */
  readonly revalidation?: {
    readonly freshMs?: number
    readonly maxStaleMs: number
    readonly admit: (signal: AbortSignal) => Promise<Admission>
    /** A revalidation behind a served answer failed (not counted elsewhere: no request saw it). */
    readonly onBehindFailure?: (error: unknown, packageName: string) => void
  }
}

/** `service.packument.revalidations` by result, and answers served stale while one ran. */
export class RevalidationCounters {
  /** Every upstream answered 304 (or still misses): the retained answer is fresh again, nothing parsed. */
  notModified = 0
  /** An upstream document changed: rendered again. */
  modified = 0
  /** An upstream failed to answer: rendered again from what the upstreams gave, as a first read would be. */
  failed = 0
  /** A quarantine ended or the advisory push expired under a retained answer: rendered again. */
  regated = 0
  /** Requests served a retained answer past its freshness while a revalidation ran behind them. */
  staleServed = 0

  snapshot(): Readonly<Record<'not_modified' | 'modified' | 'failed' | 'regated' | 'stale_served', number>> {
    return Object.freeze({ not_modified: this.notModified, modified: this.modified, failed: this.failed, regated: this.regated, stale_served: this.staleServed })
  }
}

/** A forced render for an artifact whose record is gone happens at most this often per package (a stream of unknown file names costs one). */
const RESELECT_AFTER_MS = 60_000

/** What a load reads and renders: the request's package, form and variant, charged to `admission`. */
interface Subject extends RenderVariant {
  readonly packageName: string
  readonly abbreviated: boolean
  readonly admission: Admission
}

export interface PackumentRequest extends RenderVariant {
  /** The decoded package name. */
  readonly packageName: string
  readonly abbreviated: boolean
  /** The content coding the client takes (negotiated by the route); default identity. */
  readonly coding?: ContentCoding
  readonly admission: Admission
  readonly signal: AbortSignal
}

/** What a side said, as a revalidation asks it again; undefined when it cannot be asked (it failed, or gave no validator). */
function validatorsOf(fetched: ChargedFetch): SourceValidators | undefined {
  if (fetched.kind === 'miss' || fetched.kind === 'absent') return fetched
  if (fetched.kind !== 'document' || (fetched.etag === undefined && fetched.lastModified === undefined)) return undefined
  return {
    kind: 'document',
    ...(fetched.etag === undefined ? {} : { etag: fetched.etag }),
    ...(fetched.lastModified === undefined ? {} : { lastModified: fetched.lastModified }),
  }
}

function freshnessOf(readAt: number, freshMs: number, regateAt: number | undefined, priv: ChargedFetch, pub: ChargedFetch): Freshness {
  const privateSource = validatorsOf(priv)
  const publicSource = validatorsOf(pub)
  return {
    renderedAt: readAt,
    freshUntil: readAt + freshMs,
    regateAt,
    sources: privateSource === undefined || publicSource === undefined ? undefined : { private: privateSource, public: publicSource },
  }
}

/** A shared read charges the bytes it brings in to the request's admission like an upstream read (SPEC.md 8.1). */
export function chargedRead(admission: Admission, signal: AbortSignal): ReadOptions {
  return { charge: (bytes) => (admission.tryCharge(bytes) ? undefined : admission.charge(bytes, { timeoutMs: REQUEST_TIMEOUT_MS, signal })) }
}

export class PackumentService {
  readonly #o: PackumentServiceOptions
  readonly #revalidations = new RevalidationCounters()
  /** Numbers this process's renders, so a selected-version record names the render that wrote it. */
  #renders = 0

  constructor(options: PackumentServiceOptions) {
    this.#o = options
  }

  /**
   * The assembled answer (retained, revalidated, or led or joined), in the
   * request's coding when it takes one and the body is worth coding. The
   * coded form is retained beside the identity one under a key naming the
   * identity ETag, so a warm hit costs no compression and a new render never
   * serves an old coded body; it is coded once from the identity form, which
   * is what the gate and the render produced.
   */
  async assemble(request: PackumentRequest): Promise<AssembledResponse> {
    const { ecosystem, cache, compress } = this.#o
    const form = request.abbreviated ? 'abbreviated' : 'full'
    const identity = await this.#identity(request, form)
    const coding = request.coding ?? 'identity'
    if (coding === 'identity' || compress === undefined || identity.body.byteLength < COMPRESS_MIN_BYTES) return identity
    // The identity ETag names its body exactly (which versions were kept included), so it stands for the generation.
    const codedKey = assembledKey(ecosystem, request.packageName, `${form}+${coding}`, identity.etag)
    return cache.assembled.loadDerived(codedKey, async (signal) => {
      // Coding is this request's to carry, charged as before the rendered body was shared (workers/compress-client.ts):
      // the body's size again, for zlib's buffers and the coded bytes (or a copy of a body that is not shared).
      await request.admission.charge(identity.body.byteLength, { timeoutMs: REQUEST_TIMEOUT_MS, signal })
      const body = await inChildSpan('packument compress', { 'package.name': request.packageName, 'http.response.content_coding': coding }, () => compress(identity.body, coding, signal))
      return { body, etag: codedEtag(identity.etag, coding), coding, ...(identity.notice === undefined ? {} : { notice: identity.notice }) }
    }, request.signal, chargedRead(request.admission, request.signal))
  }

  /** Revalidations by result (`service.packument.revalidations`). */
  get revalidations(): RevalidationCounters { return this.#revalidations }

  /**
   * True when the artifact route may skip the private leg for this file
   * (docs/cache.md "The private registry's misses"): the file's
   * selected-version record was written by the package's last render that
   * had a definite private answer, so its version was absent privately
   * then, and no publish relayed here or mirror success has happened since
   * (either forgets both; on the shared backend any invalidation, on any
   * replica or role, full-document-store.ts). Never for an owned name.
   */
  async publicSourced(packageName: string, filename: string): Promise<boolean> {
    const { cache, ecosystem } = this.#o
    if (!cache.full.remembersMisses || this.#o.ownsName?.(packageName) === true) return false
    if (cache.shared) return cache.full.sharedPublicSourced(ecosystem, packageName, filename)
    const answered = cache.full.answeredRender(ecosystem, packageName)
    if (answered === undefined) return false
    const record = await cache.version.retained(selectedVersionKey(ecosystem, packageName, filename))
    return record?.render === answered
  }

  /** Reads the selected version for an artifact file name, fetching the public document when the store lacks it. */
  async selectVersion(packageName: string, filename: string, admission: Admission, signal: AbortSignal): Promise<SelectedArtifact | undefined> {
    const { ecosystem, cache, clock } = this.#o
    const key = selectedVersionKey(ecosystem, packageName, filename)
    const read = chargedRead(admission, signal)
    const hit = await cache.version.peek(key, read)
    if (hit !== undefined) return hit
    // A lockfile install reads no metadata first: select through the public document, gated like any other read.
    const request = { packageName, abbreviated: true, admission, signal }
    const served = await this.assemble(request).catch((error: unknown) => {
      if (!isServiceError(error) || error.code !== 'POLICY_WITHHELD') throw error
      return undefined
    })
    const selected = await cache.version.peek(key, read)
    const renderedAt = served?.freshness?.renderedAt
    if (selected !== undefined || renderedAt === undefined || clock.now() - renderedAt < RESELECT_AFTER_MS) return selected
    // A revalidated answer outlives the records its render left (their own time to live, or eviction): render again.
    await cache.assembled.lead(assembledKey(ecosystem, packageName, 'abbreviated', this.#o.generation()), (s, work) => this.#load(request, s, work), signal)
      .catch((error: unknown) => {
        if (!isServiceError(error) || error.code !== 'POLICY_WITHHELD') throw error
      })
    return cache.version.peek(key, read)
  }

  /** The identity answer: served as retained, served stale with a revalidation behind it, revalidated, or rendered. */
  async #identity(request: PackumentRequest, form: string): Promise<AssembledResponse> {
    const { ecosystem, cache, generation } = this.#o
    // One generation for the whole request: a swap in between must not retain old bytes under the new key.
    const current = generation()
    const key = assembledKey(ecosystem, request.packageName, form, current, variantKey(request))
    const held = await cache.assembled.retained(key, chargedRead(request.admission, request.signal))
    const state = held === undefined ? 'reload' : this.#state(held)
    if (held !== undefined && (state === 'fresh' || state === 'stale')) {
      cache.assembled.countHit()
      if (state === 'stale') {
        this.#revalidations.staleServed++
        this.#revalidateBehind(key, held, request)
      }
      return held
    }
    const regate = held?.freshness?.regateAt !== undefined && this.#o.clock.now() >= held.freshness.regateAt
    const load = held !== undefined && state === 'revalidate'
      ? (signal: AbortSignal, work: Work) => this.#revalidate(request, held, signal, work)
      : (signal: AbortSignal, work: Work) => {
          // Counted by the leader only: joiners share its render.
          if (regate) this.#revalidations.regated++
          return this.#load(request, signal, work)
        }
    // Another replica's answer serves only when it is not itself due (docs/cache.md "Collapsing across replicas").
    return cache.assembled.lead(key, load, request.signal, (value) => this.#servable(value))
  }

  #servable(held: AssembledResponse): boolean {
    const state = this.#state(held)
    return state === 'fresh' || state === 'stale'
  }

  #state(held: AssembledResponse): AnswerState {
    return answerState(held, this.#o.clock.now(), this.#o.revalidation?.maxStaleMs)
  }

  /** One revalidation behind served requests, under an admission of its own; when the gate has no room it waits for the next request. */
  #revalidateBehind(key: string, held: AssembledResponse, request: PackumentRequest): void {
    const revalidation = this.#o.revalidation
    if (revalidation === undefined) return
    this.#o.cache.assembled.behind(key, async (signal, work) => {
      const admission = await revalidation.admit(signal)
      try {
        return await this.#revalidate({ packageName: request.packageName, abbreviated: request.abbreviated, baseUrl: request.baseUrl, view: request.view, admission }, held, signal, work)
      } finally {
        admission.release()
      }
    }, (error) => revalidation.onBehindFailure?.(error, request.packageName))
  }

  /**
   * Asks each upstream whether its document changed since `held` was
   * rendered. All unchanged: `held` with a new freshness, nothing read or
   * parsed. Otherwise a render from what they answered, a side that was
   * unchanged read again in full (its body was never kept).
   */
  async #revalidate(subject: Subject, held: AssembledResponse, signal: AbortSignal, work: Work): Promise<AssembledResponse> {
    const freshness = held.freshness
    const sources = freshness?.sources
    const now = this.#o.clock.now()
    if (freshness === undefined || sources === undefined || (freshness.regateAt !== undefined && now >= freshness.regateAt)) {
      return this.#load(subject, signal, work)
    }
    const owned = this.#o.ownsName?.(subject.packageName) === true
    const [priv, pub] = await Promise.all([
      this.#recheck(this.#o.privateClient, sources.private, subject, signal),
      this.#recheck(owned ? undefined : this.#o.publicClient, sources.public, subject, signal),
    ])
    if (priv.kind === 'not-modified' && pub.kind === 'not-modified') {
      this.#revalidations.notModified++
      return { ...held, freshness: { ...freshness, freshUntil: now + this.#freshMs } }
    }
    if (priv.kind === 'failed' || pub.kind === 'failed') this.#revalidations.failed++
    else this.#revalidations.modified++
    return this.#load(subject, signal, work, { private: priv, public: pub })
  }

  async #recheck(client: UpstreamClient | undefined, source: SourceValidators, subject: Subject, signal: AbortSignal): Promise<ChargedFetch> {
    if (client === undefined) return source.kind === 'absent' ? { kind: 'not-modified' } : { kind: 'absent' }
    const fetched = await this.#read(client, subject, signal, source.kind === 'document' ? source : undefined)
    // A package that was missing and still is: nothing changed there.
    return fetched.kind === 'miss' && source.kind === 'miss' ? { kind: 'not-modified' } : fetched
  }

  /**
   * One upstream document read, counted on the full store, charged to the
   * subject's admission; conditional with `validators`. The private side's
   * read goes through the store's memory of private misses (docs/cache.md
   * "The private registry's misses"), except for an owned name: its listing
   * is the private registry's alone, and a version published there by any
   * path must show at once.
   */
  #read(client: UpstreamClient | undefined, subject: Subject, signal: AbortSignal, validators?: DocumentValidators): Promise<ChargedFetch> {
    const { cache, ecosystem, privateClient, keep } = this.#o
    const fetchFrom = (asked: DocumentValidators | undefined): Promise<ChargedFetch> =>
      fetchCharged(client, (c, options) => c.fetchDocument(subject.packageName, options), subject.admission, ecosystem, signal, asked)
    if (client === undefined) return fetchFrom(validators)
    // A kept document makes a full read conditional (docs/cache.md "Kept upstream documents").
    const ask = keep === undefined
      ? (): Promise<ChargedFetch> => fetchFrom(validators)
      : (): Promise<ChargedFetch> => readThroughKeep({
          keep, ref: { ecosystem, packageName: subject.packageName, side: client === privateClient ? 'private' : 'public', upstream: client.baseUrl.href },
          charge: listingBytesCharge(subject.admission, ecosystem, signal), ask: fetchFrom,
        }, validators)
    if (client !== privateClient || this.#o.ownsName?.(subject.packageName) === true) {
      cache.full.read()
      return ask()
    }
    return cache.full.readPrivate(ecosystem, subject.packageName, ask)
  }

  async #load(subject: Subject, signal: AbortSignal, work: Work, prefetched?: { readonly private: ChargedFetch; readonly public: ChargedFetch }): Promise<AssembledResponse> {
    const { privateClient, publicClient } = this.#o
    const readAt = this.#o.clock.now()
    // A side a revalidation read already is not read again; one that answered not-modified is read in full.
    const fetchFrom = (client: UpstreamClient | undefined, held: ChargedFetch | undefined): Promise<ChargedFetch> =>
      held !== undefined && held.kind !== 'not-modified' ? Promise.resolve(held) : this.#read(client, subject, signal)
    const owned = this.#o.ownsName?.(subject.packageName) === true
    const [priv, pub] = await Promise.all([fetchFrom(privateClient, prefetched?.private), fetchFrom(owned ? undefined : publicClient, prefetched?.public)])
    const failures = [priv, pub].flatMap((f) => (f.kind === 'failed' ? [f.error] : []))
    const privateChunks = priv.kind === 'document' ? priv.chunks : undefined
    const publicChunks = pub.kind === 'document' ? pub.chunks : undefined
    if (privateChunks === undefined && publicChunks === undefined) {
      throw mostRecoverable(failures) ?? new ServiceError('UPSTREAM_MISS')
    }

    let outcome: PackumentOutcome
    try {
      // The response is prepaid at its bound (engine/listing/prepaid-charge.ts says why) before the pool takes the render.
      const bound = responseChargeBytes(chunkBytes(privateChunks, publicChunks), this.#o.ecosystem)
      outcome = await withPrepaidResponse(subject.admission, bound, { timeoutMs: REQUEST_TIMEOUT_MS, signal }, (charge) =>
        inChildSpan('packument render', { 'package.name': subject.packageName, 'packument.form': subject.abbreviated ? 'abbreviated' : 'full' }, () => this.#o.render({
          packageName: subject.packageName,
          privateEtag: priv.kind === 'document' ? priv.etag : undefined,
          publicEtag: pub.kind === 'document' ? pub.etag : undefined,
          abbreviated: subject.abbreviated,
          baseUrl: subject.baseUrl,
          listWithheld: subject.view === 'audit',
          now: readAt,
          privateChunks,
          publicChunks,
          charge,
          signal,
        })))
    } catch (error) {
      throw mostRecoverable([...failures, isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })])
    }
    this.#o.observe(outcome, subject.packageName)
    const render = ++this.#renders
    await this.#retainSelected(subject.packageName, outcome, work, render)
    // A failed private side says nothing of what it lacks: the artifact route then asks it.
    const definite = priv.kind === 'document' || priv.kind === 'miss'
    this.#o.cache.full.noteRender(this.#o.ecosystem, subject.packageName, definite ? render : undefined)
    if (this.#o.cache.shared && !owned) {
      await this.#o.cache.full.noteSharedRender(this.#o.ecosystem, subject.packageName, definite, outcome.selected.map((s) => s.filename), work.stamp)
    }
    if (outcome.body === undefined || outcome.etag === undefined) {
      const withheld = withholdingError(outcome.withholding) ?? new ServiceError('POLICY_WITHHELD')
      throw mostRecoverable([...failures, withheld])
    }
    const notice = outcome.notice === undefined ? {} : { notice: outcome.notice }
    if (this.#o.revalidation === undefined) return { body: outcome.body, etag: outcome.etag, ...notice }
    return { body: outcome.body, etag: outcome.etag, ...notice, freshness: freshnessOf(readAt, this.#freshMs, outcome.regateAt, priv, pub) }
  }

  get #freshMs(): number { return this.#o.revalidation?.freshMs ?? DEFAULT_ASSEMBLED_TTL_MS }

  /** The selected versions of a render, retained under the stamp of its work (nothing when the shared backend failed: SPEC.md 6.3). */
  async #retainSelected(packageName: string, outcome: PackumentOutcome, work: Work, render: number): Promise<void> {
    const { ecosystem, cache } = this.#o
    await cache.version.retainMany(outcome.selected.map((selected) => [selectedVersionKey(ecosystem, packageName, selected.filename), { ...selected, render }] as const), work)
  }
}
