/**
 * The full-document store (SPEC.md 6.3 `service.metadata_cache.requests`):
 * every upstream document read of a listing goes through it.
 *
 * - Local backend: no document is retained (SPEC.md 6.3: entries and bytes
 *   stay zero); each upstream read counts a miss. It remembers one thing:
 *   that the private registry does not have a package (issue 29 item 2),
 *   for `cache.privateMissSeconds`, so the next read of that package does
 *   not ask it again; a use of that memory counts a hit.
 * - Shared backend: the upstream documents themselves, with their
 *   validators and when they were read, are shared by the tier. A document
 *   read within the fresh time (the answers' own, five minutes) is used as
 *   it is (a hit); an older one is revalidated with its validators, and a
 *   304 uses it again (a hit: no body read). So a new generation, the other
 *   form of a packument, or a revalidation that found one side changed,
 *   renders again without reading the unchanged documents. The private
 *   document, and the memory of its miss, sit in the package's group (a
 *   publish, a mirror success or a Dredger removal makes them unreachable);
 *   the public document sits in a group of its own that nothing but time
 *   invalidates (its validators say whether it changed).
 *
 * Documents held in the shared backend are not kept by the replica:
 * `resident_bytes` and `entries` of this store stay zero (they report what a
 * replica holds locally; the shared server's own size is read there).
 */
import type { Clock } from '../clock.js'
import type { ChargedFetch } from '../listing/charged-fetch.js'
import type { DocumentValidators } from '../upstream/upstream-client.js'
import { StoreCounters, type StoreSnapshot } from './cache-counters.js'
import { packageGroup } from './shared-backend.js'
import type { SharedTier } from './shared-tier.js'
import { decodeValue, encodeValue } from './value-codec.js'

export type Side = 'private' | 'public'

/** What a caller already holds of a side: the validators of its copy, or that it was a miss. */
export type HeldSource = DocumentValidators | 'miss' | undefined

/** Whether the full-document store reads an upstream for this request, and how. */
export interface DocumentRead {
  readonly ecosystem: string
  readonly packageName: string
  readonly side: Side
  /** The upstream read itself, conditional with `validators`. */
  ask(validators: DocumentValidators | undefined): Promise<ChargedFetch>
  /** The caller's own copy (a revalidation): an unchanged document answers `not-modified`. */
  readonly held?: HeldSource
  /** How long a read document is used without asking (the answers' fresh time). */
  readonly freshMs: number
  /** Charges a chunk served from the store as a read of the same bytes would be (SPEC.md 8.1). */
  charge?(chunk: Uint8Array): Promise<void> | undefined
}

interface DocumentHeader {
  readonly kind: 'document' | 'miss'
  readonly readAt: number
  readonly etag?: string
  readonly lastModified?: string
  readonly contentType?: string
}

interface Held extends DocumentHeader {
  readonly bytes?: Uint8Array
}

/** At most this many remembered private misses per process (local backend); the oldest go first. */
const LOCAL_MISSES = 10_000

function sameValidators(a: DocumentValidators, b: DocumentHeader): boolean {
  return a.etag === b.etag && a.lastModified === b.lastModified
}

export interface FullDocumentStoreOptions {
  readonly clock: Clock
  /** `cache.privateMissSeconds` in milliseconds; 0: a private miss is not remembered. */
  readonly privateMissMs: number
  readonly shared?: SharedTier | undefined
}

export class FullDocumentStore {
  readonly #counters = new StoreCounters()
  readonly #clock: Clock
  readonly #missMs: number
  readonly #shared: SharedTier | undefined
  /** Local backend: package group to the end of its remembered private miss. */
  readonly #misses = new Map<string, number>()

  constructor(options: FullDocumentStoreOptions) {
    this.#clock = options.clock
    this.#missMs = options.privateMissMs
    this.#shared = options.shared
  }

  /** One upstream document read made outside `fetch` (counted as a miss). */
  read(): void { this.#counters.miss++ }

  /** The document of one side: from the store when it can say, else from the upstream (and kept). */
  async fetch(request: DocumentRead): Promise<ChargedFetch> {
    const group = request.side === 'private' ? packageGroup(request.ecosystem, request.packageName) : `${packageGroup(request.ecosystem, request.packageName)}|public`
    const { held, stamp } = await this.#lookup(group, request.side)
    const now = this.#clock.now()
    if (held?.kind === 'miss' && now < held.readAt + this.#missMs) {
      this.#counters.hit++
      return { kind: 'miss' }
    }
    const callerCopy = typeof request.held === 'object' ? request.held : undefined
    if (held?.kind === 'document' && now < held.readAt + request.freshMs) {
      this.#counters.hit++
      return this.#served(held, callerCopy, request)
    }
    this.#counters.miss++
    const heldDocument = held?.kind === 'document' ? held : undefined
    const asked = heldDocument === undefined ? callerCopy : { ...(heldDocument.etag === undefined ? {} : { etag: heldDocument.etag }), ...(heldDocument.lastModified === undefined ? {} : { lastModified: heldDocument.lastModified }) }
    const fetched = await request.ask(asked)
    if (fetched.kind === 'not-modified') {
      if (heldDocument === undefined) return fetched
      // Asked with the store's validators: the store's document is current again.
      const refreshed = { ...heldDocument, readAt: now }
      await this.#write(group, stamp, refreshed, refreshed.bytes)
      return this.#served(refreshed, callerCopy, request)
    }
    if (fetched.kind === 'document') {
      await this.#write(group, stamp, {
        kind: 'document', readAt: now,
        ...(fetched.etag === undefined ? {} : { etag: fetched.etag }),
        ...(fetched.lastModified === undefined ? {} : { lastModified: fetched.lastModified }),
        ...(fetched.contentType === undefined ? {} : { contentType: fetched.contentType }),
      }, fetched.chunks)
    } else if (fetched.kind === 'miss' && request.side === 'private') {
      await this.#rememberMiss(group, stamp, now)
    }
    return fetched
  }

  /** Forgets what this process remembers of one package group (the local backend's private miss). */
  forgetGroup(group: string): void { this.#misses.delete(group) }

  snapshot(): StoreSnapshot { return this.#counters.snapshot(0, 0) }

  /** A held document as a read answers it: `not-modified` when it is the caller's own copy, else its bytes, charged. */
  async #served(held: Held, callerCopy: DocumentValidators | undefined, request: DocumentRead): Promise<ChargedFetch> {
    if (callerCopy !== undefined && sameValidators(callerCopy, held)) return { kind: 'not-modified' }
    const bytes = held.bytes ?? new Uint8Array(0)
    await request.charge?.(bytes)
    return { kind: 'document', chunks: [bytes], etag: held.etag, lastModified: held.lastModified, contentType: held.contentType }
  }

  async #lookup(group: string, side: Side): Promise<{ held: Held | undefined, stamp: string | undefined }> {
    const shared = this.#shared
    if (shared === undefined) {
      const until = side === 'private' ? this.#misses.get(group) : undefined
      if (until !== undefined && until <= this.#clock.now()) this.#misses.delete(group)
      return { held: until === undefined ? undefined : { kind: 'miss', readAt: until - this.#missMs }, stamp: '' }
    }
    try {
      const answer = await shared.backend.read(group, 'doc')
      if (answer.value === undefined) return { held: undefined, stamp: answer.stamp }
      const { header, bytes } = await decodeValue<DocumentHeader>(answer.value)
      return { held: { ...header, bytes }, stamp: answer.stamp }
    } catch {
      // SPEC.md 6.3: the upstream answers instead, and nothing is written.
      this.#counters.refused++
      return { held: undefined, stamp: undefined }
    }
  }

  async #write(group: string, stamp: string | undefined, header: DocumentHeader, body: Uint8Array | readonly Uint8Array[] | undefined): Promise<void> {
    const shared = this.#shared
    if (shared === undefined || stamp === undefined) return
    const bytes = body === undefined ? undefined : body instanceof Uint8Array ? body : Buffer.concat(body)
    const { readAt, kind, etag, lastModified, contentType } = header
    const encoded = await encodeValue({ kind, readAt, etag, lastModified, contentType }, bytes, true)
    if (encoded.byteLength > shared.maxValueBytes) {
      this.#counters.refused++
      return
    }
    await shared.backend.write(group, stamp, 'doc', encoded, shared.ttlMs).catch(() => { this.#counters.refused++ })
  }

  async #rememberMiss(group: string, stamp: string | undefined, now: number): Promise<void> {
    if (this.#missMs <= 0) return
    const shared = this.#shared
    if (shared === undefined) {
      this.#misses.delete(group)
      this.#misses.set(group, now + this.#missMs)
      if (this.#misses.size > LOCAL_MISSES) this.#misses.delete(this.#misses.keys().next().value as string)
      return
    }
    if (stamp === undefined) return
    const encoded = await encodeValue({ kind: 'miss', readAt: now }, undefined, false)
    await shared.backend.write(group, stamp, 'doc', encoded, this.#missMs).catch(() => { this.#counters.refused++ })
  }
}
