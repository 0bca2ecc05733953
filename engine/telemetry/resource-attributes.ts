/**
 * The resource attributes this service stamps on every signal (SPEC.md 6.3):
 * its own identity first, then the operator's `OTEL_RESOURCE_ATTRIBUTES` in
 * key order, within three caps: 8192 bytes in total, 4096 bytes per
 * attribute (key and value, UTF-8) and 180 attributes. An attribute that
 * does not fit is left out and named in one boot warning; later, smaller
 * ones may still fit.
 *
 * The operator's `service.name`, `service.version` and
 * `deployment.environment(.name)` are not admitted again: they already fed
 * the resolved identity (engine/log/identity.ts), where the `VENDOR_*`
 * variables win.
 */
import type { Identity } from '../log/identity.js'

export const MAX_RESOURCE_BYTES = 8192
export const MAX_ATTRIBUTE_BYTES = 4096
export const MAX_ATTRIBUTES = 180

export const RESOURCE_CAP_WARNING = 'telemetry: resource attributes left out'

const IDENTITY_KEYS = new Set(['service.name', 'service.version', 'deployment.environment', 'deployment.environment.name'])

export interface CappedAttributes {
  readonly attributes: Readonly<Record<string, string>>
  /** Keys that did not fit, in the order they were tried. */
  readonly rejected: readonly string[]
}

export function identityAttributes(identity: Identity): Record<string, string> {
  return {
    'service.name': identity.service,
    'service.version': identity.version,
    'deployment.environment.name': identity.env,
  }
}

export function capResourceAttributes(identity: Identity, raw: string | undefined): CappedAttributes {
  const attributes: Record<string, string> = {}
  const rejected: string[] = []
  let total = 0
  let count = 0
  const admit = (key: string, value: string): void => {
    const size = Buffer.byteLength(key) + Buffer.byteLength(value)
    if (size > MAX_ATTRIBUTE_BYTES || total + size > MAX_RESOURCE_BYTES || count + 1 > MAX_ATTRIBUTES) {
      rejected.push(key)
      return
    }
    attributes[key] = value
    total += size
    count++
  }
  for (const [key, value] of Object.entries(identityAttributes(identity))) admit(key, value)
  const operator = parseResourceAttributes(raw)
  for (const key of [...operator.keys()].sort()) {
    if (IDENTITY_KEYS.has(key)) continue
    admit(key, operator.get(key) as string)
  }
  return Object.freeze({ attributes: Object.freeze(attributes), rejected: Object.freeze(rejected) })
}

/** `k=v,k2=v2`, percent-decoded; a malformed pair is ignored, as the OTel SDK does; a repeated key keeps the last. */
export function parseResourceAttributes(raw: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (raw === undefined) return out
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    try {
      out.set(decodeURIComponent(pair.slice(0, at).trim()), decodeURIComponent(pair.slice(at + 1).trim()))
    } catch { /* malformed percent-encoding: ignored */ }
  }
  return out
}
