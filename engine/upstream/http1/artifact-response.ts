/**
 * What the artifact relay gets back from an upstream (SPEC.md 4.4): the
 * status, the safe subset of response headers, and the body, bytes verbatim
 * (no decoding). The connections that fetch it are in
 * artifact-connection-pool.ts (which says why they are hand-written).
 */
import type { ArtifactBody } from './artifact-body.js'
import { CONTENT_LENGTH, FIELD_VALUE } from '../http-field-syntax.js'

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

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
/** `1#token` (RFC 9110 section 5.6.1): a comma-separated list of tokens. */
const TOKEN_LIST = new RegExp(String.raw`^${TOKEN}(?:[ \t]*,[ \t]*${TOKEN})*$`)
/** quoted-string (RFC 9110 section 5.6.4). */
const QUOTED = String.raw`"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"`
/** parameters (RFC 9110 section 5.6.6). */
const PARAMETERS = String.raw`(?:[ \t]*;[ \t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*`

/**
 * What each allowlisted header's value must look like (RFC 9110; every
 * value also passes FIELD_VALUE, so no CR, LF, NUL or other control byte).
 * Where the grammar is a singleton, a repeated header (joined with ', ' by
 * the head parser) fails it and is dropped: a client must not get two
 * lengths, two types or two validators. Dates and Cache-Control are only
 * field-syntax checked: an invalid Expires means "already expired"
 * (RFC 9111 section 5.3), which a client reads correctly as it is.
 */
const VALUE_SYNTAX: Readonly<Record<SafeArtifactHeader, RegExp>> = {
  'content-length': CONTENT_LENGTH,
  // media-type = type "/" subtype parameters (section 8.3.1).
  'content-type': new RegExp(`^${TOKEN}/${TOKEN}${PARAMETERS}$`),
  'content-encoding': TOKEN_LIST,
  // entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE (section 8.8.3).
  etag: /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/,
  'last-modified': /^.+$/,
  'cache-control': /^.+$/,
  expires: /^.+$/,
  // Age = delta-seconds (RFC 9111 section 5.1).
  age: /^\d{1,10}$/,
  'accept-ranges': TOKEN_LIST,
}

/**
 * The allowlisted headers only, each value checked against its own syntax
 * (VALUE_SYNTAX) and RFC 9110's field syntax: one that fails is dropped,
 * never repaired. Nothing else an upstream sends (Set-Cookie, Location,
 * hop-by-hop fields) is picked.
 */
export function pickSafeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Partial<Record<SafeArtifactHeader, string>> {
  const out: Partial<Record<SafeArtifactHeader, string>> = {}
  for (const name of SAFE_ARTIFACT_HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    const joined = Array.isArray(value) ? value.join(', ') : value
    if (FIELD_VALUE.test(joined) && VALUE_SYNTAX[name].test(joined)) out[name] = joined
  }
  return out
}
