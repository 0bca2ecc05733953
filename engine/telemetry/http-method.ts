/**
 * The `http.request.method` attribute shared by the server requests, the
 * server spans and the client durations: one rule, so the three series agree.
 */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'])

/** `http.request.method`: a method outside RFC 9110 and PATCH is `_OTHER` (OTel HTTP semantic conventions), so a client cannot grow the series. */
export function methodAttribute(method: string): string {
  return KNOWN_METHODS.has(method) ? method : '_OTHER'
}
