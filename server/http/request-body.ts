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
import { REQUEST_TIMEOUT_MS, type Admission } from '../../engine/memory/gate.js'
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
  /**
   * Over `maxBytes`, read on and drop the body up to this many bytes in all,
   * and refuse it only at its end: npm writes its whole body before it reads
   * an answer, and a connection closed under its upload is an EPIPE that
   * hides the refusal. Past it (declared or counted), or unset, refuse at once.
   */
  readonly drainBytes?: number
  /** Called once when the body's last byte has been read, kept or dropped. */
  readonly ended?: () => void
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
  const drainBytes = options.drainBytes ?? 0
  return new Promise((resolve, reject) => {
    const declared = declaredLength(exchange)
    if (declared !== undefined && declared > maxBytes && declared > drainBytes) {
      reject(tooLarge)
      return
    }
    const chunks: Uint8Array[] = []
    let bytes = 0
    let done = false
    /** Past maxBytes and within drainBytes: every chunk is dropped until the last. */
    let draining = declared !== undefined && declared > maxBytes
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
      if (last) options.ended?.()
      if (done) return
      bytes += chunk.byteLength
      if (bytes > maxBytes && !draining) {
        draining = true
        chunks.length = 0
      }
      if (draining) {
        if (last || bytes > drainBytes) fail(tooLarge)
        return
      }
      const keep = (): void => {
        if (done || draining) return
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

/** A body read under an admission of its own (readAdmittedBody). */
export interface AdmittedBody {
  /** Aborted when the exchange ends: pass it to every wait the request makes. */
  readonly signal: AbortSignal
  /** The gate's entry step; rejects when the gate sheds the request. */
  readonly entered: Promise<Admission>
  readonly body: Promise<Uint8Array>
  /** True once the body's last byte has been read, kept or dropped: a refusal then need not close the connection. */
  ended(): boolean
  /** Returns the admission's charges (when it was granted); call it when the request is done. */
  release(): void
}

/**
 * Enters the memory gate and reads the body under `maxBytes`, every chunk
 * charged to that admission before it is kept: nothing is kept before the
 * entry step is granted, and chunks that arrive meanwhile wait on it with
 * the socket paused. The admission is returned when the exchange ends, and
 * at once if it is granted after that. MUST be called from the synchronous
 * handler, like readBoundedBody. Both promises are already handled, so
 * either may be left unawaited.
 */
export function readAdmittedBody(exchange: Exchange, gate: { enter(signal: AbortSignal): Promise<Admission> }, options: { readonly maxBytes: number, readonly tooLarge: ServiceError, readonly drainBytes?: number }): AdmittedBody {
  const controller = new AbortController()
  let admission: Admission | undefined
  let ended = !carriesBody(exchange)
  exchange.onClose(() => {
    controller.abort(new ServiceError('INTERNAL', { message: 'the client went away' }))
    admission?.release()
  })
  const entered = gate.enter(controller.signal).then((a) => {
    // Granted after the exchange ended (its close hook has run): return it at once.
    if (exchange.closed) a.release()
    admission = a
    return a
  })
  const charge = (bytes: number): boolean => admission !== undefined && admission.tryCharge(bytes)
  const wait = async (bytes: number): Promise<void> => {
    const a = await entered
    if (!a.tryCharge(bytes)) await a.charge(bytes, { timeoutMs: REQUEST_TIMEOUT_MS, signal: controller.signal })
  }
  const body = readBoundedBody(exchange, { ...options, charge, wait, ended: () => { ended = true } })
  entered.catch(() => {})
  body.catch(() => {})
  return { signal: controller.signal, entered, body, ended: () => ended, release: () => admission?.release() }
}
