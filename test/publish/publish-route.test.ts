/**
 * The publish route against a recording stand-in target (server/routes/
 * publish-route.ts): what reaches the target (the route's name, the body as
 * sent, the target's own credential), the answer relayed, the same on the
 * node:http compatibility port, the body charged to the memory gate while
 * in flight, and a target that does not answer.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import t from 'tap'
import { request } from 'undici'
import { OFFLINE_JS_MOUNT, startTestProxy } from '../helpers/proxy.js'

/** The publish relay needs an edge token (it writes with its own target credential). */
const EDGE_TOKEN = 'edge-token-for-publish'
import { bytesOf, publishDocument } from './publish-documents.js'

interface Received { method: string, url: string, headers: IncomingHttpHeaders, body: Buffer }

async function startTarget(t: { teardown(fn: () => unknown): void }): Promise<{ url: string, received: Received[], server: Server }> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":"created new package","success":true}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/npm/`, received, server }
}

const charged = (proxy: { role: { metrics(): Record<string, unknown> } }): number =>
  (proxy.role.metrics()['service.serve.admission.memory'] as { chargedBytes: number }).chargedBytes

t.test('the route relays the body as sent, keyed on the route name, with the target\'s credential', async (t) => {
  const target = await startTarget(t)
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: {
      server: { compatPort: 0 },
      mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, token: 'target-token', scopes: ['@acme'] } } },
    },
  })
  const body = bytesOf(publishDocument({ name: '@acme/lib' }))
  const res = await proxy.fetch('PUT', '/js/@acme%2flib', { body, headers: { 'content-type': 'application/json', authorization: `Bearer ${EDGE_TOKEN}` } })
  t.equal(res.status, 201)
  t.same(res.json(), { ok: 'created new package', success: true }, 'the target\'s body relayed')
  t.equal(target.received.length, 1)
  const [sent] = target.received
  t.equal(sent?.method, 'PUT')
  t.equal(sent?.url, '/npm/@acme%2flib')
  t.equal(sent?.headers.authorization, 'Bearer target-token', 'the target\'s own credential, never the client\'s edge token')
  t.ok(sent?.body.equals(Buffer.from(body)), 'the body byte for byte')
  t.equal(charged(proxy), 0, 'every charge returned')

  // The same through the node:http compatibility listener (HTTP/1.0 clients and the like).
  const compat = await request(`http://127.0.0.1:${proxy.role.door.compatPort}/js/@acme%2flib`, { method: 'PUT', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${EDGE_TOKEN}` } })
  t.equal(compat.statusCode, 201)
  await compat.body.dump()
  t.equal(target.received.length, 2)
  t.ok(target.received[1]?.body.equals(Buffer.from(body)))
  t.same((proxy.role.metrics()['service.publish'] as { relayed: unknown }).relayed, { '2xx': 2 })
})

t.test('the body is charged to the memory gate while in flight, and released after', async (t) => {
  const target = await startTarget(t)
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: { mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, scopes: ['@acme'] } } } },
  })
  const body = Buffer.from(bytesOf(publishDocument({ name: '@acme/slow', tarball: Buffer.alloc(600_000, 1) })))
  const half = Math.floor(body.byteLength / 2)
  // A raw connection, so the second half is sent only once the first is seen charged.
  const socket = connect(proxy.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  const answer = new Promise<string>((resolve) => {
    let text = ''
    socket.on('data', (chunk) => { text += chunk.toString('latin1'); if (text.includes('\r\n\r\n') && text.endsWith('}')) resolve(text) })
    socket.on('close', () => resolve(text))
  })
  socket.write(`PUT /js/@acme%2fslow HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${EDGE_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.byteLength}\r\n\r\n`)
  socket.write(body.subarray(0, half))
  // The entry step (1 MiB) plus what has arrived: polled, since arrival is the kernel's business.
  while (charged(proxy) < 1024 * 1024 + half) await new Promise((resolve) => setTimeout(resolve, 20))
  t.ok(charged(proxy) >= 1024 * 1024 + half, 'the received half is charged with the entry step')
  t.equal(target.received.length, 0, 'nothing sent before the body ended')
  socket.write(body.subarray(half))
  t.match(await answer, /^HTTP\/1\.1 201/)
  t.equal(target.received.length, 1)
  t.equal(charged(proxy), 0, 'released when the exchange ended')
})

t.test('a target that does not answer: 503 with Retry-After', async (t) => {
  const target = await startTarget(t)
  await new Promise<void>((resolve) => target.server.close(() => resolve()))
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: { mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, scopes: ['@acme'] } } } },
  })
  const res = await proxy.fetch('PUT', '/js/@acme%2flib', { body: bytesOf(publishDocument({ name: '@acme/lib' })), headers: { 'content-type': 'application/json' } })
  t.equal(res.status, 503)
  t.ok(res.headers['retry-after'])
  t.match(res.json(), { error: /publication target/ })
})

t.test('a one-version unpublish PUT to -rev and a package DELETE answer 501 without reaching the target', async (t) => {
  const target = await startTarget(t)
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: { mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, scopes: ['@acme'] } } } },
  })
  const doc = publishDocument({ name: '@acme/lib' })
  delete doc['_attachments']
  const put = await proxy.fetch('PUT', '/js/@acme%2flib/-rev/2-abc', { body: bytesOf(doc), headers: { 'content-type': 'application/json' } })
  t.equal(put.status, 501)
  t.match(put.json(), { error: /made at the publication target/ })
  const deprecate = await proxy.fetch('PUT', '/js/@acme%2flib', { body: bytesOf(doc), headers: { 'content-type': 'application/json' } })
  t.equal(deprecate.status, 501)
  t.equal((await proxy.fetch('DELETE', '/js/@acme%2flib/-rev/2-abc')).status, 501)
  t.equal((await proxy.fetch('DELETE', '/js/@acme%2flib/-/lib-1.0.0.tgz/-rev/3-def')).status, 501)
  t.equal(target.received.length, 0)
})

t.test('a client that goes away mid-body: every charge returns, nothing reaches the target', async (t) => {
  const target = await startTarget(t)
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: { mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, scopes: ['@acme'] } } } },
  })
  const body = Buffer.from(bytesOf(publishDocument({ name: '@acme/gone', tarball: Buffer.alloc(400_000, 2) })))
  const socket = connect(proxy.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  socket.write(`PUT /js/@acme%2fgone HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${EDGE_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.byteLength}\r\n\r\n`)
  socket.write(body.subarray(0, 100_000))
  while (charged(proxy) < 1024 * 1024 + 100_000) await new Promise((resolve) => setTimeout(resolve, 20))
  socket.destroy()
  while (charged(proxy) !== 0) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(charged(proxy), 0)
  t.equal(proxy.role.door.inFlight, 0, 'the exchange ended')
  t.equal(target.received.length, 0)
})
