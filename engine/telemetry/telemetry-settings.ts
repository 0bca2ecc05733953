/**
 * Where telemetry goes, read once from the environment (SPEC.md 4.5, 6.3):
 *
 * - OTLP endpoint: `VENDOR_AGENT_HOST` (the `VENDOR_*` variables win), else
 *   `OTEL_EXPORTER_OTLP_ENDPOINT`, else the node-local `http://localhost:4318`.
 * - `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, percent-encoded) authenticate a
 *   remote collector (SPEC.md 5.7); `describe()` shows their names only.
 * - `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (default) or `http/json`.
 * - `OTEL_METRICS_EXPORTER`: `otlp` (default), `prometheus`, `none`, or a
 *   comma list; `OTEL_TRACES_EXPORTER` and `OTEL_LOGS_EXPORTER`: `otlp` or `none`.
 * - `OTEL_EXPORTER_PROMETHEUS_HOST` (`localhost`) and `_PORT` (9464).
 * - `OTEL_METRIC_EXPORT_INTERVAL` / `_TIMEOUT` (ms, 60000 / 30000): push only.
 *
 * `VENDOR_API_KEY` and `VENDOR_SITE` have no effect (SPEC.md 5.7): nothing
 * reads them. A value that cannot be used is a boot warning and the default,
 * never a failed start: telemetry must not stop the service.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json'

export interface TelemetrySettings {
  /** Base URL of the collector; each signal posts to `/v1/{traces,metrics,logs}` under it. */
  readonly endpoint: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: OtlpProtocol
  readonly metricsOtlp: boolean
  readonly metricsPrometheus: boolean
  readonly traces: boolean
  readonly logs: boolean
  readonly prometheusHost: string
  readonly prometheusPort: number
  readonly metricExportIntervalMs: number
  readonly metricExportTimeoutMs: number
  /** Problems found while reading, for one boot warning each. */
  readonly problems: readonly string[]
}

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318'
const OTLP_PORT = '4318'
export const DEFAULT_PROMETHEUS_HOST = 'localhost'
export const DEFAULT_PROMETHEUS_PORT = 9464

export function readTelemetrySettings(env: NodeJS.ProcessEnv): TelemetrySettings {
  const problems: string[] = []
  const text = (key: string): string | undefined => {
    const value = env[key]?.trim()
    return value === undefined || value === '' ? undefined : value
  }

  const agent = text('VENDOR_AGENT_HOST')
  let endpoint = stripSlash(agent !== undefined ? agentUrl(agent) : text('OTEL_EXPORTER_OTLP_ENDPOINT') ?? DEFAULT_OTLP_ENDPOINT)
  if (!isHttpUrl(endpoint)) {
    // The value is not echoed: a URL refused for its userinfo would print the credential.
    problems.push(`${agent !== undefined ? 'VENDOR_AGENT_HOST' : 'OTEL_EXPORTER_OTLP_ENDPOINT'} is not an http(s) URL without credentials (secrets go in OTEL_EXPORTER_OTLP_HEADERS); using ${DEFAULT_OTLP_ENDPOINT}`)
    endpoint = DEFAULT_OTLP_ENDPOINT
  }

  const protocolText = text('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  let protocol: OtlpProtocol = 'http/protobuf'
  if (protocolText === 'http/json') protocol = 'http/json'
  else if (protocolText !== 'http/protobuf') problems.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocolText} is not supported; using http/protobuf`)

  const metrics = exporterList(text('OTEL_METRICS_EXPORTER') ?? 'otlp', ['otlp', 'prometheus', 'none'], 'OTEL_METRICS_EXPORTER', problems)
  const traces = exporterList(text('OTEL_TRACES_EXPORTER') ?? 'otlp', ['otlp', 'none'], 'OTEL_TRACES_EXPORTER', problems)
  const logs = exporterList(text('OTEL_LOGS_EXPORTER') ?? 'otlp', ['otlp', 'none'], 'OTEL_LOGS_EXPORTER', problems)

  return Object.freeze({
    endpoint,
    headers: Object.freeze(parseHeaders(text('OTEL_EXPORTER_OTLP_HEADERS'), problems)),
    protocol,
    metricsOtlp: metrics.has('otlp'),
    metricsPrometheus: metrics.has('prometheus'),
    traces: traces.has('otlp'),
    logs: logs.has('otlp'),
    prometheusHost: text('OTEL_EXPORTER_PROMETHEUS_HOST') ?? DEFAULT_PROMETHEUS_HOST,
    prometheusPort: integer(text('OTEL_EXPORTER_PROMETHEUS_PORT'), DEFAULT_PROMETHEUS_PORT, 1, 65535, 'OTEL_EXPORTER_PROMETHEUS_PORT', problems),
    metricExportIntervalMs: integer(text('OTEL_METRIC_EXPORT_INTERVAL'), 60_000, 1, 2 ** 31 - 1, 'OTEL_METRIC_EXPORT_INTERVAL', problems),
    metricExportTimeoutMs: integer(text('OTEL_METRIC_EXPORT_TIMEOUT'), 30_000, 1, 2 ** 31 - 1, 'OTEL_METRIC_EXPORT_TIMEOUT', problems),
    problems: Object.freeze(problems),
  })
}

/** The settings as the boot echo prints them: header values are secrets, so only their names show. */
export function describeTelemetrySettings(settings: TelemetrySettings): Readonly<Record<string, unknown>> {
  return {
    endpoint: settings.endpoint,
    headers: Object.fromEntries(Object.keys(settings.headers).map((name) => [name, '[redacted]'])),
    protocol: settings.protocol,
    metrics: [settings.metricsOtlp ? 'otlp' : undefined, settings.metricsPrometheus ? 'prometheus' : undefined].filter((v) => v !== undefined),
    traces: settings.traces ? 'otlp' : 'none',
    logs: settings.logs ? 'otlp' : 'none',
    ...(settings.metricsPrometheus ? { prometheus: `${settings.prometheusHost}:${settings.prometheusPort}` } : {}),
  }
}

/** `VENDOR_AGENT_HOST` names a host (optionally with a port), or a whole URL. */
function agentUrl(agent: string): string {
  if (agent.includes('://')) return agent
  const bracketed = agent.startsWith('[')
  const hasPort = bracketed ? /\]:\d+$/.test(agent) : /^[^:]+:\d+$/.test(agent)
  return `http://${agent}${hasPort ? '' : `:${OTLP_PORT}`}`
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === ''
  } catch {
    return false
  }
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url
}

function exporterList(raw: string, allowed: readonly string[], key: string, problems: string[]): Set<string> {
  const out = new Set<string>()
  for (const item of raw.split(',').map((v) => v.trim().toLowerCase()).filter((v) => v !== '')) {
    if (allowed.includes(item)) out.add(item)
    else problems.push(`${key}: ${item} is not supported (supported: ${allowed.join(', ')})`)
  }
  if (out.has('none')) return new Set()
  return out
}

function integer(raw: string | undefined, fallback: number, min: number, max: number, key: string, problems: string[]): number {
  if (raw === undefined) return fallback
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN
  if (Number.isSafeInteger(value) && value >= min && value <= max) return value
  problems.push(`${key}=${raw} is not an integer from ${min} to ${max}; using ${fallback}`)
  return fallback
}

/** W3C-baggage-like `k=v,k2=v2` with percent-encoding, as the OTel SDK reads it. */
function parseHeaders(raw: string | undefined, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  if (raw === undefined) return out
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=')
    if (pair.trim() === '') continue
    try {
      if (at <= 0) throw new Error('no name')
      out[decodeURIComponent(pair.slice(0, at).trim()).toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      // The value may be a secret: name the position, never the text.
      problems.push('OTEL_EXPORTER_OTLP_HEADERS has a malformed entry (ignored)')
    }
  }
  return out
}
