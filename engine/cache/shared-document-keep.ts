/**
 * Kept upstream documents in the shared backend (issue 29 item 1,
 * docs/cache.md "What is shared"): every replica of a tier finds the last
 * document any of them read, with its validators, and a restarted tier
 * still does; its next full read of a package is then a conditional
 * request, and a 304 costs no body.
 *
 * Each document is one value in a group of its own per package
 * (`<eco>|<package>|kept`), never invalidated: a publish, a mirror success or
 * a Dredger removal moves the package's stamp (its answers, records and
 * private-miss memory), not this group's, because a kept document is used
 * only after its upstream answered 304 to its validators and so cannot
 * outlive a change. On the wire: the validators as a JSON header, then the
 * body brotli quality 1 (value-codec.ts); a value over `cache.maxValueBytes`
 * is not shared. A failed read asks the upstream in full, a failed write
 * keeps nothing (SPEC.md 6.3), both counted `refused` on the full-document
 * store by the caller's `refused` and `failed` here.
 */
import { createHash } from 'node:crypto'
import { KeepCounters, type DocumentKeep, type DocumentRef, type KeptDocument } from './document-keep.js'
import { packageGroup } from './shared-backend.js'
import type { SharedTier } from './shared-tier.js'
import { decodeValue, encodeValue } from './value-codec.js'

/** Writes in flight at once, at most, and their bytes: past either a new document is not shared (counted failed). */
const MAX_WRITES = 8
const MAX_PENDING_BYTES = 64 * 1024 * 1024

interface Header {
  readonly etag?: string
  readonly lastModified?: string
  readonly contentType?: string
}

function placeOf(ref: DocumentRef): { group: string, name: string } {
  // A URL may hold '|': its digest names it.
  const upstream = createHash('sha256').update(ref.upstream).digest('hex').slice(0, 16)
  return { group: `${packageGroup(ref.ecosystem, ref.packageName)}|kept`, name: `${ref.side}|${upstream}` }
}

export interface SharedDocumentKeepOptions {
  readonly tier: SharedTier
  /** A backend operation failed (SPEC.md 6.3 `refused`, on the full-document store). */
  readonly refused: () => void
}

export class SharedDocumentKeep implements DocumentKeep {
  readonly counters = new KeepCounters()
  readonly #tier: SharedTier
  readonly #refused: () => void
  readonly #writing = new Set<Promise<void>>()
  #pendingBytes = 0

  constructor(options: SharedDocumentKeepOptions) {
    this.#tier = options.tier
    this.#refused = options.refused
  }

  async get(ref: DocumentRef, charge: (bytes: number) => Promise<void> | undefined): Promise<KeptDocument | undefined> {
    const { group, name } = placeOf(ref)
    let value: Buffer | undefined
    try {
      value = (await this.#tier.backend.read(group, name)).value
    } catch {
      this.counters.failed++
      this.#refused()
      return undefined
    }
    if (value === undefined) return undefined
    await charge(value.byteLength)
    try {
      const { header, bytes } = await decodeValue<Header>(value)
      await charge(bytes.byteLength)
      return { etag: header.etag, lastModified: header.lastModified, contentType: header.contentType, chunks: [bytes] }
    } catch {
      this.counters.corrupt++
      return undefined
    }
  }

  keep(ref: DocumentRef, document: KeptDocument): void {
    if (document.etag === undefined && document.lastModified === undefined) return
    const size = document.chunks.reduce((n, c) => n + c.byteLength, 0)
    if (this.#writing.size >= MAX_WRITES || this.#pendingBytes + size > MAX_PENDING_BYTES) {
      this.counters.failed++
      return
    }
    this.#pendingBytes += size
    const write = this.#write(ref, document).finally(() => {
      this.#pendingBytes -= size
      this.#writing.delete(write)
    })
    this.#writing.add(write)
  }

  drop(): void {
    // Left to its time to live: a kept document serves only after a 304 to its validators, which a missing document never sends.
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#writing])
  }

  async #write(ref: DocumentRef, document: KeptDocument): Promise<void> {
    const header: Header = {
      ...(document.etag === undefined ? {} : { etag: document.etag }),
      ...(document.lastModified === undefined ? {} : { lastModified: document.lastModified }),
      ...(document.contentType === undefined ? {} : { contentType: document.contentType }),
    }
    const encoded = await encodeValue(header, Buffer.concat(document.chunks), true)
    if (encoded.byteLength > this.#tier.maxValueBytes) {
      this.counters.failed++
      return
    }
    const { group, name } = placeOf(ref)
    try {
      // A group never invalidated: its stamp stays '0'.
      await this.#tier.backend.write(group, '0', name, encoded, this.#tier.ttlMs)
      this.counters.written++
    } catch {
      this.counters.failed++
      this.#refused()
    }
  }
}
