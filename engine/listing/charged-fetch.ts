/**
 * One upstream listing read for a request (a packument, a `py` project
 * page), every decompressed chunk charged to the request's admission at the
 * ecosystem's per-source-byte rate before the next is read (SPEC.md 8.1),
 * and any failure without an answer kept as a value: the caller decides the
 * status from both legs together (SPEC.md 4.2, most-recoverable.ts).
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { isServiceError, ServiceError } from '../errors.js'
import { ADMISSION_CHARGES } from '../memory/admission-charges.js'
import type { Admission } from '../memory/gate.js'
import { PAUSE_CAP_UPSTREAM_READ_MS } from '../memory/gate.js'
import type { DocumentValidators, FetchDocumentOptions, FetchedDocument, UpstreamClient } from '../upstream/upstream-client.js'

export type ChargedFetch =
  | { readonly kind: 'document'; readonly chunks: Uint8Array[]; readonly etag: string | undefined; readonly lastModified: string | undefined; readonly contentType: string | undefined }
  | { readonly kind: 'miss' }
  /** Only for a conditional read: the upstream answered 304, and nothing was read or charged. */
  | { readonly kind: 'not-modified' }
  | { readonly kind: 'failed'; readonly error: ServiceError }
  | { readonly kind: 'absent' }

/**
 * The charge of one decompressed chunk of an `ecosystem` listing read:
 * undefined when the gate took it at once, else the pause until it did
 * (failing at the 50 s cap on a paused upstream read, SPEC.md 8).
 */
export function listingChunkCharge(admission: Admission, ecosystem: Ecosystem, signal?: AbortSignal): (chunk: Uint8Array) => Promise<void> | undefined {
  const charge = listingBytesCharge(admission, ecosystem, signal)
  return (chunk) => charge(chunk.byteLength)
}

/** The same charge for `sourceBytes` of a listing document held by the proxy (a kept document, engine/cache/document-keep.ts). */
export function listingBytesCharge(admission: Admission, ecosystem: Ecosystem, signal?: AbortSignal): (sourceBytes: number) => Promise<void> | undefined {
  const perSourceByte = ADMISSION_CHARGES.sourcePerByte[ecosystem]
  return (sourceBytes) => {
    const bytes = Math.ceil(sourceBytes * perSourceByte)
    if (admission.tryCharge(bytes)) return undefined
    return admission.charge(bytes, { timeoutMs: PAUSE_CAP_UPSTREAM_READ_MS, ...(signal === undefined ? {} : { signal }) })
  }
}

export async function fetchCharged(
  client: UpstreamClient | undefined,
  fetch: (client: UpstreamClient, options: FetchDocumentOptions) => Promise<FetchedDocument>,
  admission: Admission,
  ecosystem: Ecosystem,
  signal: AbortSignal,
  conditional?: DocumentValidators,
): Promise<ChargedFetch> {
  if (client === undefined) return { kind: 'absent' }
  try {
    const result = await fetch(client, {
      signal,
      ...(conditional === undefined ? {} : { conditional }),
      onChunk: listingChunkCharge(admission, ecosystem, signal),
    })
    if (result.kind === 'document') return { kind: 'document', chunks: result.chunks, etag: result.etag, lastModified: result.lastModified, contentType: result.contentType }
    return result.kind === 'not-modified' ? result : { kind: 'miss' }
  } catch (error) {
    if (signal.aborted) throw error
    return { kind: 'failed', error: isServiceError(error) ? error : new ServiceError('UPSTREAM_UNAVAILABLE', { cause: error }) }
  }
}
