/**
 * A request body's `Content-Encoding` undone under a bound on the decoded
 * size (RFC 9110 section 8.4). npm sends its audit request gzip-compressed;
 * a few kilobytes of gzip can inflate to gigabytes, so the inflater stops
 * at `maxDecodedBytes` (zlib's `maxOutputLength`): a bomb costs at most the
 * bound, never the heap.
 */
import { brotliDecompressSync, gunzipSync, inflateSync, type ZlibOptions } from 'node:zlib'
import { ServiceError } from '../../engine/errors.js'

export interface DecodeBodyOptions {
  readonly maxDecodedBytes: number
  /** For a body whose decoded size passes the bound. */
  readonly tooLarge: ServiceError
  /** For an unknown coding or a corrupt compressed body. */
  readonly malformed: (reason: string) => ServiceError
}

export function decodeRequestBody(body: Uint8Array, contentEncoding: string | undefined, options: DecodeBodyOptions): Uint8Array {
  const { maxDecodedBytes, tooLarge, malformed } = options
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  if (codings.length === 0) {
    if (body.byteLength > maxDecodedBytes) throw tooLarge
    return body
  }
  if (codings.length > 1) throw malformed('more than one content coding')
  const zlibOptions: ZlibOptions = { maxOutputLength: maxDecodedBytes }
  try {
    switch (codings[0]) {
      case 'gzip':
      case 'x-gzip':
        return gunzipSync(body, zlibOptions)
      case 'deflate':
        return inflateSync(body, zlibOptions)
      case 'br':
        return brotliDecompressSync(body, { maxOutputLength: maxDecodedBytes })
      default:
        throw malformed(`unsupported content coding ${JSON.stringify((codings[0] ?? '').slice(0, 32))}`)
    }
  } catch (error) {
    if (error instanceof ServiceError) throw error
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge
    throw malformed('the compressed body does not decode')
  }
}
