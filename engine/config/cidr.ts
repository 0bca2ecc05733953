/**
 * A CIDR range as the egress guard reads `allowInternalRanges`
 * (engine/upstream/egress-guard.ts): an IPv4 or IPv6 address, optionally
 * with a decimal prefix length no longer than the address. The loader checks
 * it so that a range the guard would refuse at boot is a configuration
 * problem that `service check-config` reports too.
 */
import { isIP } from 'node:net'

export function isCidr(value: string): boolean {
  const slash = value.indexOf('/')
  const family = isIP(slash < 0 ? value : value.slice(0, slash))
  if (family === 0) return false
  if (slash < 0) return true
  const bits = value.slice(slash + 1)
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)
}
