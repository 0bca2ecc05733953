/**
 * The resolved identity stamped on every log line and trace (SPEC.md 6.3):
 * `VENDOR_*` variables win over the standard `OTEL_*` ones; without a version
 * setting, the running binary's own build version is used.
 */
import { hostname } from 'node:os'

export interface Identity {
  readonly service: string
  readonly env: string
  readonly version: string
  readonly host: string
}

export const DEFAULT_SERVICE_NAME = 'registry-proxy'
export const DEFAULT_ENV = 'none'

export function resolveIdentity(env: NodeJS.ProcessEnv, buildVersion: string): Identity {
  const attributes = parseResourceAttributes(env['OTEL_RESOURCE_ATTRIBUTES'])
  const pick = (...values: (string | undefined)[]): string | undefined => values.find((v) => v !== undefined && v.trim() !== '')
  return Object.freeze({
    service: pick(env['VENDOR_SERVICE'], env['OTEL_SERVICE_NAME'], attributes.get('service.name')) ?? DEFAULT_SERVICE_NAME,
    env: pick(env['VENDOR_ENV'], attributes.get('deployment.environment.name'), attributes.get('deployment.environment')) ?? DEFAULT_ENV,
    version: pick(env['VENDOR_VERSION'], attributes.get('service.version')) ?? buildVersion,
    // katip.host is the emitting process's own hostname, not the agent's.
    host: hostname(),
  })
}

function parseResourceAttributes(raw: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (raw === undefined) return out
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    try {
      out.set(decodeURIComponent(pair.slice(0, at).trim()), decodeURIComponent(pair.slice(at + 1).trim()))
    } catch { /* a malformed pair is ignored, as the OTel SDK does */ }
  }
  return out
}
