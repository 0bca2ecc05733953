/**
 * Request bodies on the front door (uWS and the compatibility listener
 * alike, through Exchange.readBody).
 *
 * `readBoundedBody` collects a body under a byte bound, charging each chunk
 * to the caller before it is kept: when the charge must wait (the memory
 * gate is braking), the socket is paused and TCP holds the client until
 * memory frees (STYLE.md rule 3, backpressure always). Over the bound it
 * stops at once.
 *
 * `respondAfterBody` answers a refusal only once the client has finished
 * sending: a client still uploading when the answer arrives and the
 * connection closes sees a reset, not the refusal (npm then reports a
 * network error instead of the envelope). The body is read and dropped,
 * never kept, up to the bound; past it the refusal goes at once with the
 * connection closed.
 */
import { ServiceError } from '../../engine/errors.js'
import { CONTENT_LENGTH } from '../../engine/upstream/http-field-syntax.js'
import type { Exchange } from './exchange.js'

export interface BoundedBodyOptions {
  readonly maxBytes: number
  /** The error for a body over the bound. */
  readonly tooLarge: ServiceError
  /**
   * Charges a chunk's bytes before it is kept: true when charged now; false
   * when the caller must wait, then `wait` is awaited with the socket paused.
   */
  readonly charge: (bytes: number) => boolean
  readonly wait: (bytes: number) => Promise<void>
}

/** The declared Content-Length when well-formed; undefined for chunked or none. */
export function declaredLength(exchange: Exchange): number | undefined {
  const value = exchange.header('content-length')
  return value !== undefined && CONTENT_LENGTH.test(value) ? Number(value) : undefined
}

/** True when the request may carry body bytes still to read. */
export function carriesBody(exchange: Exchange): boolean {
  const length = declaredLength(exchange)
  return exchange.header('transfer-encoding') !== undefined || (length !== undefined && length > 0)
}

/**
 * Reads the whole body. MUST be called from the synchronous handler (see
 * Exchange.readBody). Rejects with `tooLarge` (declared or counted), with
 * the waiting charge's error, or with a GATE-independent abort when the
 * exchange ends first.
 */
export function readBoundedBody(exchange: Exchange, options: BoundedBodyOptions): Promise<Uint8Array> {
  const { maxBytes, tooLarge, charge, wait } = options
  return new Promise((resolve, reject) => {
    const declared = declaredLength(exchange)
    if (declared !== undefined && declared > maxBytes) {
      reject(tooLarge)
      return
    }
    const chunks: Uint8Array[] = []
    let bytes = 0
    let done = false
    const fail = (error: unknown): void => {
      if (done) return
      done = true
      chunks.length = 0
      reject(error)
    }
    exchange.onClose(() => fail(new ServiceError('INTERNAL', { message: 'the client went away before its body ended' })))
    // Each wait is chained so chunks are kept in order even when one waits.
    let waiting: Promise<void> = Promise.resolve()
    const flow = exchange.readBody((chunk, last) => {
      if (done) return
      bytes += chunk.byteLength
      if (bytes > maxBytes) {
        fail(tooLarge)
        return
      }
      const keep = (): void => {
        if (done) return
        if (chunk.byteLength > 0) chunks.push(chunk)
        if (last) {
          done = true
          resolve(chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks))
        }
      }
      if (chunk.byteLength === 0 || charge(chunk.byteLength)) {
        waiting = waiting.then(keep)
        return
      }
      flow.pause()
      waiting = waiting.then(() => wait(chunk.byteLength)).then(() => {
        keep()
        if (!done) flow.resume()
      }, fail)
    })
  })
}

/**
 * Answers `error` after the body has been read and dropped (see the top of
 * this file). MUST be called from the synchronous handler.
 */
export function respondAfterBody(exchange: Exchange, error: ServiceError, options: { maxBytes: number, headers?: Readonly<Record<string, string>> }): void {
  const answer = (close: boolean): void => {
    exchange.respondJson(error.status, { error: error.message }, {
      close,
      headers: { ...(error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) }), ...options.headers },
    })
  }
  const declared = declaredLength(exchange)
  if (!carriesBody(exchange)) {
    answer(false)
    return
  }
  if (declared !== undefined && declared > options.maxBytes) {
    answer(true)
    return
  }
  let bytes = 0
  exchange.readBody((chunk, last) => {
    bytes += chunk.byteLength
    if (bytes > options.maxBytes) answer(true)
    else if (last) answer(false)
  })
}
