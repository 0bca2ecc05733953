/**
 * UpstreamClient.openArtifact against real local servers: verbatim bytes,
 * safe headers, HEAD and 304 without a body, conditional and credential
 * headers, redirects returned not followed, failures coded, and destroy
 * releasing the upstream request.
 */
import t from 'tap'
import { once } from 'node:events'
import { gzipSync } from 'node:zlib'
import { BearerToken } from '../../engine/secret.js'
import { isServiceError } from '../../engine/errors.js'
import { SignalAbort } from '../../engine/upstream/http1/request-abort.js'
import { codeOf, makeClient, startServer } from './servers.js'

const TARBALL = gzipSync(Buffer.from('package/package.json'.repeat(1000)))

async function readAll(body: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of body) parts.push(Buffer.from(chunk as Uint8Array))
  return Buffer.concat(parts)
}

t.test('GET streams the bytes verbatim with the safe header subset', async (t) => {
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/octet-stream', 'content-length': TARBALL.byteLength, etag: '"t1"',
      'last-modified': 'Wed, 01 Jan 2025 00:00:00 GMT', 'cache-control': 'public, max-age=300', 'accept-ranges': 'bytes',
      'set-cookie': 'session=abc', 'x-internal': 'leak', 'www-authenticate': 'Bearer',
    })
    res.end(TARBALL)
  })
  const { client } = makeClient(t, { url: `${up.origin}/npm/`, trusted: true })
  const url = client.artifactUrl('@acme/widget', 'widget-1.0.0.tgz')
  t.equal(url.pathname, '/npm/@acme%2fwidget/-/widget-1.0.0.tgz')
  const res = await client.openArtifact(url, { method: 'GET' })
  t.equal(res.statusCode, 200)
  t.same(res.headers, {
    'content-type': 'application/octet-stream', 'content-length': String(TARBALL.byteLength), etag: '"t1"',
    'last-modified': 'Wed, 01 Jan 2025 00:00:00 GMT', 'cache-control': 'public, max-age=300', 'accept-ranges': 'bytes',
  }, 'only the safe subset')
  t.ok(res.body !== null)
  if (res.body === null) return
  t.ok(Buffer.compare(await readAll(res.body), TARBALL) === 0, 'bytes verbatim, not decompressed')
  t.equal(up.seen[0]?.headers['accept-encoding'], 'identity')
  t.equal(up.seen[0]?.headers.via, '1.1 proxy-test')
})

t.test('HEAD and 304 come back without a body; conditionals are forwarded', async (t) => {
  const up = await startServer(t, (req, res) => {
    if (req.headers['if-none-match'] === '"t1"') { res.writeHead(304, { etag: '"t1"' }); res.end(); return }
    res.writeHead(200, { 'content-length': TARBALL.byteLength, etag: '"t1"' })
    res.end(req.method === 'HEAD' ? undefined : TARBALL)
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const url = client.artifactUrl('left-pad', 'left-pad-1.3.0.tgz')
  const head = await client.openArtifact(url, { method: 'HEAD' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, null)
  t.equal(head.headers['content-length'], String(TARBALL.byteLength))
  t.equal(up.seen[0]?.method, 'HEAD')
  const cond = await client.openArtifact(url, {
    method: 'GET', conditional: { ifNoneMatch: '"t1"', ifModifiedSince: 'Wed, 01 Jan 2025 00:00:00 GMT' },
  })
  t.equal(cond.statusCode, 304)
  t.equal(cond.body, null)
  t.equal(up.seen[1]?.headers['if-none-match'], '"t1"')
  t.equal(up.seen[1]?.headers['if-modified-since'], 'Wed, 01 Jan 2025 00:00:00 GMT')
  const again = await client.openArtifact(url, { method: 'GET' })
  t.equal(again.statusCode, 200, 'the connection is fine after bodiless answers')
  if (again.body !== null) t.equal((await readAll(again.body)).byteLength, TARBALL.byteLength)
})

t.test('the private side forwards the client credential, else its own', async (t) => {
  const up = await startServer(t, (_req, res) => { res.end('x') })
  const { client } = makeClient(t, { url: up.origin, trusted: true, token: new BearerToken('service-token') })
  const url = client.artifactUrl('a', 'a-1.0.0.tgz')
  const first = await client.openArtifact(url, { method: 'HEAD', bearer: new BearerToken('client-token') })
  const second = await client.openArtifact(url, { method: 'HEAD' })
  t.equal(first.body, null)
  t.equal(second.body, null)
  t.equal(up.seen[0]?.headers.authorization, 'Bearer client-token')
  t.equal(up.seen[1]?.headers.authorization, 'Bearer service-token')
  t.equal(await codeOf(client.openArtifact(new URL('http://127.0.0.2:1/a.tgz'), { method: 'GET' })), 'EGRESS_REFUSED',
    'the credential never leaves the private origin')
})

t.test('a redirect is returned, never followed; non-success statuses come back with their body', async (t) => {
  const up = await startServer(t, (req, res) => {
    if (req.url?.startsWith('/moved')) { res.writeHead(302, { location: '/elsewhere.tgz' }); res.end(); return }
    res.writeHead(404, { 'content-type': 'application/json' })
    res.end('{"error":"not found"}')
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const moved = await client.openArtifact(new URL(`${up.origin}/moved/a-1.0.0.tgz`), { method: 'GET' })
  t.equal(moved.statusCode, 302)
  moved.body?.destroy()
  t.equal(up.seen.length, 1, 'the location was not requested')
  const missing = await client.openArtifact(new URL(`${up.origin}/a/-/a-1.0.0.tgz`), { method: 'GET' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.body === null ? '' : (await readAll(missing.body)).toString(), '{"error":"not found"}')
})

t.test('no answer: UPSTREAM_UNAVAILABLE or UPSTREAM_TIMEOUT; the caller abort is its reason', async (t) => {
  const up = await startServer(t, () => {}) // never answers
  const closed = await startServer(t, () => {})
  const closedPort = closed.port
  await new Promise<void>((resolve) => closed.server.close(() => resolve()))
  const { client } = makeClient(t, { url: up.origin, trusted: true, timeouts: { headersMs: 150 } })
  t.equal(await codeOf(client.openArtifact(new URL(`${up.origin}/a.tgz`), { method: 'GET' })), 'UPSTREAM_TIMEOUT')
  const refused = makeClient(t, { url: `http://127.0.0.1:${closedPort}/`, trusted: true }).client
  const err = await refused.openArtifact(new URL(`http://127.0.0.1:${closedPort}/a.tgz`), { method: 'GET' }).catch((e: unknown) => e)
  t.ok(isServiceError(err, 'UPSTREAM_UNAVAILABLE'))
  const controller = new AbortController()
  const reason = new Error('client gone')
  const pending = client.openArtifact(new URL(`${up.origin}/b.tgz`), { method: 'GET', abort: new SignalAbort(controller.signal) }).catch((e: unknown) => e)
  setTimeout(() => controller.abort(reason), 20)
  t.equal(await pending, reason)
})

t.test('destroying the body aborts the upstream request and closes its socket', async (t) => {
  const block = Buffer.alloc(64 * 1024, 0x62)
  let serverSaw!: (what: string) => void
  const upstreamEnded = new Promise<string>((resolve) => { serverSaw = resolve })
  const up = await startServer(t, (req, res) => {
    res.writeHead(200, { 'content-length': 256 * 1024 * 1024 })
    let stop = false
    req.socket.once('close', () => { stop = true; serverSaw('socket closed') })
    const pump = (): void => {
      while (!stop) if (!res.write(block)) { res.once('drain', pump); return }
    }
    pump()
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const res = await client.openArtifact(new URL(`${up.origin}/huge.tgz`), { method: 'GET' })
  const body = res.body
  t.ok(body !== null)
  if (body === null) return
  await once(body, 'data') // the relay has started
  body.pause()
  body.destroy()
  t.equal(await upstreamEnded, 'socket closed', 'the upstream saw its connection closed')
})

t.test('a body left paused past its cap is failed with UPSTREAM_TIMEOUT', async (t) => {
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-length': 10 * 1024 * 1024 })
    res.write(Buffer.alloc(1024 * 1024))
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true, timeouts: { pausedReadMs: 200 } })
  const res = await client.openArtifact(new URL(`${up.origin}/slow.tgz`), { method: 'GET' })
  const body = res.body
  if (body === null) { t.fail('no body'); return }
  body.on('data', () => {})
  await once(body, 'data')
  body.pause()
  const [err] = await once(body, 'error') as [unknown]
  t.ok(isServiceError(err, 'UPSTREAM_TIMEOUT'), 'paused too long')
})

t.test('a body read by async iteration is not failed by the paused-read cap', async (t) => {
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-length': 3 })
    res.write('a')
    setTimeout(() => res.end('bc'), 400)
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true, timeouts: { pausedReadMs: 100 } })
  const res = await client.openArtifact(new URL(`${up.origin}/pulled.tgz`), { method: 'GET' })
  if (res.body === null) { t.fail('no body'); return }
  t.equal((await readAll(res.body)).toString(), 'abc')
})
