/**
 * Maps what a request to an upstream throws, when no HTTP answer arrived, to
 * the service's codes (SPEC.md 4.2, 4.4: a transient upstream condition is a
 * 503 with `Retry-After`). A ServiceError (the egress guard's refusal, the
 * exchange cap) keeps its own code.
 */
import { ServiceError } from '../../errors.js'
import type { FetchErrorCause } from '../fetch-counters.js'

const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT',
])

/** OpenSSL verification results node reports as `code` on a refused certificate. */
const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED', 'CERT_REJECTED', 'CERT_SIGNATURE_FAILURE', 'CERT_REVOKED', 'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

function codeOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

export interface TransportFailure {
  readonly error: ServiceError
  /** The `service.upstream.fetch.errors` cause this failure counts under. */
  readonly cause: FetchErrorCause
}

export function transportFailure(err: unknown, upstream: string): TransportFailure {
  if (err instanceof ServiceError) {
    const cause: FetchErrorCause = err.code === 'EGRESS_REFUSED' || err.code === 'EGRESS_ADDRESS_INTERNAL' ? 'egress'
      : err.code === 'UPSTREAM_TIMEOUT' || err.code === 'EGRESS_PROXY_TIMEOUT' ? 'timeout'
        : err.code === 'UPSTREAM_DECODE' ? 'decode'
          : err.code === 'RESPONSE_TOO_LARGE' ? 'too_large' : 'connection'
    return { error: err, cause }
  }
  const code = codeOf(err) ?? 'unknown'
  if (TIMEOUT_CODES.has(code)) {
    return { error: new ServiceError('UPSTREAM_TIMEOUT', { cause: err, data: { upstream, code } }), cause: 'timeout' }
  }
  const reason = CERTIFICATE_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') ? 'certificate' : 'connection'
  return { error: new ServiceError('UPSTREAM_UNAVAILABLE', { cause: err, data: { upstream, code, reason } }), cause: 'connection' }
}
