/**
 * `{base_url}` of one request (issue 32 item 5). With `server.baseUrl` set,
 * every artifact URL the proxy writes starts with it. Unset, they follow the
 * origin the client itself used: a client that addressed the proxy as
 * `127.0.0.1` gets tarball URLs on `127.0.0.1`, so npm sends them the edge
 * token it keeps for that origin (it keys tokens by origin and path, and
 * answers a tarball on another origin with `E401 ... npm login`).
 *
 * The origin is the `Host` field, or `X-Forwarded-Host` and
 * `X-Forwarded-Proto` when the connection comes from one of
 * `server.trustedProxies` (from anyone else they are ignored: a client could
 * name any host). The host must be one this proxy answers as, so a forged
 * `Host` cannot make the proxy write URLs that point clients elsewhere:
 * - the listener's own names (loopback, the machine's host name and
 *   interface addresses, `server.host`) on the listener's own ports, or
 * - an entry of `server.allowedHosts`: `host` (any port) or `host:port`.
 * Anything else is refused with 400 (HOST_NOT_ALLOWED) rather than answered
 * with another origin's URLs: a fallback would hand the client exactly the
 * cross-origin URLs this exists to avoid. A request without `Host`
 * (HTTP/1.0) gets the derived default, `http://localhost:{port}`.
 */
import type { BlockList } from 'node:net'
import { isIP } from 'node:net'
import type { NetworkInterfaceInfo } from 'node:os'
import { formatHostAndPort, parseHostAndPort, type HostAndPort } from '../../engine/config/host-and-port.js'
import { ServiceError } from '../../engine/errors.js'
import { blockListOf, embeddedIpv4 } from '../../engine/upstream/egress-guard.js'

/** What a request offers: its header fields and the peer's address. */
export interface OriginSource {
  header(name: string): string | undefined
  readonly remoteAddress: string
}

export interface RequestOriginOptions {
  /** `server.baseUrl` when configured: every request uses it. */
  readonly configured: string | undefined
  /** The derived default, for a request without `Host`. */
  readonly fallback: string
  /** The listener's own names (listenerNames). */
  readonly ownNames: readonly string[]
  /** The ports the listener accepts on (`server.port`, `server.compatPort`). */
  readonly ownPorts: readonly number[]
  /** `server.allowedHosts`. */
  readonly allowedHosts: readonly string[]
  /** `server.trustedProxies`: CIDR ranges. */
  readonly trustedProxies: readonly string[]
}

/** The names a listener bound to `host` is reached by: loopback, the machine's name and addresses, the bound address. */
export function listenerNames(host: string, hostname: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] {
  const names = new Set<string>(['localhost', '127.0.0.1', '[::1]'])
  const add = (name: string): void => {
    const family = isIP(name)
    // A zoned IPv6 address (fe80::1%eth0) has no URL form.
    const text = family === 6 ? `[${name}]` : name
    if (parseHostAndPort(text) !== undefined) names.add(text.toLowerCase())
  }
  if (host !== '0.0.0.0' && host !== '::' && host !== '') add(host)
  if (hostname !== '') add(hostname)
  for (const entries of Object.values(interfaces)) for (const entry of entries ?? []) add(entry.address)
  return [...names]
}

function firstElement(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const first = value.split(',')[0]?.trim()
  return first === undefined || first === '' ? undefined : first
}

export class RequestOrigin {
  readonly #configured: string | undefined
  readonly #fallback: string
  readonly #ownNames: ReadonlySet<string>
  readonly #ownPorts: ReadonlySet<number>
  readonly #anyPort = new Set<string>()
  readonly #withPort = new Set<string>()
  readonly #trusted: BlockList | undefined

  constructor(options: RequestOriginOptions) {
    this.#configured = options.configured
    this.#fallback = options.fallback
    this.#ownNames = new Set(options.ownNames)
    this.#ownPorts = new Set(options.ownPorts)
    for (const entry of options.allowedHosts) {
      // Checked at load (engine/config/checks.ts); an unreadable entry admits nothing.
      const parsed = parseHostAndPort(entry)
      if (parsed === undefined) continue
      if (parsed.port === undefined) this.#anyPort.add(parsed.host)
      else this.#withPort.add(formatHostAndPort(parsed))
    }
    this.#trusted = options.trustedProxies.length === 0 ? undefined : blockListOf(options.trustedProxies)
  }

  /** True when every request gets the configured base URL. */
  get fixed(): boolean { return this.#configured !== undefined }

  /**
   * The base URL artifact URLs in this request's answer start with, without
   * a trailing slash. Throws HOST_NOT_ALLOWED (400) for a host the proxy
   * does not answer as. Read it while the request is current (uWS).
   */
  baseUrlOf(request: OriginSource): string {
    if (this.#configured !== undefined) return this.#configured
    let scheme = 'http'
    let field = request.header('host')
    if (this.#trusted !== undefined && this.#isTrusted(request.remoteAddress)) {
      const proto = firstElement(request.header('x-forwarded-proto'))?.toLowerCase()
      if (proto === 'http' || proto === 'https') scheme = proto
      field = firstElement(request.header('x-forwarded-host')) ?? field
    }
    if (field === undefined) return this.#fallback
    const parsed = parseHostAndPort(field.trim())
    if (parsed === undefined || !this.#admits(parsed, scheme)) throw refusal(parsed)
    return `${scheme}://${formatHostAndPort(parsed)}`
  }

  #admits(value: HostAndPort, scheme: string): boolean {
    const port = value.port ?? (scheme === 'https' ? 443 : 80)
    if (this.#ownNames.has(value.host) && this.#ownPorts.has(port)) return true
    return this.#anyPort.has(value.host) || this.#withPort.has(`${value.host}:${port}`)
  }

  #isTrusted(address: string): boolean {
    const v4 = embeddedIpv4(address) ?? (isIP(address) === 4 ? address : undefined)
    if (v4 !== undefined) return this.#trusted?.check(v4, 'ipv4') === true
    return isIP(address) === 6 && this.#trusted?.check(address, 'ipv6') === true
  }
}

function refusal(parsed: HostAndPort | undefined): ServiceError {
  // Only a name that parsed is echoed: it holds host characters alone.
  if (parsed === undefined) return new ServiceError('HOST_NOT_ALLOWED', { message: 'the request\'s host is not a host name: set server.baseUrl, or address the proxy by one of its names' })
  const named = formatHostAndPort(parsed)
  return new ServiceError('HOST_NOT_ALLOWED', {
    message: `this proxy does not answer as ${named}: artifact URLs follow the request's host, and that one is neither the listener's own name and port nor in server.allowedHosts; set server.baseUrl, or list ${named} in server.allowedHosts`,
    data: { host: named },
  })
}
