/**
 * The artifact relay's own upstream connections (engine/upstream/http1/artifact-connection-pool.ts)
 * against raw TCP servers that control every byte: framing across reads
 * (a split head, a 100 Continue, a chunked body in tiny pieces, a body that
 * runs until the connection closes refused), keep-alive
 * reuse, a stale kept-alive connection retried once on a fresh one, bytes
 * past the declared end spoiling the connection, a malformed answer coded,
 * the connection cap, a body that failed before it was read still
 * telling its consumer, and chunked framing that breaks mid-body reaching
 * the client as a cut.
 */
import t from 'tap'
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { isServiceError, type ServiceError } from '../../engine/errors.js'
import { codeOf, makeClient } from '../upstream/servers.js'
import { startArtifactRoute } from './harness.js'

interface Raw {
  readonly origin: string
  /** Connections accepted so far. */
  connections(): number
  /** Requests seen so far (their request lines). */
  readonly requests: string[]
}

/** `answer(socket, n, request)` is called for every request head received; n counts connections from 1. */
async function startRaw(t: { teardown(fn: () => unknown): void }, answer: (socket: Socket, connection: number, requestLine: string) => void): Promise<Raw> {
  let connections = 0
  const requests: string[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    const n = ++connections
    sockets.add(socket)
    socket.setNoDelay(true)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let pending = ''
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1')
      let at: number
      while ((at = pending.indexOf('\r\n\r\n')) !== -1) {
        const line = pending.slice(0, pending.indexOf('\r\n'))
        pending = pending.slice(at + 4)
        requests.push(line)
        answer(socket, n, line)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, requests }
}

/** Writes `pieces` one by one with a pause between, so each arrives in its own read. */
async function dribble(socket: Socket, pieces: readonly string[]): Promise<void> {
  for (const piece of pieces) {
    if (socket.destroyed) return
    socket.write(piece, 'latin1')
    await sleep(15)
  }
}

async function readAll(body: NodeJS.ReadableStream): Promise<string> {
  const parts: Buffer[] = []
  for await (const chunk of body) parts.push(Buffer.from(chunk as Uint8Array))
  return Buffer.concat(parts).toString('latin1')
}

t.test('framing across reads: a split head, a 100 Continue, a chunked body in tiny pieces, through the relay', async (t) => {
  const up = await startRaw(t, (socket, _n, line) => {
    if (line.includes('/until-close')) {
      // No length and no chunking: the body runs until the connection closes.
      void dribble(socket, ['HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nhello', ' world']).then(() => socket.end())
      return
    }
    if (line.includes('/chunked')) {
      void dribble(socket, [
        'HTTP/1.1 100 Continue\r\n\r\n',
        'HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ntransfer-en', 'coding: chunked\r\n\r\n',
        '5\r\nhel', 'lo\r', '\n6;ext=1\r\n wor', 'ld\r\n0\r\n', 'trailer: x\r\n\r\n',
      ])
    } else {
      void dribble(socket, ['HTTP/1.1 200 OK\r\ncontent-le', 'ngth: 11\r\n\r', '\nhello', ' world'])
    }
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const route = await startArtifactRoute(t, { privateClient: client })
  for (const path of ['/js/a/-/a-1.0.0.tgz', '/js/chunked/-/chunked-1.0.0.tgz']) {
    const res = await route.get(path)
    t.equal(res.status, 200, path)
    t.equal(res.body.toString('latin1'), 'hello world', `${path}: every byte, in order`)
  }
  t.equal(route.counters.snapshot().relays.private.delivered, 2)
  t.equal(up.connections(), 1, 'both answers came over one kept-alive connection')
  const closing = await route.get('/js/until-close/-/until-close-1.0.0.tgz')
  // Refused before its first byte, so the private leg falls through; this route has no public leg.
  t.equal(closing.status, 404, 'a body that runs until close cannot be told from a cut: never relayed')
  t.equal(route.counters.snapshot().relays.private.delivered, 2, 'not counted as delivered')

  // The same bytes through the Readable side (the copy path).
  const res = await client.openArtifact(new URL(`${up.origin}/chunked/-/chunked-1.0.0.tgz`), { method: 'GET' })
  t.equal(res.statusCode, 200)
  t.equal(res.body === null ? '' : await readAll(res.body), 'hello world')
  t.equal(up.connections(), 2, 'the connection whose answer was refused was not kept')
})

t.test('a kept-alive connection the server dropped is retried once on a fresh one', async (t) => {
  const up = await startRaw(t, (socket, n) => {
    // The first connection answers once, then dies on the next request as if its idle timer fired.
    if (n === 1 && socket.bytesWritten > 0) { socket.destroy(); return }
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc')
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const url = new URL(`${up.origin}/a/-/a-1.0.0.tgz`)
  for (let i = 0; i < 2; i++) {
    const res = await client.openArtifact(url, { method: 'GET' })
    t.equal(res.statusCode, 200)
    t.equal(res.body === null ? '' : await readAll(res.body), 'abc', `request ${i + 1}`)
  }
  t.equal(up.connections(), 2, 'the retry opened a fresh connection')
  t.equal(up.requests.length, 3)
})

t.test('bytes past the declared end are not relayed and spoil the connection; a malformed answer is coded', async (t) => {
  const up = await startRaw(t, (socket, _n, line) => {
    if (line.includes('/bad')) { socket.write('HTTP/9 banana\r\n\r\n'); return }
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabcEXTRA')
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const url = new URL(`${up.origin}/a/-/a-1.0.0.tgz`)
  for (let i = 0; i < 2; i++) {
    const res = await client.openArtifact(url, { method: 'GET' })
    t.equal(res.body === null ? '' : await readAll(res.body), 'abc')
  }
  t.equal(up.connections(), 2, 'a connection with bytes after its answer is not reused')
  t.equal(await codeOf(client.openArtifact(new URL(`${up.origin}/bad.tgz`), { method: 'GET' })), 'UPSTREAM_UNAVAILABLE')
})

t.test('the connection cap queues a second request until the first body is read', async (t) => {
  const up = await startRaw(t, (socket) => { socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok') })
  const { client } = makeClient(t, { url: up.origin, trusted: true, connections: 1 })
  const url = new URL(`${up.origin}/a/-/a-1.0.0.tgz`)
  const first = await client.openArtifact(url, { method: 'GET' })
  let secondDone = false
  const second = client.openArtifact(url, { method: 'GET' }).then((r) => { secondDone = true; return r })
  await sleep(50)
  t.notOk(secondDone, 'the second waits while the only connection is busy')
  t.equal(first.body === null ? '' : await readAll(first.body), 'ok')
  const res = await second
  t.equal(res.body === null ? '' : await readAll(res.body), 'ok')
  t.equal(up.connections(), 1)
})

t.test('a body cut or destroyed before it was read still tells its consumer', async (t) => {
  const sockets: Socket[] = []
  const up = await startRaw(t, (socket) => {
    sockets.push(socket)
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc')
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const url = new URL(`${up.origin}/a/-/a-1.0.0.tgz`)

  // The upstream dies before the consumer attaches: the bytes already read come first, then the failure.
  const cut = await client.openArtifact(url, { method: 'GET' })
  if (cut.body === null) { t.fail('no body'); return }
  sockets[0]?.destroy()
  await sleep(30)
  let seen = ''
  const failure = await new Promise<ServiceError>((resolve) => {
    cut.body?.attach({ data: (chunk) => { seen += Buffer.from(chunk).toString('latin1'); return true }, end: () => t.fail('not a complete body'), error: resolve })
  })
  t.equal(seen, 'abc')
  t.ok(isServiceError(failure, 'UPSTREAM_UNAVAILABLE'))

  // The body is destroyed (the client left) before the relay attaches: attaching fails at once.
  const gone = await client.openArtifact(url, { method: 'GET' })
  if (gone.body === null) { t.fail('no body'); return }
  gone.body.destroy()
  await once(gone.body, 'close')
  const told = await new Promise<ServiceError>((resolve) => {
    gone.body?.attach({ data: () => true, end: () => t.fail('not a complete body'), error: resolve })
  })
  t.ok(isServiceError(told, 'UPSTREAM_UNAVAILABLE'))
  await sleep(20)
  t.ok(sockets[1]?.destroyed, 'its upstream connection was closed')
})

t.test('chunked framing that breaks after the first bytes reaches the client as a cut, never as a whole body', async (t) => {
  // A bare LF ends the second chunk-size line (RFC 9112 section 7.1 wants CRLF; llhttp refuses it too).
  const up = await startRaw(t, (socket) => {
    void dribble(socket, ['HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n', '6\n world\r\n0\r\n\r\n'])
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const route = await startArtifactRoute(t, { privateClient: client })
  const outcome = await route.get('/js/a/-/a-1.0.0.tgz').then((res) => `answered ${res.status}: ${res.body.toString('latin1')}`, (err: unknown) => `cut: ${(err as Error).name}`)
  t.match(outcome, /^cut: /, 'the client sees the response cut, not a complete one')
  t.equal(route.counters.snapshot().relays.private.delivered, 0, 'not counted as delivered')
})
