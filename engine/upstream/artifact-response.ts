/**
 * What the artifact relay gets back from an upstream (SPEC.md 4.4): the
 * status, the safe subset of response headers, and the body, bytes verbatim
 * (no decoding). The connections that fetch it are in
 * artifact-connection-pool.ts (which says why they are hand-written).
 */
import type { ArtifactBody } from './artifact-body.js'
import { FIELD_VALUE } from './http-field-syntax.js'

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
  readonly body: ArtifactBody | null
}

/** The allowlisted headers only, each value checked again: one that breaks RFC 9110's field syntax is dropped. */
export function pickSafeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Partial<Record<SafeArtifactHeader, string>> {
  const out: Partial<Record<SafeArtifactHeader, string>> = {}
  for (const name of SAFE_ARTIFACT_HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    const joined = Array.isArray(value) ? value.join(', ') : value
    if (FIELD_VALUE.test(joined)) out[name] = joined
  }
  return out
}
