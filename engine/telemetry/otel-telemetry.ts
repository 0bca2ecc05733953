/**
 * Telemetry on (`SERVICE_OBSERVABILITY__TELEMETRY=on`): the OpenTelemetry
 * SDK behind the instrument layer (instruments.ts), exporting only where
 * telemetry-settings.ts says (SPEC.md 4.5, 6.3):
 *
 * - metrics: OTLP push (default) and/or the Prometheus listener of its own,
 *   read at scrape time. Each exporter has its own MeterProvider: the
 *   Prometheus one views the second-valued histograms to a `_seconds` name
 *   (the stock exporter adds no unit suffix) while OTLP keeps the semantic
 *   convention names. A port that cannot be bound is an error log, not a
 *   failed start.
 * - traces and logs: OTLP, through batch processors with bounded queues, so
 *   a down collector costs dropped telemetry, never memory; one warn line per
 *   outage (export-outage.ts).
 * - the resource: the resolved identity first, then the operator's
 *   attributes within the caps (resource-attributes.ts), then host,
 *   process, container and cloud detection (no network: cloud-detector.ts);
 *   one boot warning names every attribute left out.
 */
import { context, propagation, trace, type Attributes, type Histogram, type Meter, type ObservableCounter, type ObservableGauge } from '@opentelemetry/api'
import { SeverityNumber, type Logger as OtelLogger } from '@opentelemetry/api-logs'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPLogExporter as OTLPLogExporterJson } from '@opentelemetry/exporter-logs-otlp-http'
import { OTLPLogExporter as OTLPLogExporterProto } from '@opentelemetry/exporter-logs-otlp-proto'
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto'
import { detectResources, hostDetector, processDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs'
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader, type ViewOptions } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { Identity } from '../log/identity.js'
import type { Agent as HttpAgent } from 'node:http'
import type { Agent as HttpsAgent } from 'node:https'
import type { LogData, Logger, LogLevel } from '../log/logger.js'
import { ClientDurations } from './client-durations.js'
import { cloudDetector } from './cloud-detector.js'
import { containerDetector } from './container-detector.js'
import { OutageReport, reportingOutages } from './export-outage.js'
import { methodAttribute } from './http-method.js'
import { HTTP_DURATION_BUCKETS, type ServerRequest, type Telemetry } from './instruments.js'
import { METRIC_CATALOG, type RoleSnapshot } from './metric-catalog.js'
import { capResourceAttributes, RESOURCE_CAP_WARNING } from './resource-attributes.js'
import { serverSpans } from './server-spans.js'
import { describeTelemetrySettings, readTelemetrySettings, type TelemetrySettings } from './telemetry-settings.js'

export const TELEMETRY_STARTED = 'telemetry: export'
export const TELEMETRY_SETTINGS_PROBLEM = 'telemetry: setting ignored'
export const METRICS_LISTENER_FAILED = 'telemetry: metrics listener cannot listen'
export const METRICS_LISTENER_READY = 'telemetry: metrics listener ready'

export const SERVER_DURATION = 'http.server.request.duration'
export const CLIENT_DURATION = 'http.client.request.duration'
const SCOPE = 'registry-proxy-service'

/** Queue bounds: what a down collector can hold, at most, before the SDK drops (issue 15: no unbounded buffers). */
const MAX_QUEUE = 2048
const MAX_BATCH = 512
/** Concurrent exports in flight per signal; a slow collector cannot pile requests up behind it. */
const CONCURRENCY_LIMIT = 2
const EXPORT_TIMEOUT_MS = 10_000

export interface StartTelemetryOptions {
  readonly identity: Identity
  readonly env: NodeJS.ProcessEnv
  /** For the boot lines and outage warnings; never tee'd back into telemetry. */
  readonly logger: Logger
  readonly role: string
  /** Origins the W3C `traceparent` may be sent to (the private leg only, never the public one). */
  readonly privateOrigins?: readonly string[]
  /**
   * The Agents the OTLP exports connect with: the composition root passes
   * engine/upstream/proxied-agents.ts's for `egress.proxy` (which honour
   * NO_PROXY per connection); unset, the exporters' own. Destroyed at shutdown.
   */
  readonly egressAgents?: { readonly httpAgent: HttpAgent, readonly httpsAgent: HttpsAgent } | undefined
}

export async function startTelemetry(options: StartTelemetryOptions): Promise<Telemetry & { readonly settings: TelemetrySettings; readonly prometheusPort: Promise<number | undefined> }> {
  const { identity, env, logger } = options
  const settings = readTelemetrySettings(env)
  for (const problem of settings.problems) logger.warn(TELEMETRY_SETTINGS_PROBLEM, { problem })

  const capped = capResourceAttributes(identity, env['OTEL_RESOURCE_ATTRIBUTES'])
  if (capped.rejected.length > 0) logger.warn(RESOURCE_CAP_WARNING, { keys: capped.rejected })
  // Detectors only (host, process, container, cloud): the env detector would read OTEL_RESOURCE_ATTRIBUTES again, uncapped.
  // Cloud identity comes from the environment alone (cloud-detector.ts): a metadata endpoint would put the network in the boot path.
  const detected = detectResources({ detectors: [hostDetector, processDetector, containerDetector(), cloudDetector(env)] })
  await detected.waitForAsyncAttributes?.()
  const resource: Resource = detected.merge(resourceFromAttributes({ ...capped.attributes, 'service.role': options.role }))

  const endpoint = settings.endpoint
  const json = settings.protocol === 'http/json'
  // The collector is the operator's own endpoint: through the forward proxy like the SDK clients', one Agent pair for every signal.
  const agents = options.egressAgents
  const exporterConfig = (signal: string) => ({
    url: `${endpoint}/v1/${signal}`,
    headers: { ...settings.headers },
    concurrencyLimit: CONCURRENCY_LIMIT,
    timeoutMillis: EXPORT_TIMEOUT_MS,
    ...(agents === undefined ? {} : { httpAgentOptions: (protocol: string) => (protocol === 'http:' ? agents.httpAgent : agents.httpsAgent) }),
  })

  // Metrics: one provider per reader, so the Prometheus views rename nothing on OTLP.
  const providers: MeterProvider[] = []
  const meters: Meter[] = []
  let source: (() => RoleSnapshot) | undefined
  if (settings.metricsOtlp) {
    const exporter = reportingOutages(json ? new OTLPMetricExporterJson(exporterConfig('metrics')) : new OTLPMetricExporterProto(exporterConfig('metrics')), new OutageReport(logger, 'metrics', endpoint))
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: settings.metricExportIntervalMs, exportTimeoutMillis: Math.min(settings.metricExportTimeoutMs, settings.metricExportIntervalMs) })
    providers.push(meterProvider(resource, reader, []))
  }
  let prometheusPort: Promise<number | undefined> = Promise.resolve(undefined)
  if (settings.metricsPrometheus) {
    const exporter = new PrometheusExporter({ host: settings.prometheusHost, port: settings.prometheusPort, preventServerStart: true })
    providers.push(meterProvider(resource, exporter, prometheusViews()))
    prometheusPort = startPrometheus(exporter, settings, logger)
  }
  for (const provider of providers) meters.push(provider.getMeter(SCOPE, identity.version))
  const serverDurations: Histogram[] = []
  const clientDurations: Histogram[] = []
  for (const meter of meters) {
    registerCatalog(meter, () => source?.() ?? {})
    serverDurations.push(meter.createHistogram(SERVER_DURATION, { unit: 's', description: 'Duration of HTTP server requests.', advice: { explicitBucketBoundaries: [...HTTP_DURATION_BUCKETS] } }))
    clientDurations.push(meter.createHistogram(CLIENT_DURATION, { unit: 's', description: 'Duration of HTTP client requests.', advice: { explicitBucketBoundaries: [...HTTP_DURATION_BUCKETS] } }))
  }

  // Traces: W3C context through AsyncLocalStorage, batched, bounded.
  let tracerProvider: BasicTracerProvider | undefined
  if (settings.traces) {
    const exporter = reportingOutages(json ? new OTLPTraceExporterJson(exporterConfig('traces')) : new OTLPTraceExporterProto(exporterConfig('traces')), new OutageReport(logger, 'traces', endpoint))
    tracerProvider = new BasicTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: MAX_QUEUE, maxExportBatchSize: MAX_BATCH, exportTimeoutMillis: EXPORT_TIMEOUT_MS })],
    })
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    propagation.setGlobalPropagator(new W3CTraceContextPropagator())
    trace.setGlobalTracerProvider(tracerProvider)
  }

  // Logs: beside stdout, batched, bounded.
  let loggerProvider: LoggerProvider | undefined
  let otelLogger: OtelLogger | undefined
  if (settings.logs) {
    const exporter = reportingOutages(json ? new OTLPLogExporterJson(exporterConfig('logs')) : new OTLPLogExporterProto(exporterConfig('logs')), new OutageReport(logger, 'logs', endpoint))
    loggerProvider = new LoggerProvider({
      resource,
      processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: MAX_QUEUE, maxExportBatchSize: MAX_BATCH, exportTimeoutMillis: EXPORT_TIMEOUT_MS })],
    })
    otelLogger = loggerProvider.getLogger(SCOPE, identity.version)
  }

  const client = new ClientDurations({
    record: clientDurations.length === 0 ? undefined : (seconds, attributes) => { for (const h of clientDurations) h.record(seconds, attributes) },
    tracer: tracerProvider?.getTracer(SCOPE, identity.version),
    privateOrigins: options.privateOrigins ?? [],
  })
  client.start()

  logger.info(TELEMETRY_STARTED, describeTelemetrySettings(settings))

  let stopped: Promise<void> | undefined
  return {
    enabled: true,
    settings,
    prometheusPort,
    serverRequests: serverDurations.length === 0 ? undefined : (request: ServerRequest) => {
      const attributes: Attributes = { 'http.request.method': methodAttribute(request.method), 'http.route': request.route }
      if (request.status > 0) attributes['http.response.status_code'] = request.status
      if (request.reason !== 'completed' || request.status >= 500) attributes['error.type'] = request.reason !== 'completed' ? request.reason : String(request.status)
      for (const h of serverDurations) h.record(request.seconds, attributes)
    },
    serverSpans: tracerProvider === undefined ? undefined : serverSpans(tracerProvider.getTracer(SCOPE, identity.version)),
    observeRole(metrics) { source = metrics },
    teeLogger<L extends Logger>(inner: L): L {
      if (otelLogger === undefined) return inner
      const emitter = otelLogger
      const tee = (level: LogLevel) => (message: string, data?: LogData): void => {
        inner[level](message, data)
        if (!inner.isLevelEnabled(level)) return
        emitter.emit({ severityNumber: SEVERITY[level], severityText: level, body: message, attributes: logAttributes(data), context: context.active() })
      }
      return Object.assign(Object.create(inner) as L, { debug: tee('debug'), info: tee('info'), warn: tee('warn'), error: tee('error') })
    },
    shutdown(timeoutMs = 5_000) {
      stopped ??= (async () => {
        client.stop()
        const all = Promise.allSettled([
          ...providers.map((p) => p.shutdown()),
          tracerProvider?.shutdown(),
          loggerProvider?.shutdown(),
        ])
        let timer: NodeJS.Timeout | undefined
        await Promise.race([all, new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); timer.unref() })])
        if (timer !== undefined) clearTimeout(timer)
        agents?.httpAgent.destroy()
        agents?.httpsAgent.destroy()
      })()
      return stopped
    },
  }
}

const SEVERITY: Record<LogLevel, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
}

/** The call's own fields under `data.*`, as the stdout line nests them (SPEC.md 2.10); typed tokens render redacted through toJSON. */
function logAttributes(data: LogData | undefined): Attributes {
  if (data === undefined) return {}
  const out: Attributes = {}
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined) continue
    out[`data.${key}`] = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : JSON.stringify(value)
  }
  return out
}

function meterProvider(resource: Resource, reader: MetricReader, views: ViewOptions[]): MeterProvider {
  return new MeterProvider({ resource, readers: [reader], views })
}

/** Prometheus names carry their unit (`_seconds`); the stock exporter does not add it. */
function prometheusViews(): ViewOptions[] {
  return [SERVER_DURATION, CLIENT_DURATION].map((name) => ({ instrumentName: name, name: `${name}_seconds` }))
}

/** Every catalog instrument, read from one snapshot per collection. */
function registerCatalog(meter: Meter, read: () => RoleSnapshot): void {
  const observables: (ObservableCounter | ObservableGauge)[] = METRIC_CATALOG.map((spec) => spec.kind === 'counter'
    ? meter.createObservableCounter(spec.name, { unit: spec.unit, description: spec.description })
    : meter.createObservableGauge(spec.name, { unit: spec.unit, description: spec.description }))
  meter.addBatchObservableCallback((result) => {
    const snapshot = read()
    METRIC_CATALOG.forEach((spec, i) => {
      const observable = observables[i] as ObservableCounter | ObservableGauge
      spec.read(snapshot, (value, attributes) => result.observe(observable, value, attributes))
    })
  }, observables)
}

/** Binds the listener; a port it cannot bind is an error log and no listener (SPEC.md 4.5). */
async function startPrometheus(exporter: PrometheusExporter, settings: TelemetrySettings, logger: Logger): Promise<number | undefined> {
  try {
    await exporter.startServer()
  } catch (error) {
    logger.error(METRICS_LISTENER_FAILED, { host: settings.prometheusHost, port: settings.prometheusPort, error: String((error as Error)?.message ?? error) })
    return undefined
  }
  const server = (exporter as unknown as { _server?: { address(): { port: number } | string | null } })._server
  const address = server?.address()
  const port = typeof address === 'object' && address !== null ? address.port : settings.prometheusPort
  logger.info(METRICS_LISTENER_READY, { host: settings.prometheusHost, port, path: '/metrics' })
  return port
}
