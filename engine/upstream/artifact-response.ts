/**
 * What the artifact relay gets back from an upstream (SPEC.md 4.4): the
 * status, the safe subset of response headers, and the body as undici's own
 * Readable, bytes verbatim (no decoding). The relay pauses and resumes it for
 * backpressure and destroys it when the client goes away; destroying it
 * aborts the upstream request and closes its socket.
 */
import type { Readable } from 'node:stream'
import { ServiceError } from '../errors.js'

/**
 * Response headers relayed to the client. `content-encoding` is kept beside
 * the caching and length headers because the bytes are relayed verbatim: an
 * encoded body without its header would reach the client corrupted.
 */
export const SAFE_ARTIFACT_HEADERS = [
  'content-length', 'content-type', 'content-encoding', 'etag', 'last-modified', 'cache-control', 'expires', 'age', 'accept-ranges',
] as const
export type SafeArtifactHeader = (typeof SAFE_ARTIFACT_HEADERS)[number]

export interface ArtifactResponse {
  readonly statusCode: number
  readonly headers: Readonly<Partial<Record<SafeArtifactHeader, string>>>
  /**
   * The body for every answer that has one (a non-success too: the serve
   * path decides), null for HEAD, 204 and 304. The caller MUST consume or
   * destroy it.
   */
  readonly body: Readable | null
}

export function pickSafeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Partial<Record<SafeArtifactHeader, string>> {
  const out: Partial<Record<SafeArtifactHeader, string>> = {}
  for (const name of SAFE_ARTIFACT_HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    out[name] = Array.isArray(value) ? value.join(', ') : value
  }
  return out
}

/**
 * Fails a body that stays paused (or is never read) longer than `capMs`
 * (SPEC.md 8: a paused upstream read fails after the cap on that exchange).
 * undici's own body timeout does not run while the reader is paused, so
 * without this a stalled client would hold an upstream socket forever.
 *
 * The cap watches flowing-mode reading (`on('data')` with pause()/resume(),
 * or pipe/pipeline), which is how the relay reads (STYLE.md rule 3). A
 * consumer that pulls with read() or async iteration emits no pause or
 * resume events, so the cap leaves it alone rather than guess.
 */
export function capPausedRead(body: Readable, capMs: number, upstream: string): void {
  let timer: NodeJS.Timeout | undefined
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  const start = (): void => {
    stop()
    timer = setTimeout(() => {
      timer = undefined
      if (body.listenerCount('readable') > 0) return // pulled, not paused: not ours to judge
      body.destroy(new ServiceError('UPSTREAM_TIMEOUT', { data: { upstream, reason: 'paused read past its cap' } }))
    }, capMs)
    timer.unref()
  }
  body.on('pause', start)
  body.on('resume', stop)
  body.once('close', stop)
  start() // not flowing until the relay starts reading
}
