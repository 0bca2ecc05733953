/**
 * The egress guard of one upstream (SPEC.md 4.4 public leg 4, 5.3).
 *
 * The UNTRUSTED public side: https only; a URL carrying userinfo is refused;
 * the host must be on the allowlist (always the public upstream's own host,
 * plus `allowHosts`); and every address it connects to, literal or resolved
 * by DNS, must lie outside the internal ranges unless `allowInternalRanges`
 * exempts it. The address check runs inside the connector, AFTER resolution,
 * on the very addresses the socket is given, so a public name that resolves
 * to loopback (or rebinds to it later) is refused.
 *
 * The TRUSTED private side is exempt from the internal-range block (SPEC.md
 * 4.4 private leg 4) and may be plain http; instead it only ever talks to its
 * own configured origin, so the credential it carries cannot leave it.
 *
 * A refusal by policy (scheme, userinfo, allowlist, origin) is
 * ServiceError('EGRESS_REFUSED', 403). An address in an internal range is
 * EGRESS_ADDRESS_INTERNAL (502): on a network whose DNS answers the public
 * registry with a reserved address that is a configuration problem of the
 * deployment, not a verdict on the package, so the answer names the host,
 * the address, the range and the setting that admits it, and the guard
 * logs it once per host (issue 32 item 4).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { ServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'

/** The warning logged once per host whose address the internal-range block refuses. */
export const INTERNAL_ADDRESS_LOG = 'an upstream host resolves to an internal address; the egress policy refuses it'

/**
 * Ranges no untrusted egress may reach: "this network"/unspecified, private
 * (RFC 1918), CGNAT (RFC 6598), loopback, link-local, IETF protocol
 * assignments, benchmarking, documentation nets, multicast, reserved and
 * broadcast; IPv6 unspecified/loopback and the deprecated IPv4-compatible
 * block (::/96), unique-local (fc00::/7), link-local (fe80::/10), the
 * deprecated site-local (fec0::/10), multicast (ff00::/8) and documentation.
 * IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses are judged
 * by the IPv4 address they carry.
 */
export const INTERNAL_IPV4_RANGES: readonly string[] = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.0.0.0/24', '192.0.2.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24',
  '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
]
export const INTERNAL_IPV6_RANGES: readonly string[] = [
  '::/96', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', '2001:db8::/32',
]

type Family = 'ipv4' | 'ipv6'

function parseCidr(cidr: string): { address: string, prefix: number, family: Family } {
  const slash = cidr.indexOf('/')
  const address = slash < 0 ? cidr : cidr.slice(0, slash)
  const version = isIP(address)
  if (version === 0) throw new ServiceError('CONFIG_INVALID', { message: `not a CIDR range: ${cidr}` })
  const max = version === 4 ? 32 : 128
  const prefix = slash < 0 ? max : Number(cidr.slice(slash + 1))
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (slash >= 0 && !/^\d+$/.test(cidr.slice(slash + 1)))) {
    throw new ServiceError('CONFIG_INVALID', { message: `not a CIDR range: ${cidr}` })
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' }
}

export function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList()
  for (const cidr of cidrs) {
    const { address, prefix, family } = parseCidr(cidr)
    list.addSubnet(address, prefix, family)
  }
  return list
}

function hexPairToIpv4(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

/**
 * The IPv4 address an IPv6 address stands for when it is IPv4-mapped
 * (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d), else undefined.
 */
export function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase()
  for (const prefix of ['::ffff:', '64:ff9b::', '0:0:0:0:0:ffff:', '64:ff9b:0:0:0:0:']) {
    if (!lower.startsWith(prefix)) continue
    const rest = lower.slice(prefix.length)
    if (isIP(rest) === 4) return rest
    const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest)
    if (m !== null) return hexPairToIpv4(parseInt(m[1] ?? '0', 16), parseInt(m[2] ?? '0', 16))
  }
  return undefined
}

/** The address and family the range check judges: an embedded IPv4 address stands for itself. */
function judgedAddress(address: string): [string, Family] {
  const bare = bareHost(address)
  const v4 = isIP(bare) === 6 ? embeddedIpv4(bare) : undefined
  return v4 !== undefined ? [v4, 'ipv4'] : [bare, isIP(bare) === 4 ? 'ipv4' : 'ipv6']
}

const INTERNAL_RANGES: readonly { readonly cidr: string, readonly list: BlockList }[] = [...INTERNAL_IPV4_RANGES, ...INTERNAL_IPV6_RANGES]
  .map((cidr) => ({ cidr, list: blockListOf([cidr]) }))

/** The internal range (INTERNAL_IPV4_RANGES, INTERNAL_IPV6_RANGES) an address lies in, for the refusal's wording. */
export function internalRangeOf(address: string): string | undefined {
  const [ip, family] = judgedAddress(address)
  if (isIP(ip) === 0) return undefined
  return INTERNAL_RANGES.find((range) => range.list.check(ip, family))?.cidr
}

/** Lower-case host name with IPv6 brackets removed. */
function bareHost(hostname: string): string {
  const lower = hostname.toLowerCase()
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower
}

/** `host:port` with the scheme's default port filled in (SPEC.md 4.4: authority). */
export function authorityOf(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : ''
  return `${url.hostname.toLowerCase()}:${port}`
}

export interface EgressGuardOptions {
  /** The upstream's configured base URL. */
  readonly upstreamUrl: URL
  /** True for the private (trusted) upstream; false for the public one. */
  readonly trusted: boolean
  /** Extra hosts the untrusted side may reach, besides the upstream's own host. */
  readonly allowHosts?: readonly string[]
  /** CIDR ranges exempt from the internal-range block, e.g. ["127.0.0.0/8"] in tests. */
  readonly allowInternalRanges?: readonly string[]
  /** The configuration key of `allowInternalRanges`, named in the refusal; the bare name when unset. */
  readonly allowInternalRangesKey?: string
  /** Where the once-per-host warning of a refused internal address goes; none when unset. */
  readonly logger?: Logger
  /** Resolver; node's dns.lookup unless a test injects one. */
  readonly resolve?: typeof dnsLookup
}

export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

export class EgressGuard {
  readonly #trusted: boolean
  readonly #origin: string
  readonly #allowHosts: ReadonlySet<string>
  readonly #internal: BlockList
  readonly #exempt: BlockList
  readonly #resolve: typeof dnsLookup
  readonly #rangesKey: string
  readonly #logger: Logger | undefined
  /** Hosts already warned about; bounded by the allowlist, the only hosts the untrusted side resolves. */
  readonly #warned = new Set<string>()

  constructor(options: EgressGuardOptions) {
    const url = options.upstreamUrl
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new ServiceError('CONFIG_INVALID', { message: `an upstream URL must be http or https: ${url.protocol}` })
    }
    if (!options.trusted && url.protocol !== 'https:') {
      throw new ServiceError('CONFIG_INVALID', { message: 'the public upstream must be https (SPEC.md 5.3)' })
    }
    this.#trusted = options.trusted
    this.#origin = url.origin
    this.#allowHosts = new Set([bareHost(url.hostname), ...(options.allowHosts ?? []).map(bareHost)])
    this.#internal = blockListOf([...INTERNAL_IPV4_RANGES, ...INTERNAL_IPV6_RANGES])
    this.#exempt = blockListOf(options.allowInternalRanges ?? [])
    this.#resolve = options.resolve ?? dnsLookup
    this.#rangesKey = options.allowInternalRangesKey ?? 'allowInternalRanges'
    this.#logger = options.logger
    this.lookup = this.lookup.bind(this)
  }

  get trusted(): boolean { return this.#trusted }

  /** True when an untrusted connection to `address` must be refused. */
  isInternal(address: string): boolean {
    const [ip, family] = judgedAddress(address)
    if (isIP(ip) === 0) return true // not an address at all: refuse rather than guess
    return this.#internal.check(ip, family) && !this.#exempt.check(ip, family)
  }

  /** Refuses an address the untrusted side must not reach; the trusted side passes. */
  checkAddress(address: string, host = address): void {
    if (this.#trusted) return
    if (this.isInternal(address)) throw this.#internalRefusal(host, address)
  }

  /**
   * The 502 naming host, address, range and the setting that admits it,
   * logged at warn the first time this host is refused (a resolver answer
   * does not change per request, so one line per host says it all).
   */
  #internalRefusal(host: string, address: string): ServiceError {
    const range = internalRangeOf(address) ?? 'not an IP address'
    const message = `the upstream host ${host} resolves to ${address}, in the internal range ${range}, which the egress policy refuses; `
      + `if that address is intended, list the range in ${this.#rangesKey}`
    const data = { host, address, range, setting: this.#rangesKey }
    if (this.#logger !== undefined && !this.#warned.has(host)) {
      this.#warned.add(host)
      this.#logger.warn(INTERNAL_ADDRESS_LOG, data)
    }
    return new ServiceError('EGRESS_ADDRESS_INTERNAL', { message, data })
  }

  /**
   * Checks a URL before any request is made: scheme, userinfo, origin (trusted)
   * or allowlist and a literal address (untrusted).
   */
  checkUrl(url: URL): void {
    const host = bareHost(url.hostname)
    if (url.username !== '' || url.password !== '') {
      throw new ServiceError('EGRESS_REFUSED', { data: { host, reason: 'userinfo in the URL' } })
    }
    if (this.#trusted) {
      if (url.origin !== this.#origin) {
        throw new ServiceError('EGRESS_REFUSED', { data: { host, reason: 'not the private upstream origin' } })
      }
      return
    }
    if (url.protocol !== 'https:') {
      throw new ServiceError('EGRESS_REFUSED', { data: { host, reason: 'not https' } })
    }
    if (!this.#allowHosts.has(host)) {
      throw new ServiceError('EGRESS_REFUSED', { data: { host, reason: 'host not on the allowlist' } })
    }
    if (isIP(host) !== 0) this.checkAddress(host)
  }

  /**
   * A `lookup` for net/tls.connect: resolves, then refuses when ANY address
   * is internal (a mixed answer is treated as hostile, not filtered).
   */
  lookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
    this.#resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) { callback(err, []); return }
      const list = addresses as unknown as LookupAddress[]
      if (!this.#trusted) {
        const bad = list.find((a) => this.isInternal(a.address))
        if (bad !== undefined) {
          callback(this.#internalRefusal(hostname, bad.address) as unknown as NodeJS.ErrnoException, [])
          return
        }
      }
      if (options.all === true) { callback(null, list); return }
      const first = list[0]
      if (first === undefined) {
        const e: NodeJS.ErrnoException = Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' })
        callback(e, [])
        return
      }
      callback(null, first.address, first.family)
    })
  }
}

/**
 * The tarball-host policy (SPEC.md 4.4 public leg 3-4): by default the
 * authoritative tarball URL must have the public upstream's own host AND
 * port; `respectUpstreamTarballHost` admits another authority, which the
 * public client's guard then still holds to https, the allowlist and the
 * internal-range block. Returns the parsed URL.
 */
export function checkTarballAuthority(tarballUrl: string | URL, publicUpstreamUrl: URL, respectUpstreamTarballHost: boolean): URL {
  let url: URL
  try {
    url = typeof tarballUrl === 'string' ? new URL(tarballUrl) : tarballUrl
  } catch {
    throw new ServiceError('TARBALL_HOST_REFUSED', { data: { reason: 'not a URL' } })
  }
  if (respectUpstreamTarballHost) return url
  const want = authorityOf(publicUpstreamUrl)
  const got = authorityOf(url)
  if (got !== want) {
    throw new ServiceError('TARBALL_HOST_REFUSED', { data: { authority: got, upstream: want } })
  }
  return url
}
