/**
 * Streaming decoders for a metadata response's `Content-Encoding` (RFC 9110
 * 8.4): gzip, deflate and brotli, applied in the reverse of the order listed.
 * Decoding is incremental, so the ingest ceiling is judged on decompressed
 * bytes as they appear and a compression bomb is stopped at the ceiling
 * instead of being inflated whole.
 *
 * `deflate` means the zlib-wrapped format (RFC 1950) as HTTP defines it; a
 * server sending raw deflate is answered as a malformed body.
 */
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Transform } from 'node:stream'
import { ServiceError } from '../errors.js'

/** Output chunk size of a decoder: few enough awaits per document, small enough to charge finely. */
export const DECODED_CHUNK_BYTES = 64 * 1024

/** The encodings we advertise in `Accept-Encoding`. */
export const ACCEPTED_ENCODINGS = 'gzip, deflate, br'

function decoderFor(coding: string): Transform {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip({ chunkSize: DECODED_CHUNK_BYTES })
    case 'deflate':
      return createInflate({ chunkSize: DECODED_CHUNK_BYTES })
    case 'br':
      return createBrotliDecompress({ chunkSize: DECODED_CHUNK_BYTES })
    default:
      throw new ServiceError('UPSTREAM_DECODE', { data: { reason: 'unsupported content-encoding', coding: coding.slice(0, 32) } })
  }
}

/**
 * The decoders for a `Content-Encoding` value, outermost coding last in the
 * header and so first to be undone; an empty list for identity. At most two
 * stacked codings are accepted.
 */
export function decodersFor(contentEncoding: string | string[] | undefined): Transform[] {
  if (contentEncoding === undefined) return []
  const joined = Array.isArray(contentEncoding) ? contentEncoding.join(',') : contentEncoding
  const codings = joined.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  if (codings.length > 2) throw new ServiceError('UPSTREAM_DECODE', { data: { reason: 'too many stacked content-encodings' } })
  return codings.reverse().map(decoderFor)
}
