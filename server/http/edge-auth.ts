/**
 * Edge tokens (SPEC.md 5.1): with `server.edgeTokens` set, every request
 * under a mount needs `Authorization: Bearer <one of them>`; otherwise 401
 * with the envelope and `WWW-Authenticate: Bearer` (RFC 6750 section 3).
 * A list, so a rotation keeps the old and the new token valid at once. The
 * probes (`/livez`, `/readyz`) are not under a mount and stay open: platform
 * probes carry no token.
 *
 * The comparison is constant-time in the token: each configured token and
 * the offered one are hashed (SHA-256, so lengths never differ) and compared
 * with timingSafeEqual, and every configured token is compared whatever the
 * first one answered, so timing tells neither a prefix nor which token
 * matched.
 *
 * npm, pnpm and yarn send the token from `.npmrc`
 * (`//host:port/js/:_authToken=<token>`) as `Authorization: Bearer`.
 * The edge token is this proxy's own credential: it is never forwarded to an
 * upstream (server/routes/artifact-route.ts `forwardClientCredential`).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { ServiceError } from '../../engine/errors.js'
import type { BearerToken } from '../../engine/secret.js'

export const EDGE_CHALLENGE = 'Bearer realm="registry-proxy"'

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

export class EdgeAuth {
  readonly #digests: readonly Buffer[]
  readonly refusal = new ServiceError('EDGE_UNAUTHORIZED')

  constructor(tokens: readonly BearerToken[]) {
    if (tokens.length === 0) throw new TypeError('EdgeAuth needs at least one token')
    this.#digests = tokens.map((token) => digest(token.reveal()))
  }

  /** True when `authorization` is `Bearer <one of the edge tokens>`. */
  admits(authorization: string | undefined): boolean {
    const offered = BEARER.exec(authorization ?? '')?.[1]
    if (offered === undefined) return false
    const candidate = digest(offered)
    let match = false
    for (const known of this.#digests) match = timingSafeEqual(candidate, known) || match
    return match
  }
}

/** The EdgeAuth for a configuration's `server.edgeTokens`; undefined when none is set (no edge check). */
export function edgeAuthFor(tokens: readonly BearerToken[]): EdgeAuth | undefined {
  return tokens.length === 0 ? undefined : new EdgeAuth(tokens)
}
