/**
 * Telemetry on the built service, OTLP to a receiver on 127.0.0.1 decoding
 * the OTLP/HTTP JSON payloads: a server span per request under the route
 * template, the client's W3C `traceparent` honoured as its parent, the
 * spans flushed by the graceful drain; and with the collector down the
 * proxy serves as before.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
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
  // Generous: the boot shares two cores with whatever else runs.
  await run.waitForOutput('proxy listening', 90_000)
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

interface LogLine { message: string; status: string; dd?: { trace_id?: string; span_id?: string } }

t.test('an artifact request: gate wait and upstream client spans; its log lines carry dd ids, no other line does', async (t) => {
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
  // The private upstream misses every artifact, so the request goes on to the public leg's decision (and its gate entry).
  const privateSeen: { url: string; traceparent: string | undefined }[] = []
  const privateUp = createServer((req, res) => { privateSeen.push({ url: req.url ?? '', traceparent: req.headers['traceparent'] as string | undefined }); res.writeHead(404).end() })
  await new Promise<void>((resolve) => privateUp.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { privateUp.closeAllConnections(); privateUp.close(() => resolve()) }))
  const privatePort = (privateUp.address() as { port: number }).port

  const { run, url } = await startProxy(t, `http://127.0.0.1:${(collector.address() as { port: number }).port}`, {
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__URL: `http://127.0.0.1:${privatePort}/`,
    SERVICE_OBSERVABILITY__LOG_LEVEL: 'debug',
  })
  const traceId = '0af7651916cd43dd8448eb211c80319c'
  const res = await request(`${url}/js/left-pad/-/left-pad-1.3.0.tgz`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } })
  t.ok(res.statusCode >= 400, `the public leg cannot decide without its upstream (${res.statusCode})`)
  await res.body.dump()
  run.child.kill('SIGTERM')
  t.equal((await run.exited).code, 0)

  const server = spans.find((s) => s.name === 'GET /js/{package}/-/{filename}')
  t.equal(server?.traceId, traceId, 'the artifact request has its server span, child of the client traceparent')
  const children = spans.filter((s) => s.parentSpanId === server?.spanId)
  t.ok(children.some((s) => s.name === 'gate enter'), 'the artifact decision waits at the gate in a span of its own')
  const client = children.find((s) => s.kind === 3 && s.attributes.some((a) => a.key === 'server.port' && Number(a.value.intValue) === privatePort))
  t.ok(client !== undefined, 'the private artifact fetch is a client span')
  const artifactFetch = privateSeen.find((s) => s.url === '/left-pad/-/left-pad-1.3.0.tgz')
  t.equal(artifactFetch?.traceparent, `00-${traceId}-${client?.spanId}-01`, 'the private upstream gets the artifact client span as traceparent')
  t.ok(privateSeen.every((s) => s.traceparent?.startsWith(`00-${traceId}-`) === true), `every private fetch of the request carries the trace (${privateSeen.map((s) => s.url).join(', ')})`)

  const lines = run.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine)
  const miss = lines.find((l) => l.message === 'artifact private miss')
  t.ok(miss !== undefined, 'the request logs at debug')
  t.equal(miss?.status, 'debug')
  t.equal(miss?.dd?.trace_id, traceId, 'a request line carries dd.trace_id')
  t.ok(spans.some((s) => s.spanId === miss?.dd?.span_id && s.traceId === traceId), 'and dd.span_id names a span of that trace')
  const outside = lines.filter((l) => ['proxy listening', 'telemetry: export'].some((m) => l.message.startsWith(m)))
  t.ok(outside.length >= 2, 'boot lines')
  t.ok(outside.every((l) => l.dd === undefined), 'no line outside a span carries dd ids')
  t.ok(lines.filter((l) => l.dd !== undefined).every((l) => l.dd?.trace_id === traceId), 'only lines of the traced request do')
})

/** The resident set of a process, bytes (`VmRSS` in /proc/PID/status). */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
  if (kib === undefined) throw new Error(`no VmRSS for ${pid}`)
  return Number(kib) * 1024
}

/** `count` requests, `concurrency` at a time, each answered with `status`: every one makes a server span and a histogram record. */
async function load(t: Test, url: string, count: number, concurrency = 16): Promise<number> {
  let bad = 0
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++
      const res = await request(i % 2 === 0 ? `${url}/readyz` : `${url}/no/such/path`, { headers: { traceparent: `00-${'a'.repeat(31)}${i % 10}-${'b'.repeat(16)}-01` } })
      if (res.statusCode !== (i % 2 === 0 ? 200 : 404)) bad++
      await res.body.dump()
    }
  }))
  t.equal(bad, 0, `${count} requests answered as usual`)
  return count
}

t.test('a collector that is down costs nothing but dropped telemetry', async (t) => {
  const closed = await freePort()
  const { run, url } = await startProxy(t, `http://127.0.0.1:${closed}`, { OTEL_METRIC_EXPORT_INTERVAL: '500' })
  const pid = run.child.pid as number
  for (let i = 0; i < 50; i++) {
    const res = await request(`${url}/readyz`)
    t.equal(res.statusCode, 200)
    await res.body.dump()
  }
  await run.waitForOutput('telemetry export failing', 60_000)
  // Warm up past the span queue's bound (2048) so what follows measures steady state, not the queue filling.
  await load(t, url, 3_000)
  const before = await rssOf(pid)
  await load(t, url, 6_000)
  const after = await rssOf(pid)
  t.comment(`RSS with the collector down: ${(before / 2 ** 20).toFixed(1)} MiB after 3000 requests, ${(after / 2 ** 20).toFixed(1)} MiB after 6000 more`)
  // Generous: an unbounded span buffer would hold every one of the 6000 spans; the bounded queue holds at most 2048.
  t.ok(after - before < 48 * 2 ** 20, `memory flat within 48 MiB across 6000 requests (grew ${((after - before) / 2 ** 20).toFixed(1)} MiB)`)
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
