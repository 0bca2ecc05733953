/**
 * Kept upstream documents (issue 29 items 4 and 1, docs/cache.md "Kept
 * upstream documents"): the last document each upstream gave for a package,
 * with the validators it came with, so the next full read of it is a
 * conditional request and a 304 costs no body. Two places keep them: a
 * folder on disk (disk-document-keep.ts, the local backend: it survives a
 * restart of a single-node proxy) and the shared backend
 * (shared-document-keep.ts: every replica of a tier, surviving restarts).
 *
 * Why documents and not assembled answers: a kept document serves any
 * generation. An answer rendered under other rules or another advisory
 * database is never served (it was not kept); the kept document is rendered
 * again under the rules in force, after the upstream said it is still the
 * current one. A kept document is only ever used after that 304, so it can
 * never serve what the upstream no longer says.
 *
 * This is not SPEC.md 6.3's full-document store, which stays empty on the
 * local backend (its entries and bytes stay zero and every upstream read,
 * conditional or not, counts a miss there): it holds no answer and decides
 * nothing, it only spares the body of a read the upstream says is unchanged.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { ChargedFetch } from '../listing/charged-fetch.js'
import type { DocumentValidators } from '../upstream/upstream-client.js'

export type DocumentSide = 'private' | 'public'

/** Which document: one side of one package, as one upstream (its base URL) serves it; validators of one server mean nothing to another. */
export interface DocumentRef {
  readonly ecosystem: Ecosystem
  readonly packageName: string
  readonly side: DocumentSide
  readonly upstream: string
}

/** The key of a document (NUL appears in no package name or URL: joined keys cannot collide). */
export function documentKey(ref: DocumentRef): string {
  return [ref.ecosystem, ref.side, ref.upstream, ref.packageName].join('\u0000')
}

export interface KeptDocument {
  readonly etag: string | undefined
  readonly lastModified: string | undefined
  readonly contentType: string | undefined
  /** The decompressed document, as the upstream sent it. */
  readonly chunks: readonly Uint8Array[]
}

/** `service.packument.kept_documents` by result. */
export class KeepCounters {
  /** A conditional read answered 304: the kept body served the render, no body was read. */
  revalidated = 0
  /** A conditional read answered with a new document (or a miss): the kept one was replaced (or dropped). */
  replaced = 0
  /** A document written (first read or replacement). */
  written = 0
  /** A kept entry that could not be read whole (bad length or digest, unreadable): discarded, never served. */
  corrupt = 0
  /** Entries removed to keep the byte bound. */
  evicted = 0
  /** A write or read that failed (disk full, backend down), or a document too large to keep. */
  failed = 0

  snapshot(): Readonly<Record<'revalidated' | 'replaced' | 'written' | 'corrupt' | 'evicted' | 'failed', number>> {
    return Object.freeze({ revalidated: this.revalidated, replaced: this.replaced, written: this.written, corrupt: this.corrupt, evicted: this.evicted, failed: this.failed })
  }
}

export interface DocumentKeep {
  readonly counters: KeepCounters
  /**
   * The kept document of one side of a package, or undefined (none, or one
   * that could not be read whole: counted corrupt and discarded; a failed
   * read: counted failed). `charge` is awaited with the bytes it brings in
   * (on disk, before they are read); it rejects only when the charge does.
   */
  get(ref: DocumentRef, charge: (bytes: number) => Promise<void> | undefined): Promise<KeptDocument | undefined>
  /** Keeps a document read in full, behind the request (failures counted, never thrown); one without validators is not kept. */
  keep(ref: DocumentRef, document: KeptDocument): void
  /** Forgets a document (the upstream no longer has it). */
  drop(ref: DocumentRef): void
  close(): Promise<void>
}

function validatorsOf(document: KeptDocument): DocumentValidators | undefined {
  if (document.etag === undefined && document.lastModified === undefined) return undefined
  return { ...(document.etag === undefined ? {} : { etag: document.etag }), ...(document.lastModified === undefined ? {} : { lastModified: document.lastModified }) }
}

export interface KeptReadOptions {
  readonly keep: DocumentKeep
  readonly ref: DocumentRef
  /** The byte charge of a kept body, at the rate of an upstream read (SPEC.md 8.1). */
  readonly charge: (bytes: number) => Promise<void> | undefined
  /** One upstream read, conditional with `validators`. */
  readonly ask: (validators?: DocumentValidators) => Promise<ChargedFetch>
}

/**
 * One upstream document read through the keep. With `validators` (a held
 * answer's revalidation) the read is that conditional one, and a new
 * document it brings is kept. Without, a kept document makes it conditional:
 * a 304 answers with the kept body, as if read; anything else is what the
 * upstream said, kept or dropped.
 */
export async function readThroughKeep(o: KeptReadOptions, validators?: DocumentValidators): Promise<ChargedFetch> {
  const kept = validators === undefined ? await o.keep.get(o.ref, o.charge) : undefined
  const asked = kept === undefined ? validators : validatorsOf(kept)
  const fetched = await o.ask(asked)
  if (fetched.kind === 'not-modified' && kept !== undefined) {
    o.keep.counters.revalidated++
    return { kind: 'document', chunks: [...kept.chunks], etag: kept.etag, lastModified: kept.lastModified, contentType: kept.contentType }
  }
  if (kept !== undefined && fetched.kind !== 'failed') o.keep.counters.replaced++
  if (fetched.kind === 'document') {
    o.keep.keep(o.ref, { etag: fetched.etag, lastModified: fetched.lastModified, contentType: fetched.contentType, chunks: fetched.chunks })
  } else if (fetched.kind === 'miss') {
    o.keep.drop(o.ref)
  }
  return fetched
}
