/**
 * The streaming relay: an artifact body to one Exchange, bytes verbatim, with
 * bounded memory and backpressure end to end (SPEC.md 1.3, 4.4; STYLE.md
 * rules 1-3).
 *
 * The body is read straight off its upstream connection
 * (engine/upstream/http1/artifact-body.ts): each chunk is a view of the
 * connection's read buffer, handed to uWS as it is, nothing allocated per
 * chunk. A view uWS could not take in full is kept, with the write offset it
 * started at, and the connection reads nothing more until `onWritable` has
 * sent the rest and the relay calls `proceed()`; so the buffer is never
 * overwritten under a kept view, memory stays one buffer per exchange, and
 * TCP holds the upstream back.
 *
 * - Known length (`content-length`): `tryEnd` chunk by chunk, as in
 *   uWebSockets.js examples/VideoStreamer.js; uWS writes the Content-Length
 *   itself and copies nothing it could not send.
 * - Unknown length: `write` (chunked); uWS keeps the unsent rest of that one
 *   chunk, and the source waits for `onWritable`.
 * - Status and headers leave with the first byte, not before, so an upstream
 *   that fails before its first byte still gets the serve error model
 *   (403/404/500/503 with Retry-After). After the first byte a failure cuts
 *   the connection: the client sees a short body, never a silently
 *   truncated success. A body that runs past its declared length is such a
 *   failure (one that ends short is refused by the connection's framing).
 * - Only the headers named in RELAYED_HEADERS reach the client, each value
 *   checked again here (and once more by the Exchange): whatever else an
 *   upstream sends (Set-Cookie, Location, hop-by-hop fields) stays behind.
 * - The client going away destroys the upstream body, which aborts the
 *   upstream request and closes its socket.
 */
import { ServiceError } from '../../engine/errors.js'
import type { ArtifactBody } from '../../engine/upstream/http1/artifact-body.js'
import { CONTENT_LENGTH, FIELD_VALUE } from '../../engine/upstream/http-field-syntax.js'
import { transportFailure } from '../../engine/upstream/http1/transport-failure.js'
import type { Exchange } from './exchange.js'

export const DEFAULT_ARTIFACT_TYPE = 'application/octet-stream'

/**
 * The upstream response headers a relay passes on (SPEC.md 4.1 "safe
 * response headers"): what describes the bytes and their caching.
 * `content-encoding` goes with the bytes because they are relayed verbatim:
 * an encoded body without it would reach the client corrupted.
 * `content-length` is not here: uWS writes the length it sends. Nor is
 * `accept-ranges`: the relay forwards no Range, so it serves no ranges.
 */
export const RELAYED_HEADERS = ['content-type', 'content-encoding', 'etag', 'last-modified', 'cache-control', 'expires', 'age'] as const

export interface RelaySource {
  readonly status: number
  /** Response headers by lower-case name; `content-length` gives the total size. Only RELAYED_HEADERS are passed on. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: ArtifactBody
}

/** A bound on a relayed body (the py `.metadata` relay): over it, `tooLarge` is the failure. */
export interface RelayBound {
  readonly maxBytes: number
  readonly tooLarge: ServiceError
}

export interface RelayOptions {
  /** The upstream's `host:port`, for coding a failure that has no code of its own. */
  readonly upstream: string
  /** Content type when the upstream names none; default application/octet-stream. */
  readonly defaultContentType?: string
  /**
   * A declared length over it fails before the first byte (the serve error
   * model answers); a counted one fails where it passes the bound (the
   * connection is cut). Unset: no bound, an artifact is as long as it is.
   */
  readonly bound?: RelayBound
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

/** Parses a Content-Length value; undefined when absent or not 1 to 15 digits (a safe integer). */
export function declaredLength(value: string | undefined): number | undefined {
  return value === undefined || !CONTENT_LENGTH.test(value) ? undefined : Number(value)
}

/**
 * The headers a relayed answer carries: RELAYED_HEADERS only, a value that
 * breaks RFC 9110 field syntax dropped, never written.
 */
export function relayedHeaders(headers: RelaySource['headers']): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of RELAYED_HEADERS) {
    const value = headers[name]
    if (value !== undefined && FIELD_VALUE.test(value)) out[name] = value
  }
  return out
}

export function relayArtifact(exchange: Exchange, source: RelaySource, options: RelayOptions): Promise<RelayOutcome> {
  const { status, body } = source
  const { bound } = options
  const total = declaredLength(source.headers['content-length'])
  const headers = relayedHeaders(source.headers)
  headers['content-type'] ??= options.defaultContentType ?? DEFAULT_ARTIFACT_TYPE

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
      if (bound !== undefined && bytes > bound.maxBytes) {
        fail(bound.tooLarge)
        return true
      }
      if (total !== undefined && bytes > total) {
        fail(new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream: options.upstream, reason: 'body longer than its content-length', declared: total } }))
        return true
      }
      if (!started) {
        started = true
        // Held by the Exchange and sent in the same cork as this first chunk.
        exchange.writeHead(status, headers)
      }
      if (total === undefined) {
        // uWS keeps what the socket did not take (a copy of this one chunk): only the source waits.
        if (!exchange.write(chunk) && !exchange.closed) {
          waiting = true
          return false
        }
        return true
      }
      // Where this view starts in uWS's write offset: every earlier byte was taken
      // (a kept view stops the source until onWritable has sent all of it), so it
      // is the body bytes before this view; no call into uWS per chunk to ask.
      const start = bytes - chunk.byteLength
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
        // uWS takes the end of a chunked body even under backpressure and drains it itself.
        exchange.end()
        finish({ kind: 'delivered', bytes })
        return
      }
      // A known length ends in tryEnd (done); the connection framed the body by
      // that same length, so an end without `done` means uWS still holds the
      // tail, and onWritable finishes it.
    }

    exchange.onWritable(() => {
      if (finished) return true
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
        return ok
      }
      if (waiting) {
        waiting = false
        body.proceed()
      }
      return true
    })

    exchange.onClose((reason) => {
      if (reason === 'aborted') finish({ kind: 'client-gone', bytes })
    })
    if (finished) return
    if (bound !== undefined && total !== undefined && total > bound.maxBytes) {
      fail(bound.tooLarge)
      return
    }

    body.attach({ data, end, error: fail })
  })
}
