/**
 * RFC 9112 section 6.3 for requests, checked before any handler runs: a
 * request whose body framing two parsers could read two ways is refused
 * with 400 and its connection closed, so nothing behind or in front of this
 * proxy can be made to see a different next request (smuggling).
 *
 * - Content-Length together with Transfer-Encoding (item 3).
 * - Content-Length values that differ, or one that is not digits (item 5).
 *   The same value repeated is one length (RFC 9110 section 8.6).
 * - Transfer-Encoding whose final coding is not `chunked` (item 4): the body
 *   length cannot be determined. Other codings before a final `chunked` are
 *   not understood here: 501 (section 6.1).
 *
 * uWS hands every header line to the handler, repeated ones joined by the
 * Exchange into one list, which is what this reads.
 */
import { ServiceError } from '../../engine/errors.js'

export function requestFramingRefusal(contentLength: string | undefined, transferEncoding: string | undefined): ServiceError | undefined {
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) return ambiguous('Content-Length with Transfer-Encoding')
    const codings = transferEncoding.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '')
    if (codings.at(-1) !== 'chunked' || codings.filter((c) => c === 'chunked').length !== 1) return ambiguous('Transfer-Encoding does not end in one chunked')
    if (codings.length > 1) return new ServiceError('REQUEST_CODING_UNSUPPORTED')
    return undefined
  }
  if (contentLength === undefined) return undefined
  const values = new Set(contentLength.split(',').map((v) => v.trim()))
  if (values.size !== 1) return ambiguous('Content-Length values differ')
  const [value] = values
  if (!/^\d{1,15}$/.test(value as string)) return ambiguous('Content-Length is not a length')
  return undefined
}

function ambiguous(reason: string): ServiceError {
  return new ServiceError('REQUEST_FRAMING_AMBIGUOUS', { message: `the request body framing is ambiguous: ${reason}`, data: { reason } })
}
