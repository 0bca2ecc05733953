/**
 * The artifact connections (engine/upstream/http1/, not undici) under
 * telemetry (issue 15): each artifact fetch records
 * `http.client.request.duration` and a client span under the span in scope,
 * the W3C `traceparent` reaches the private upstream and never the public
 * one, failures and abandoned bodies carry `error.type`; a mirror job's
 * source fetch is a client span of the job; with telemetry off
 * nothing is published and no header is added.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { trace } from '@opentelemetry/api'
import t, { type Test } from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { artifactRequest } from '../../engine/telemetry/artifact-client-channel.js'
import { startTelemetry } from '../../engine/telemetry/otel-telemetry.js'
import { inRootSpan } from '../../engine/telemetry/work-span.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { freePort } from '../helpers/ports.js'
import { makeClient, startServer } from '../upstream/servers.js'

interface KeyValue { key: string; value: { stringValue?: string; intValue?: string | number } }
interface Span { name: string; traceId: string; spanId: string; parentSpanId?: string; kind: number; attributes: KeyValue[]; status?: { code?: number } }
interface Point { count: string | number; attributes: KeyValue[] }

const TARBALL = Buffer.alloc(300 * 1024, 7)

function attrs(list: KeyValue[] | undefined): Record<string, string | number | undefined> {
  const out: Record<string, string | number | undefined> = {}
  for (const kv of list ?? []) out[kv.key] = kv.value.stringValue ?? (kv.value.intValue === undefined ? undefined : Number(kv.value.intValue))
  return out
}

async function collector(t: Test): Promise<{ origin: string; bodies: { path: string; body: Record<string, unknown> }[] }> {
  const bodies: { path: string; body: Record<string, unknown> }[] = []
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, bodies }
}

async function drain(body: NodeJS.ReadableStream | null): Promise<number> {
  let n = 0
  if (body !== null) for await (const chunk of body) n += (chunk as Buffer).byteLength
  return n
}

t.test('telemetry off: nothing published, no header added', async (t) => {
  t.equal(artifactRequest('http://127.0.0.1:1', 'GET'), undefined, 'no subscriber: no request object at all')
  const up = await startServer(t, (_req, res) => { res.end('x') })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const res = await client.openArtifact(client.artifactUrl('a', 'a-1.0.0.tgz'), { method: 'GET' })
  await drain(res.body)
  t.equal(up.seen[0]?.headers['traceparent'], undefined)
})

t.test('artifact fetches: duration, client spans, traceparent on the private leg only', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const otlp = await collector(t)
  const privateUp = await startServer(t, (req, res) => {
    if (req.url?.includes('missing') === true) { res.writeHead(404).end(); return }
    res.writeHead(200, { 'content-length': TARBALL.byteLength }).end(req.method === 'HEAD' ? undefined : TARBALL)
  })
  const publicUp = await startServer(t, (_req, res) => { res.writeHead(200, { 'content-length': TARBALL.byteLength }).end(TARBALL) }, ca)
  const closed = await freePort()

  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRIC_EXPORT_INTERVAL: '600000', OTEL_LOGS_EXPORTER: 'none' }
  const telemetry = await startTelemetry({
    identity: { service: 's', env: 'e', version: '1', host: 'h' }, env, logger: new RecordingLogger(), role: 'proxy',
    privateOrigins: [`${privateUp.origin}/npm/`, `http://127.0.0.1:${closed}/`],
  })
  t.teardown(() => telemetry.shutdown())
  const priv = makeClient(t, { url: `${privateUp.origin}/npm/`, trusted: true }).client
  const pub = makeClient(t, { url: publicUp.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client
  const down = makeClient(t, { url: `http://127.0.0.1:${closed}/`, trusted: true }).client

  const tracer = trace.getTracer('test')
  let parent: { traceId: string; spanId: string } | undefined
  await tracer.startActiveSpan('request', async (span) => {
    parent = span.spanContext()
    const got = await priv.openArtifact(priv.artifactUrl('widget', 'widget-1.0.0.tgz'), { method: 'GET' })
    t.equal(await drain(got.body), TARBALL.byteLength)
    const head = await priv.openArtifact(priv.artifactUrl('widget', 'widget-1.0.0.tgz'), { method: 'HEAD' })
    t.equal(head.body, null)
    const missing = await priv.openArtifact(priv.artifactUrl('missing', 'missing-1.0.0.tgz'), { method: 'GET' })
    t.equal(missing.statusCode, 404)
    await drain(missing.body)
    const relayed = await pub.openArtifact(new URL(`${publicUp.origin}/widget/-/widget-1.0.0.tgz`), { method: 'GET' })
    t.equal(await drain(relayed.body), TARBALL.byteLength)
    const abandoned = await pub.openArtifact(new URL(`${publicUp.origin}/widget/-/widget-1.0.0.tgz`), { method: 'GET' })
    abandoned.body?.destroy()
    await down.openArtifact(down.artifactUrl('widget', 'widget-1.0.0.tgz'), { method: 'GET' }).then(() => t.fail('no answer expected'), () => {})
    span.end()
  })
  // Outside any span (a background fetch): a duration, no span.
  await drain((await priv.openArtifact(priv.artifactUrl('widget', 'widget-1.0.0.tgz'), { method: 'GET' })).body)
  // The mirror consumer runs each job in a root span (mirror-consumer.ts); the worker's source fetch is the public client's openArtifact.
  await inRootSpan('mirror job', {}, async () => {
    await drain((await pub.openArtifact(new URL(`${publicUp.origin}/widget/-/widget-1.0.0.tgz`), { method: 'GET' })).body)
  })
  await telemetry.shutdown()

  const privateSeen = privateUp.seen.map((s) => s.headers['traceparent'] as string | undefined)
  t.equal(privateSeen.length, 4)
  for (const seen of privateSeen.slice(0, 3)) t.match(seen ?? '', new RegExp(`^00-${parent?.traceId}-[0-9a-f]{16}-01$`), 'traceparent on the private leg')
  t.equal(privateSeen[3], undefined, 'no span in scope: no traceparent')
  t.equal(publicUp.seen.length, 3)
  t.ok(publicUp.seen.every((s) => s.headers['traceparent'] === undefined), 'never on the public leg')

  const spans: Span[] = otlp.bodies.filter((b) => b.path === '/v1/traces')
    .flatMap((b) => (b.body['resourceSpans'] as { scopeSpans: { spans: Span[] }[] }[]).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
  const children = spans.filter((s) => s.parentSpanId === parent?.spanId)
  t.same(children.map((s) => s.name), ['GET', 'HEAD', 'GET', 'GET', 'GET', 'GET'], 'one client span per artifact fetch, in order')
  t.ok(children.every((s) => s.kind === 3), 'SPAN_KIND_CLIENT')
  const sent = privateSeen.slice(0, 3).map((p) => p?.split('-')[2])
  t.same(sent, children.slice(0, 3).map((s) => s.spanId), 'the private traceparent names the client span itself')
  const childAttrs = children.map((s) => attrs(s.attributes))
  t.same(childAttrs.map((a) => a['http.response.status_code']), [200, 200, 404, 200, 200, undefined])
  t.same(childAttrs.map((a) => a['error.type']), [undefined, undefined, '404', undefined, 'aborted', 'ECONNREFUSED'], 'a 4xx, an abandoned body and no answer carry error.type')
  t.equal(children[5]?.status?.code, 2, 'status error on the failed fetch')
  const mirrorJob = spans.find((s) => s.name === 'mirror job')
  const mirrorFetch = spans.filter((s) => s.parentSpanId === mirrorJob?.spanId)
  t.same(mirrorFetch.map((s) => [s.name, s.kind, attrs(s.attributes)['server.port']]), [['GET', 3, publicUp.port]], 'a mirror job\'s source fetch is a client span of the job')
  t.same(publicUp.seen.map((s) => s.headers['traceparent']), [undefined, undefined, undefined], 'the mirror source (the public upstream) gets no traceparent either')
  t.equal(spans.length, children.length + 1 + 2, 'the background fetch made no span')

  type Metric = { name: string; histogram?: { dataPoints: Point[] } }
  const metrics: Metric[] = otlp.bodies.filter((b) => b.path === '/v1/metrics')
    .flatMap((b) => (b.body['resourceMetrics'] as { scopeMetrics: { metrics: Metric[] }[] }[]).flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics)))
  const points = metrics.filter((m) => m.name === 'http.client.request.duration').flatMap((m) => m.histogram?.dataPoints ?? [])
  const count = (where: Record<string, string | number>): number => points
    .filter((p) => Object.entries(where).every(([k, v]) => attrs(p.attributes)[k] === v))
    .reduce((n, p) => n + Number(p.count), 0)
  t.equal(count({ 'server.port': privateUp.port, 'http.request.method': 'GET', 'http.response.status_code': 200 }), 2, 'private GETs, in a span or not')
  t.equal(count({ 'server.port': privateUp.port, 'http.request.method': 'HEAD' }), 1)
  t.equal(count({ 'server.port': privateUp.port, 'error.type': '404' }), 1)
  t.equal(count({ 'server.port': publicUp.port, 'server.address': '127.0.0.1' }), 3, 'the public leg and the mirror source fetch are timed too')
  t.equal(count({ 'server.port': closed, 'error.type': 'ECONNREFUSED' }), 1)
})
