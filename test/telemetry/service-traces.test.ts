/**
 * Telemetry on the built service, OTLP to a receiver on 127.0.0.1 decoding
 * the OTLP/HTTP JSON payloads: a server span per request under the route
 * template, the client's W3C `traceparent` honoured as its parent, the
 * spans flushed by the graceful drain; and with the collector down the
 * proxy serves as before.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { request } from 'undici'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'

interface KeyValue { key: string; value: { stringValue?: string; intValue?: string | number } }
interface Span { name: string; traceId: string; spanId: string; parentSpanId?: string; kind: number; attributes: KeyValue[] }

async function startProxy(t: Test, endpoint: string, env: Record<string, string> = {}): Promise<{ run: ServiceRun; url: string }> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'telemetry-traces-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_QUEUE__PATH: join(dir, 'queue'),
    SERVICE_STORE__PATH: join(dir, 'store'),
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
    SERVICE_OBSERVABILITY__TELEMETRY: 'on',
    SERVICE_SERVER__SHUTDOWN_DRAIN_TIMEOUT: '5',
    VENDOR_SERVICE: 'traced-proxy',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    ...env,
  })
  await run.waitForOutput('proxy listening')
  return { run, url: `http://127.0.0.1:${port}` }
}

t.test('a server span per request, child of the client traceparent, flushed by the drain', async (t) => {
  const spans: Span[] = []
  const collector = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] }
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans)
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { collector.closeAllConnections(); collector.close(() => resolve()) }))
  const { run, url } = await startProxy(t, `http://127.0.0.1:${(collector.address() as { port: number }).port}`)

  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const parentId = '00f067aa0ba902b7'
  const res = await request(`${url}/livez`, { headers: { traceparent: `00-${traceId}-${parentId}-01` } })
  t.equal(res.statusCode, 200)
  await res.body.dump()
  await (await request(`${url}/no/such/path`)).body.dump()

  run.child.kill('SIGTERM')
  const exit = await run.exited
  t.equal(exit.code, 0, 'the drain completes')

  const livez = spans.find((s) => s.name === 'GET /livez')
  t.ok(livez !== undefined, 'the probe has a server span named by its route template')
  t.equal(livez?.kind, 2, 'SPAN_KIND_SERVER')
  t.equal(livez?.traceId, traceId, 'the client traceparent is honoured')
  t.equal(livez?.parentSpanId, parentId)
  const fallback = spans.find((s) => s.name === 'GET /*')
  t.ok(fallback !== undefined, 'an unmounted path is named by the fallback template, never the raw path')
  t.notOk(spans.some((s) => s.name.includes('/no/such/path')))
  t.not(fallback?.traceId, traceId, 'a request without traceparent starts its own trace')
})

t.test('a collector that is down costs nothing but dropped telemetry', async (t) => {
  const closed = await freePort()
  const { run, url } = await startProxy(t, `http://127.0.0.1:${closed}`, { OTEL_METRIC_EXPORT_INTERVAL: '500' })
  for (let i = 0; i < 50; i++) {
    const res = await request(`${url}/readyz`)
    t.equal(res.statusCode, 200)
    await res.body.dump()
  }
  await run.waitForOutput('telemetry export failing', 60_000)
  for (let i = 0; i < 20; i++) {
    const res = await request(`${url}/readyz`)
    t.equal(res.statusCode, 200, 'still serving during the outage')
    await res.body.dump()
  }
  run.child.kill('SIGTERM')
  t.equal((await run.exited).code, 0, 'the drain completes within its bound with nothing to flush to')
  const failing = run.stdout().split('\n').filter((l) => l.includes('"message":"telemetry export failing"')).map((l) => (JSON.parse(l) as { data: { signal: string } }).data.signal)
  t.ok(failing.length > 0, 'the outage is reported')
  t.same([...new Set(failing)].sort(), [...failing].sort(), 'at most one warn per signal for the outage')
})
