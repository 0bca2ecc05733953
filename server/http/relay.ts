/**
 * The streaming relay: an upstream body to one Exchange, bytes verbatim, with
 * bounded memory and backpressure end to end (SPEC.md 1.3, 4.4; STYLE.md
 * rules 1-3). Reusable by any streamed response.
 *
 * - Known length (`content-length`): `tryEnd` chunk by chunk, as in
 *   uWebSockets.js examples/VideoStreamer.js. A chunk uWS could not take in
 *   full is kept with the write offset it started at, the source pauses, and
 *   `onWritable` resends the rest from the new write offset. uWS writes the
 *   Content-Length itself.
 * - Unknown length: `write` (chunked); when it reports backpressure the
 *   source pauses until `onWritable`.
 * - Status and headers leave with the first byte, not before, so an upstream
 *   that fails before its first byte still gets the serve error model
 *   (403/404/500/503 with Retry-After). After the first byte a failure cuts
 *   the connection: the client sees a short body, never a silently
 *   truncated success. A body that ends short of its declared length, or
 *   runs past it, is such a failure.
 * - The client going away destroys the upstream body, which aborts the
 *   upstream request and closes its socket.
 *
 * Two sources: an artifact body from engine/upstream/artifact-body.ts
 * is relayed by `relayArtifact` (views of its connection's read buffer,
 * nothing allocated per chunk: the throughput path); any other Readable by
 * the 'data'/pause/resume loop below.
 *
 * At most one chunk per exchange is held here; the source and the socket
 * below it hold the rest, and TCP holds the sender.
 */
import type { Readable } from 'node:stream'
import { ServiceError } from '../../engine/errors.js'
import { ArtifactBody } from '../../engine/upstream/artifact-body.js'
import { transportFailure } from '../../engine/upstream/transport-failure.js'
import type { Exchange } from './exchange.js'

export const DEFAULT_ARTIFACT_TYPE = 'application/octet-stream'

export interface RelaySource {
  readonly status: number
  /** Response headers already reduced to a safe subset; `content-length` gives the total size. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Readable
}

export interface RelayOptions {
  /** The upstream's `host:port`, for coding a failure that has no code of its own. */
  readonly upstream: string
  /** Content type when the upstream names none; default application/octet-stream. */
  readonly defaultContentType?: string
}

export type RelayOutcome =
  /** The last byte was handed to uWS (the response is complete from our side). */
  | { readonly kind: 'delivered'; readonly bytes: number }
  /** The client went away first; the upstream body was destroyed. */
  | { readonly kind: 'client-gone'; readonly bytes: number }
  /**
   * The upstream failed. Before the first byte the client got `error` in the
   * serve error model; after it the connection was cut.
   */
  | { readonly kind: 'upstream-failed'; readonly bytes: number; readonly error: ServiceError; readonly afterFirstByte: boolean }

/** Parses a Content-Length value; undefined when absent or not a plain non-negative integer. */
export function declaredLength(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  const n = Number(value.trim())
  return Number.isSafeInteger(n) ? n : undefined
}

/** The headers to send: everything but the framing, which uWS writes, and a default content type. */
function outgoingHeaders(headers: RelaySource['headers'], defaultType: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding' || name === 'connection') continue
    out[name] = value
  }
  out['content-type'] ??= defaultType
  return out
}

export function relayStream(exchange: Exchange, source: RelaySource, options: RelayOptions): Promise<RelayOutcome> {
  if (source.body instanceof ArtifactBody) return relayArtifact(exchange, source.body, source, options)
  const { body, status } = source
  const total = declaredLength(source.headers['content-length'])
  const headers = outgoingHeaders(source.headers, options.defaultContentType ?? DEFAULT_ARTIFACT_TYPE)

  return new Promise<RelayOutcome>((resolve) => {
    let bytes = 0
    let started = false
    let finished = false
    /** Known length: the chunk uWS did not take in full, and the write offset it started at. */
    let pending: Uint8Array | undefined
    let pendingStart = 0
    /** Unknown length: paused on backpressure until onWritable. */
    let waiting = false
    let upstreamEnded = false

    const finish = (outcome: RelayOutcome): void => {
      if (finished) return
      finished = true
      pending = undefined
      body.off('data', onData)
      body.off('end', onEnd)
      body.off('close', onClose)
      // After a delivery the body has ended, or is about to (its 'end' follows the
      // last chunk): let it run out so its socket returns to the keep-alive pool.
      // Any other ending destroys it, which aborts the request and closes the socket.
      if (outcome.kind !== 'delivered') body.destroy()
      else if (!upstreamEnded) body.resume()
      resolve(outcome)
    }

    const fail = (err: unknown): void => {
      if (finished) return
      const error = err instanceof ServiceError ? err : transportFailure(err, options.upstream).error
      if (!started) {
        exchange.respondError(error, { head: exchange.method === 'HEAD' })
        finish({ kind: 'upstream-failed', bytes, error, afterFirstByte: false })
      } else {
        // cut() runs the exchange's close hooks synchronously, as an abort: settle first.
        finish({ kind: 'upstream-failed', bytes, error, afterFirstByte: true })
        exchange.cut()
      }
    }

    const shortBody = (): ServiceError =>
      new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body shorter than its content-length', bytes, declared: total } })

    const sendKnown = (chunk: Uint8Array, size: number): void => {
      const start = exchange.writeOffset()
      const { ok, done } = exchange.tryEnd(chunk, size)
      if (done) {
        finish({ kind: 'delivered', bytes })
        return
      }
      if (!ok && !exchange.closed) {
        pending = chunk
        pendingStart = start
        body.pause()
      }
    }

    function onData(chunk: Buffer): void {
      if (finished || chunk.byteLength === 0) return
      bytes += chunk.byteLength
      if (total !== undefined && bytes > total) {
        fail(new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body longer than its content-length', declared: total } }))
        return
      }
      if (!started) {
        started = true
        exchange.writeHead(status, headers)
      }
      if (total !== undefined) {
        sendKnown(chunk, total)
      } else if (!exchange.write(chunk) && !exchange.closed) {
        waiting = true
        body.pause()
      }
    }

    function onEnd(): void {
      upstreamEnded = true
      if (finished) return
      if (!started) {
        if (total !== undefined && total > 0) {
          fail(shortBody())
          return
        }
        exchange.respond(status, headers, '')
        finish({ kind: 'delivered', bytes })
        return
      }
      if (total === undefined) {
        // uWS takes the end of a chunked body even under backpressure and drains it itself.
        exchange.end()
        finish({ kind: 'delivered', bytes })
        return
      }
      // The last chunk may still be waiting for onWritable; it finishes there.
      if (pending === undefined && bytes < total) fail(shortBody())
    }

    function onClose(): void {
      // A body closed without 'end' or 'error' was torn down from below.
      if (!upstreamEnded) fail(new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body closed early' } }))
    }

    exchange.onWritable(() => {
      if (finished) return
      if (pending !== undefined && total !== undefined) {
        // uWS may call this spuriously; the offset says how much of the chunk already left.
        const rest = pending.subarray(exchange.writeOffset() - pendingStart)
        const { ok, done } = exchange.tryEnd(rest, total)
        if (done) {
          finish({ kind: 'delivered', bytes })
        } else if (ok) {
          pending = undefined
          if (upstreamEnded) {
            if (bytes < total) fail(shortBody())
          } else {
            body.resume()
          }
        }
        return
      }
      if (waiting) {
        waiting = false
        body.resume()
      }
    })

    exchange.onClose((reason) => {
      if (reason === 'aborted') finish({ kind: 'client-gone', bytes })
    })
    if (finished) return

    body.on('data', onData)
    body.on('end', onEnd)
    body.on('error', fail)
    body.on('close', onClose)
    body.resume()
  })
}

/**
 * The same contract for an artifact body read straight off its upstream
 * connection (engine/upstream/artifact-connection.ts): each chunk is a view of
 * the connection's read buffer, handed to uWS as it is. A chunk uWS could not
 * take in full is kept, with the write offset it started at, and the
 * connection reads nothing more until `onWritable` has sent the rest and the
 * relay calls `proceed()`; so the buffer is never overwritten under a kept
 * view, and memory stays one buffer per exchange.
 */
function relayArtifact(exchange: Exchange, body: ArtifactBody, source: RelaySource, options: RelayOptions): Promise<RelayOutcome> {
  const { status } = source
  const total = declaredLength(source.headers['content-length'])
  const headers = outgoingHeaders(source.headers, options.defaultContentType ?? DEFAULT_ARTIFACT_TYPE)

  return new Promise<RelayOutcome>((resolve) => {
    let bytes = 0
    let started = false
    let finished = false
    /** Known length: the view uWS did not take in full, and the write offset it started at. */
    let pending: Uint8Array | undefined
    let pendingStart = 0
    /** Unknown length: uWS buffered the rest of a write; wait for onWritable. */
    let waiting = false

    const finish = (outcome: RelayOutcome): void => {
      if (finished) return
      finished = true
      pending = undefined
      // A delivered body ends on its own and returns its connection to the pool;
      // any other ending closes the upstream connection.
      if (outcome.kind !== 'delivered') body.destroy()
      resolve(outcome)
    }

    const fail = (err: unknown): void => {
      if (finished) return
      const error = err instanceof ServiceError ? err : transportFailure(err, options.upstream).error
      if (!started) {
        exchange.respondError(error, { head: exchange.method === 'HEAD' })
        finish({ kind: 'upstream-failed', bytes, error, afterFirstByte: false })
      } else {
        // cut() runs the exchange's close hooks synchronously, as an abort: settle first.
        finish({ kind: 'upstream-failed', bytes, error, afterFirstByte: true })
        exchange.cut()
      }
    }

    const data = (chunk: Uint8Array): boolean => {
      if (finished) return true
      bytes += chunk.byteLength
      if (total !== undefined && bytes > total) {
        fail(new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body longer than its content-length', declared: total } }))
        return true
      }
      if (!started) {
        started = true
        exchange.writeHead(status, headers)
      }
      if (total === undefined) {
        // uWS keeps what the socket did not take (a copy): only the source waits.
        if (!exchange.write(chunk) && !exchange.closed) {
          waiting = true
          return false
        }
        return true
      }
      const start = exchange.writeOffset()
      const { ok, done } = exchange.tryEnd(chunk, total)
      if (done) {
        finish({ kind: 'delivered', bytes })
        return true
      }
      if (!ok && !exchange.closed) {
        pending = chunk
        pendingStart = start
        return false
      }
      return true
    }

    const end = (): void => {
      if (finished) return
      if (!started) {
        if (total !== undefined && total > 0) {
          fail(new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body shorter than its content-length', bytes, declared: total } }))
          return
        }
        exchange.respond(status, headers, '')
        finish({ kind: 'delivered', bytes })
        return
      }
      if (total === undefined) {
        exchange.end()
        finish({ kind: 'delivered', bytes })
        return
      }
      // A known length ends in tryEnd (done); the connection framed the body by
      // that same length, so an end without `done` means uWS still holds the tail.
    }

    exchange.onWritable(() => {
      if (finished) return
      if (pending !== undefined && total !== undefined) {
        // uWS may call this spuriously; the offset says how much of the view already left.
        const rest = pending.subarray(exchange.writeOffset() - pendingStart)
        const { ok, done } = exchange.tryEnd(rest, total)
        if (done) {
          finish({ kind: 'delivered', bytes })
          body.proceed()
        } else if (ok) {
          pending = undefined
          body.proceed()
        }
        return
      }
      if (waiting) {
        waiting = false
        body.proceed()
      }
    })

    exchange.onClose((reason) => {
      if (reason === 'aborted') finish({ kind: 'client-gone', bytes })
    })
    if (finished) return

    body.attach({ data, end, error: fail })
  })
}
