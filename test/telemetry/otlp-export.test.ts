/**
 * OTLP push (SPEC.md 6.3, issue 15) to a receiver on 127.0.0.1 that decodes
 * the real OTLP/HTTP protobuf payloads (the exporters' default) with the
 * OpenTelemetry proto definitions (test/helpers/otlp-protobuf.ts, protobufjs
 * over the vendored .proto files): metrics, traces and logs arrive with the
 * resolved identity, the cloud identity from the environment and the
 * resource-attribute caps applied; `traceparent` goes to the private leg and
 * never to the public one; a failing collector is one warn per outage and
 * one info on recovery.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { context, trace } from '@opentelemetry/api'
import t, { type Test } from 'tap'
import { request } from 'undici'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { emitEverySignalAndShutDown } from '../helpers/emit-signals.js'
import { EXPORT_FAILING, EXPORT_RECOVERED } from '../../engine/telemetry/export-outage.js'
import { startTelemetry } from '../../engine/telemetry/otel-telemetry.js'
import { RESOURCE_CAP_WARNING } from '../../engine/telemetry/resource-attributes.js'
import { resolveIdentity } from '../../engine/log/identity.js'
import { TraceContext } from '../../engine/telemetry/trace-context.js'
import { decodeOtlp, signalOf } from '../helpers/otlp-protobuf.js'

interface KeyValue { key: string; value: { stringValue?: string; intValue?: string | number; doubleValue?: number } }
interface Received { path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }

async function listen(t: Test, handler: (req: IncomingMessage, body: Buffer) => number): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const status = handler(req, Buffer.concat(chunks))
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server }
}

function attributes(list: KeyValue[] | undefined): Record<string, string | number | undefined> {
  const out: Record<string, string | number | undefined> = {}
  for (const kv of list ?? []) out[kv.key] = kv.value.stringValue ?? (kv.value.intValue === undefined ? kv.value.doubleValue : Number(kv.value.intValue))
  return out
}

t.test('metrics, traces and logs reach the collector with identity and caps', async (t) => {
  const received: Received[] = []
  const collector = await listen(t, (req, body) => {
    t.equal(req.headers['content-type'], 'application/x-protobuf', 'OTLP/HTTP protobuf, the default')
    const signal = signalOf(req.url ?? '')
    if (signal === undefined) { t.fail(`unexpected path ${req.url}`); return 404 }
    received.push({ path: req.url ?? '', headers: req.headers, body: decodeOtlp(signal, body) })
    return 200
  })
  const seenByUpstream: { leg: string; traceparent: string | undefined }[] = []
  const privateUpstream = await listen(t, (req) => { seenByUpstream.push({ leg: 'private', traceparent: req.headers['traceparent'] as string | undefined }); return 200 })
  const publicUpstream = await listen(t, (req) => { seenByUpstream.push({ leg: 'public', traceparent: req.headers['traceparent'] as string | undefined }); return 200 })

  const env = {
    VENDOR_SERVICE: 'proxy-under-test',
    OTEL_SERVICE_NAME: 'loses-to-vendor',
    VENDOR_ENV: 'staging',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=s3cret',
    // Cloud Run, as its environment says (cloud-detector.ts): detected without asking a metadata server.
    GOOGLE_CLOUD_PROJECT: 'acme-prod',
    K_SERVICE: 'registry-proxy',
    K_REVISION: 'registry-proxy-00042-abc',
    OTEL_RESOURCE_ATTRIBUTES: `team=registry,huge=${'x'.repeat(5000)}`,
    OTEL_METRIC_EXPORT_INTERVAL: '600000',
  }
  const identity = resolveIdentity(env, '9.9.9')
  const logger = new RecordingLogger()
  const telemetry = await startTelemetry({ identity, env, logger, role: 'proxy', privateOrigins: [`${privateUpstream.origin}/npm/`] })
  t.teardown(() => telemetry.shutdown())
  t.same(logger.find(RESOURCE_CAP_WARNING).map((r) => r.data['keys']), [['huge']], 'one boot warning names the key that did not fit')
  t.notMatch(JSON.stringify(logger.records), /s3cret/, 'the header value is never echoed')

  telemetry.observeRole(() => ({ 'service.serve.admission.memory': { budgetBytes: 1024, chargedBytes: 0, brakeLevel: 1, waiting: 0, pausedNow: 0, queued: 0, shed: 3, pauses: 0, overdraws: 0 } }))
  telemetry.serverRequests?.({ method: 'GET', route: '/js/*', status: 200, reason: 'completed', seconds: 0.02 })
  const tracer = trace.getTracer('test')
  await tracer.startActiveSpan('request', async (span) => {
    await (await request(`${privateUpstream.origin}/npm/pkg`)).body.dump()
    await (await request(`${publicUpstream.origin}/pkg`)).body.dump()
    span.end()
  })
  const tee = telemetry.teeLogger(new RecordingLogger())
  const parentSpan = tracer.startSpan('log-scope')
  const logScope = new TraceContext()
  const inScope = context.with(trace.setSpan(context.active(), parentSpan), () => {
    tee.info('hello collector', { answer: 42 })
    return logScope.current()
  })
  t.same(inScope, { traceId: parentSpan.spanContext().traceId, spanId: parentSpan.spanContext().spanId }, 'log lines carry dd ids of the span in scope')
  t.equal(logScope.current(), undefined, 'and none outside it')
  parentSpan.end()

  await telemetry.shutdown()

  t.ok(received.every((r) => r.headers['x-collector-key'] === 's3cret'), 'OTEL_EXPORTER_OTLP_HEADERS authenticate every export')
  const metrics = received.filter((r) => r.path === '/v1/metrics')
  const spans = received.filter((r) => r.path === '/v1/traces')
  const logs = received.filter((r) => r.path === '/v1/logs')
  t.ok(metrics.length > 0 && spans.length > 0 && logs.length > 0, 'all three signals arrive')

  type ResourceBlock = { resource: { attributes: KeyValue[] } }
  const resourceOf = (r: Received, key: string): Record<string, string | number | undefined> => attributes(((r.body[key] as ResourceBlock[])[0] as ResourceBlock).resource.attributes)
  for (const [r, key] of [[metrics[0], 'resourceMetrics'], [spans[0], 'resourceSpans'], [logs[0], 'resourceLogs']] as const) {
    const resource = resourceOf(r as Received, key)
    t.equal(resource['service.name'], 'proxy-under-test', `${key}: VENDOR_SERVICE wins`)
    t.equal(resource['deployment.environment.name'], 'staging')
    t.equal(resource['service.version'], '9.9.9', 'the build version without a version setting')
    t.equal(resource['team'], 'registry', 'the operator attribute that fits')
    t.notOk('huge' in resource, 'the attribute over the cap is left out')
    t.ok(typeof resource['host.name'] === 'string', 'host detection')
    t.equal(resource['cloud.provider'], 'gcp', 'cloud identity from the environment')
    t.equal(resource['cloud.platform'], 'gcp_cloud_run')
    t.equal(resource['cloud.account.id'], 'acme-prod')
    t.equal(resource['faas.name'], 'registry-proxy')
  }

  type Metric = { name: string; unit?: string; gauge?: { dataPoints: { asInt?: string | number; asDouble?: number }[] }; sum?: { isMonotonic?: boolean; dataPoints: { asInt?: string | number; asDouble?: number }[] }; histogram?: { dataPoints: { count: string | number; attributes: KeyValue[] }[] } }
  const all: Metric[] = metrics.flatMap((r) => (r.body['resourceMetrics'] as { scopeMetrics: { metrics: Metric[] }[] }[]).flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics)))
  const named = (name: string): Metric | undefined => all.find((m) => m.name === name)
  const value = (p: { asInt?: string | number; asDouble?: number } | undefined): number => Number(p?.asInt ?? p?.asDouble)
  t.equal(value(named('service.serve.admission.memory.shed')?.sum?.dataPoints[0]), 3, 'a counter from the role snapshot')
  t.equal(named('service.serve.admission.memory.shed')?.sum?.isMonotonic, true)
  t.equal(value(named('service.serve.admission.memory.brake_level')?.gauge?.dataPoints[0]), 1, 'a gauge from the role snapshot')
  const server = named('http.server.request.duration')
  t.equal(server?.unit, 's', 'OTLP keeps the semantic-convention name and unit')
  t.same(attributes(server?.histogram?.dataPoints[0]?.attributes), { 'http.request.method': 'GET', 'http.route': '/js/*', 'http.response.status_code': 200 })
  const client = named('http.client.request.duration')
  const points = (client?.histogram?.dataPoints ?? []).map((p): Record<string, string | number | undefined> => ({ ...attributes(p.attributes), count: Number(p.count) }))
  t.same(points.map((p) => p['server.address']), ['127.0.0.1', '127.0.0.1'], 'upstream calls timed by server.address')
  t.same(points.map((p) => p['server.port']).sort(), [privateUpstream.origin, publicUpstream.origin].map((o) => Number(new URL(o).port)).sort(), 'and server.port')
  t.same(points.map((p) => p.count), [1, 1])

  type Span = { name: string; traceId: string; spanId: string; parentSpanId?: string; kind: number }
  const allSpans: Span[] = spans.flatMap((r) => (r.body['resourceSpans'] as { scopeSpans: { spans: Span[] }[] }[]).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
  const parent = allSpans.find((s) => s.name === 'request')
  const children = allSpans.filter((s) => s.parentSpanId === parent?.spanId)
  t.equal(children.length, 2, 'one client span per upstream fetch, children of the request span')
  const privateSeen = seenByUpstream.find((s) => s.leg === 'private')
  const publicSeen = seenByUpstream.find((s) => s.leg === 'public')
  t.match(privateSeen?.traceparent ?? '', new RegExp(`^00-${parent?.traceId}-[0-9a-f]{16}-01$`), 'traceparent on the private leg')
  t.equal(publicSeen?.traceparent, undefined, 'never on the public leg')

  type LogRecord = { body: { stringValue: string }; severityText: string; attributes: KeyValue[]; traceId?: string; spanId?: string }
  const records: LogRecord[] = logs.flatMap((r) => (r.body['resourceLogs'] as { scopeLogs: { logRecords: LogRecord[] }[] }[]).flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords)))
  const hello = records.find((r) => r.body.stringValue === 'hello collector')
  t.equal(hello?.severityText, 'info')
  t.equal(attributes(hello?.attributes)['data.answer'], 42)
  t.equal(hello?.spanId, parentSpan.spanContext().spanId, 'the log record carries the span in scope')
})

t.test('a failing collector: one warn per outage, one info on recovery', async (t) => {
  let failing = true
  let attempts = 0
  const collector = await listen(t, () => { attempts++; return failing ? 400 : 200 })
  const logger = new RecordingLogger()
  const telemetry = await startTelemetry({
    identity: { service: 's', env: 'e', version: '1', host: 'h' },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin, OTEL_METRIC_EXPORT_INTERVAL: '50', OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' },
    logger,
    role: 'proxy',
  })
  t.teardown(() => telemetry.shutdown())
  // An export needs something to export: the SDK skips empty collections.
  telemetry.observeRole(() => ({ 'service.upstream.fetch.errors': { timeout: 0 } }))
  while (attempts < 4) await new Promise((r) => setTimeout(r, 20))
  t.equal(logger.find(EXPORT_FAILING).length, 1, `one warn for ${attempts} failed exports`)
  t.equal(logger.find(EXPORT_FAILING)[0]?.level, 'warn')
  failing = false
  const before = attempts
  while (attempts < before + 3) await new Promise((r) => setTimeout(r, 20))
  t.equal(logger.find(EXPORT_RECOVERED).length, 1, 'one info on recovery')
  t.equal(logger.find(EXPORT_FAILING).length, 1, 'no further warn')
})

t.test('the default protocol is OTLP/HTTP protobuf on all three signals', async (t) => {
  const seen: { path: string; type: string | undefined; bytes: number }[] = []
  const collector = await listen(t, (req, body) => { seen.push({ path: req.url ?? '', type: req.headers['content-type'], bytes: body.length }); return 200 })
  const telemetry = await startTelemetry({
    identity: { service: 's', env: 'e', version: '1', host: 'h' },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin, OTEL_METRIC_EXPORT_INTERVAL: '600000' },
    logger: new RecordingLogger(),
    role: 'proxy',
  })
  await emitEverySignalAndShutDown(telemetry)
  for (const path of ['/v1/metrics', '/v1/traces', '/v1/logs']) {
    const got = seen.find((s) => s.path === path)
    t.equal(got?.type, 'application/x-protobuf', `${path} as protobuf`)
    t.ok((got?.bytes ?? 0) > 0)
  }
})
