/**
 * The NO_PROXY list of the forward proxy (docs/security.md#forward-proxy):
 * which upstream hosts are reached directly, not through the proxy.
 *
 * The conventional syntax (curl's, undici's EnvHttpProxyAgent's): entries
 * separated by commas or white space; `*` alone bypasses the proxy for every
 * host; `host` matches that host and every name under it (`.host` and
 * `*.host` say the same); `host:port` (`[v6]:port`) only on that port; an IP
 * literal matches a target written as that literal; a CIDR range
 * (`10.0.0.0/8`, `::1/128`, as curl and Go read them) matches a target
 * written as an address in it, on any port. Entries are matched against
 * the upstream URL's host name as configured, before any resolution: a
 * name is never resolved to be matched against a range.
 */
import { isIP, type BlockList } from 'node:net'
import { isCidr } from '../config/cidr.js'
import { blockListOf } from './egress-guard.js'

interface Entry {
  /** Lower-case host or domain, without a leading `*.` or `.` and without brackets. */
  readonly host: string
  /** Only on this port; any port when undefined. */
  readonly port: number | undefined
}

function parseEntry(raw: string): Entry | undefined {
  let text = raw.trim().toLowerCase()
  if (text === '') return undefined
  let port: number | undefined
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text)
  if (bracketed !== null) {
    text = bracketed[1] as string
    port = bracketed[2] === undefined ? undefined : Number(bracketed[2])
  } else if (isIP(text) !== 6) {
    // A bare IPv6 literal has colons of its own; anything else may end in `:port`.
    const m = /^(.*):(\d+)$/.exec(text)
    if (m !== null) { text = m[1] as string; port = Number(m[2]) }
  }
  if (text.startsWith('*.')) text = text.slice(2)
  else if (text.startsWith('.')) text = text.slice(1)
  if (text === '') return undefined
  return { host: text, port }
}

/** A CIDR entry (`[v6]/n` taken as `v6/n`) as the egress guard reads ranges, or undefined for any other entry. */
function rangeOf(entry: string): string | undefined {
  if (!entry.includes('/')) return undefined
  const range = entry.replace(/^\[([^\]]+)\]\//, '$1/')
  return isCidr(range) ? range : undefined
}

export class NoProxyList {
  readonly #entries: readonly Entry[]
  /** The CIDR entries: IP-literal targets within them go direct. */
  readonly #ranges: BlockList
  readonly #all: boolean
  /** The list as given, for the boot line that says how egress leaves. */
  readonly entries: readonly string[]

  constructor(entries: readonly string[]) {
    const split = entries.flatMap((e) => e.split(/[\s,]+/)).map((e) => e.trim()).filter((e) => e !== '')
    this.entries = split
    this.#all = split.includes('*')
    const hosts: string[] = []
    const ranges: string[] = []
    for (const entry of split) {
      if (entry === '*') continue
      const range = rangeOf(entry)
      if (range === undefined) hosts.push(entry)
      else ranges.push(range)
    }
    this.#entries = hosts.map(parseEntry).filter((e): e is Entry => e !== undefined)
    this.#ranges = blockListOf(ranges)
  }

  /** Parses a NO_PROXY variable's value. */
  static parse(value: string | undefined): NoProxyList {
    return new NoProxyList(value === undefined ? [] : [value])
  }

  /** True when `hostname` (a URL's host name) on `port` is reached without the proxy. */
  bypasses(hostname: string, port: number): boolean {
    if (this.#all) return true
    const lower = hostname.toLowerCase()
    const host = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower
    const version = isIP(host)
    if (version !== 0 && this.#ranges.check(host, version === 4 ? 'ipv4' : 'ipv6')) return true
    for (const entry of this.#entries) {
      if (entry.port !== undefined && entry.port !== port) continue
      if (host === entry.host) return true
      if (isIP(entry.host) === 0 && host.endsWith(`.${entry.host}`)) return true
    }
    return false
  }
}
