/**
 * Which response header fields the front door writes. Every field passes
 * here on its way to uWS, whatever route built it: uWS writes the bytes it
 * is given, so a CR, LF or NUL in a value would split the response or forge
 * headers (Set-Cookie, Location) at the client, and a framing field from a
 * route would contradict the one uWS writes (two Content-Lengths, or a
 * Transfer-Encoding beside a Content-Length: a desynchronised connection).
 */
import { FIELD_VALUE, HEADER_NAME } from '../../engine/upstream/http-field-syntax.js'

/**
 * Never taken from a route: uWS writes the framing (Content-Length or
 * Transfer-Encoding) and Date itself, the Exchange writes Connection, and the
 * rest are connection-specific (RFC 9110 section 7.6.1).
 */
const NOT_FROM_ROUTES: ReadonlySet<string> = new Set([
  'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer', 'date',
])

/**
 * The field to write as `[name, value]`, the name lower-cased and the value
 * without surrounding whitespace (which RFC 9110 section 5.5 says is not part
 * of it), or undefined when it must not be written: a name that is not a
 * token, a value with a control byte, or a field reserved above.
 */
export function responseField(name: string, value: string | undefined): [string, string] | undefined {
  if (value === undefined || !HEADER_NAME.test(name)) return undefined
  // Checked as a token first: toLowerCase maps some non-ASCII letters (U+212A) onto ASCII ones.
  const lower = name.toLowerCase()
  if (NOT_FROM_ROUTES.has(lower)) return undefined
  const trimmed = value.replace(/^[\t ]+|[\t ]+$/g, '')
  return FIELD_VALUE.test(trimmed) ? [lower, trimmed] : undefined
}
