/**
 * A host with an optional port, as an HTTP `Host` field carries it (RFC 9110
 * 7.2: `uri-host [ ":" port ]`) and as `server.allowedHosts` lists it: a
 * DNS name, an IPv4 address or a bracketed IPv6 address. Only the canonical
 * spelling is read (lower case, the form the WHATWG URL parser keeps), so a
 * name is compared by its text alone: `127.1` or `[0::1]` is no spelling of
 * a listed address, and nothing outside the host characters gets through to
 * a URL the proxy writes.
 */

export interface HostAndPort {
  /** Lower case; an IPv6 address in brackets. */
  readonly host: string
  /** The explicit port, if the text gave one. */
  readonly port: number | undefined
}

const HOST_FIELD = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/

/** The host and port of `value`, or undefined when it is not one in canonical form. */
export function parseHostAndPort(value: string): HostAndPort | undefined {
  if (value.length === 0 || value.length > 261) return undefined
  const match = HOST_FIELD.exec(value.toLowerCase())
  if (match === null) return undefined
  const host = match[1]!
  const port = match[2] === undefined ? undefined : Number(match[2])
  if (port !== undefined && (port < 1 || port > 65535)) return undefined
  let parsed: URL
  try {
    parsed = new URL(`http://${host}/`)
  } catch {
    return undefined
  }
  return parsed.hostname === host ? { host, port } : undefined
}

/** `host[:port]` as written in a URL. */
export function formatHostAndPort(value: HostAndPort): string {
  return value.port === undefined ? value.host : `${value.host}:${value.port}`
}
