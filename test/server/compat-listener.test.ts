/**
 * The front door's node:http listener (`compatPort`), with exact bytes on
 * real sockets: it answers what the uWS port drops in its native parser
 * (HTTP/1.0, pipelining behind a pending answer, many header lines) through
 * the same routes, handlers and Exchange.
 */
import t, { type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { FrontDoor } from '../../server/http/front-door.js'
import type { Exchange } from '../../server/http/exchange.js'
import { CompatRoutes, MAX_HEADER_LINES } from '../../server/http/compat-listener.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const BIG = randomBytes(4 * 1024 * 1024)

async function startDoor(t: Test): Promise<FrontDoor> {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, compatPort: 0, logger: new RecordingLogger() })
  door.route('get', '/readyz', (ex) => ex.respondJson(200, { status: 'ready' }))
  door.route('get', '/slow/:n', async (ex) => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    ex.respondJson(200, { slow: ex.path.slice('/slow/'.length) })
  })
  door.route('get', '/stream', (ex) => {
    ex.writeHead(200, { 'content-type': 'text/plain' })
    setImmediate(() => { ex.write(Buffer.from('abc')); ex.write(Buffer.from('def')); ex.end() })
  })
  door.route('get', '/big', async (ex) => { await ex.respondBuffered(200, { 'content-type': 'application/octet-stream' }, BIG) })
  door.route('head', '/big', async (ex) => { await ex.respondBuffered(200, { 'content-type': 'application/octet-stream' }, BIG) })
  door.route('any', '/*', (ex) => ex.respondJson(404, { error: 'not found' }))
  await door.listen()
  t.teardown(() => door.stopAccepting())
  return door
}

interface Wire { readonly text: string; readonly bytes: Buffer; readonly closedByServer: boolean }

/** Writes `raw`, then reads until `done(text)` holds, the server closes, or 5 s pass (a bound, never asserted on). */
async function wire(port: number, raw: string, done: (text: string) => boolean = () => false, socketHook?: (s: Socket) => void): Promise<Wire> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const chunks: Buffer[] = []
  let closedByServer = false
  const finished = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 5000)
    timer.unref()
    socket.on('data', (c: Buffer) => {
      chunks.push(c)
      if (done(Buffer.concat(chunks).toString('latin1'))) { clearTimeout(timer); resolve() }
    })
    socket.on('close', () => { closedByServer = true; clearTimeout(timer); resolve() })
    socket.on('error', () => {})
  })
  socket.write(raw)
  socketHook?.(socket)
  await finished
  socket.destroy()
  const bytes = Buffer.concat(chunks)
  return { text: bytes.toString('latin1'), bytes, closedByServer }
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = bytes.indexOf('\r\n', at)
    const size = parseInt(bytes.subarray(at, eol).toString('latin1'), 16)
    if (!(size > 0)) return Buffer.concat(parts)
    parts.push(bytes.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

/** Splits a byte stream of responses with Content-Length bodies. */
function responses(text: string): { head: string; body: string }[] {
  const out: { head: string; body: string }[] = []
  let rest = text
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end === -1) break
    const head = rest.slice(0, end)
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
    out.push({ head, body: rest.slice(end + 4, end + 4 + length) })
    rest = rest.slice(end + 4 + length)
  }
  return out
}

t.test('HTTP/1.0 is answered: no chunked encoding, closed unless keep-alive was asked', async (t) => {
  const door = await startDoor(t)
  const port = door.compatPort
  t.ok(port > 0, 'the node:http listener has a port of its own')
  t.not(port, door.port)

  // HAProxy's default check: HTTP/1.0, no Host.
  const probe = await wire(port, 'GET /readyz HTTP/1.0\r\n\r\n')
  t.match(probe.text, /^HTTP\/1\.1 200 OK\r\n/, '/readyz over HTTP/1.0 is answered')
  t.match(probe.text, /\r\nconnection: close\r\n/i)
  t.notMatch(probe.text, /transfer-encoding/i)
  t.equal(responses(probe.text)[0]?.body, '{"status":"ready"}')
  t.ok(probe.closedByServer, 'the server closes: the client did not ask keep-alive')

  const stream = await wire(port, 'GET /stream HTTP/1.0\r\nhost: x\r\n\r\n')
  t.match(stream.text, /^HTTP\/1\.1 200 OK\r\n/)
  t.notMatch(stream.text, /transfer-encoding/i, 'a body of unknown length is not chunked for HTTP/1.0')
  t.ok(stream.text.endsWith('\r\n\r\nabcdef'), 'the body is the bytes, delimited by the close')
  t.ok(stream.closedByServer)

  const kept = await wire(port, 'GET /readyz HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET /slow/2 HTTP/1.0\r\n\r\n', (text) => responses(text).length === 2)
  const [first, second] = responses(kept.text)
  t.match(first?.head, /\r\nconnection: keep-alive/i, 'keep-alive was asked: kept')
  t.equal(second?.body, '{"slow":"2"}', 'the next request on that connection is answered')
})

t.test('pipelined requests behind a pending answer are answered, in order', async (t) => {
  const door = await startDoor(t)
  const raw = 'GET /slow/1 HTTP/1.1\r\nhost: x\r\n\r\nGET /readyz HTTP/1.1\r\nhost: x\r\n\r\nGET /slow/3 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'
  const got = await wire(door.compatPort, raw)
  t.same(responses(got.text).map((r) => r.body), ['{"slow":"1"}', '{"status":"ready"}', '{"slow":"3"}'])
  t.ok(got.closedByServer, 'closed after the last, which asked it')
})

t.test(`more than ${MAX_HEADER_LINES} header lines: 431 and closed; up to it, served`, async (t) => {
  const door = await startDoor(t)
  /** A request of exactly `n` header lines: host, n - 2 fillers, connection. */
  const request = (n: number): string => `GET /readyz HTTP/1.1\r\nhost: x\r\n${Array.from({ length: n - 2 }, (_, i) => `x-h${i}: v\r\n`).join('')}connection: close\r\n\r\n`
  const over = await wire(door.compatPort, request(MAX_HEADER_LINES + 1))
  t.match(over.text, /^HTTP\/1\.1 431 /, `${MAX_HEADER_LINES + 1} lines: 431`)
  t.ok(over.closedByServer)
  const atLimit = await wire(door.compatPort, request(MAX_HEADER_LINES))
  t.match(atLimit.text, /^HTTP\/1\.1 200 /, `${MAX_HEADER_LINES} lines: served`)
  const huge = await wire(door.compatPort, `GET /readyz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20000)}\r\n\r\n`)
  t.match(huge.text, /^HTTP\/1\.1 431 /, 'a head over 16 KiB: 431')
  t.ok(huge.closedByServer)
})

t.test('ambiguous framing is refused with 400 and the connection closed (RFC 9112 section 6.3)', async (t) => {
  const door = await startDoor(t)
  for (const raw of [
    'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ncontent-length: 5\r\n\r\nabcdeGET /readyz HTTP/1.1\r\nhost: x\r\n\r\n',
    'POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /readyz HTTP/1.1\r\nhost: x\r\n\r\n',
    'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /readyz HTTP/1.1\r\nhost: x\r\n\r\n',
  ]) {
    const got = await wire(door.compatPort, raw)
    const name = raw.split('\r\n').slice(2, 4).join(' | ')
    t.match(got.text, /^HTTP\/1\.1 400 /, name)
    t.notMatch(got.text, /200 OK/, `${name}: the request behind it is not answered`)
    t.ok(got.closedByServer, `${name}: closed`)
  }
})

t.test('a streamed body under backpressure arrives whole, resumed from onWritable; HEAD gets its length', async (t) => {
  const door = await startDoor(t)
  let waits = 0
  // As the relay streams an artifact: chunk by chunk, waiting for onWritable whenever a write says so.
  const stream = (ex: Exchange, known: boolean): void => {
    ex.writeHead(200, { 'content-type': 'application/octet-stream' })
    let at = 0
    const pump = (): void => {
      while (at < BIG.length && !ex.closed) {
        const chunk = BIG.subarray(at, at + 64 * 1024)
        at += chunk.byteLength
        const ok = known ? ex.tryEnd(chunk, BIG.length).ok : ex.write(chunk)
        if (!ok && at < BIG.length) { waits++; return }
      }
      if (!known) ex.end()
    }
    ex.onWritable(() => { setImmediate(pump); return true })
    setImmediate(pump)
  }
  door.route('get', '/streamed/known', (ex) => stream(ex, true))
  door.route('get', '/streamed/unknown', (ex) => stream(ex, false))
  for (const version of ['1.0', '1.1']) {
    for (const known of [true, false]) {
      const name = `HTTP/${version}, ${known ? 'known length' : 'unknown length'}`
      waits = 0
      const got = await wire(door.compatPort, `GET /streamed/${known ? 'known' : 'unknown'} HTTP/${version}\r\nhost: x\r\nconnection: close\r\n\r\n`, undefined, (socket) => {
        // Read nothing for a while so the server's writes back up.
        socket.pause()
        setTimeout(() => socket.resume(), 200)
      })
      const end = got.bytes.indexOf('\r\n\r\n')
      const head = got.text.slice(0, end)
      t.ok(waits > 0, `${name}: the writes backed up and resumed`)
      if (known) t.match(head, new RegExp(`\\r\\ncontent-length: ${BIG.length}`, 'i'), `${name}: the length`)
      if (version === '1.0') t.notMatch(head, /transfer-encoding/i, `${name}: never chunked`)
      let body = got.bytes.subarray(end + 4)
      if (/transfer-encoding: chunked/i.test(head)) body = dechunk(body)
      t.ok(body.equals(BIG), `${name}: every byte, in order`)
    }
  }
  const head = await wire(door.compatPort, 'HEAD /big HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
  t.match(head.text, new RegExp(`\\r\\ncontent-length: ${BIG.length}\\r\\n`, 'i'))
  t.ok(head.text.endsWith('\r\n\r\n'), 'no body')
  const buffered = await wire(door.compatPort, 'GET /big HTTP/1.0\r\n\r\n')
  t.ok(buffered.bytes.subarray(buffered.bytes.indexOf('\r\n\r\n') + 4).equals(BIG), 'a buffered body arrives whole')
})

t.test('draining: the listener stops accepting and answers carry Connection: close', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, compatPort: 0, logger: new RecordingLogger() })
  let arrived!: () => void
  const arrival = new Promise<void>((resolve) => { arrived = resolve })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  door.route('get', '/held', async (ex) => {
    arrived()
    await released
    ex.respondJson(200, { held: true })
  })
  await door.listen()
  t.teardown(() => { release(); door.stopAccepting() })
  const port = door.compatPort
  const pending = wire(port, 'GET /held HTTP/1.1\r\nhost: x\r\n\r\n', (text) => responses(text).length === 1)
  await arrival
  door.startDraining()
  const refused = connect(port, '127.0.0.1')
  const [error] = await once(refused, 'error') as [NodeJS.ErrnoException]
  t.equal(error.code, 'ECONNREFUSED', 'no new connection is accepted')
  release()
  const got = await pending
  t.equal(responses(got.text)[0]?.body, '{"held":true}', 'the request in flight finishes')
  t.match(got.text, /\r\nconnection: close\r\n/i)
})

t.test('a path reaches the same route on both ports', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, compatPort: 0, logger: new RecordingLogger() })
  const patterns: [Parameters<FrontDoor['route']>[0], string][] = [
    ['get', '/livez'], ['get', '/readyz'], ['get', '/readyz/:mount'], ['any', '/js'], ['any', '/js/*'], ['del', '/js/x'], ['any', '/*'],
  ]
  for (const [method, pattern] of patterns) door.route(method, pattern, (ex) => ex.respond(200, { 'x-route': `${method} ${pattern}` }, ''))
  await door.listen()
  t.teardown(() => door.stopAccepting())
  const paths = ['/', '/livez', '/livez/', '/livez/x', '/readyz', '/readyz/', '/readyz/js', '/readyz/js/x', '/js', '/js/', '/js/lodash', '/js/@s%2fn/-/n-1.0.0.tgz', '/js/x', '/jsx', '/elsewhere', '/readyz?x=1']
  for (const method of ['GET', 'HEAD', 'PUT', 'DELETE']) {
    for (const path of paths) {
      const raw = `${method} ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`
      const route = (text: string): string => /\r\nx-route: ([^\r]*)/i.exec(text)?.[1] ?? `none: ${text.slice(0, 40)}`
      const [uws, node] = await Promise.all([wire(door.port, raw), wire(door.compatPort, raw)])
      t.equal(route(node.text), route(uws.text), `${method} ${path}`)
    }
  }
})

t.test('CompatRoutes: static beats parameter beats wildcard, then the method beats any', async (t) => {
  const routes = new CompatRoutes()
  routes.add('any', '/*', 'fallback')
  routes.add('any', '/js/*', 'js')
  routes.add('get', '/readyz/:mount', 'mount')
  routes.add('get', '/readyz/js', 'static')
  routes.add('any', '/readyz/js', 'any-static')
  t.equal(routes.match('GET', '/readyz/js')?.handler, 'static')
  t.equal(routes.match('POST', '/readyz/js')?.handler, 'any-static')
  t.equal(routes.match('GET', '/readyz/py')?.handler, 'mount')
  t.equal(routes.match('GET', '/js/a/b')?.handler, 'js')
  t.equal(routes.match('GET', '/js')?.handler, 'fallback')
  t.equal(routes.match('DELETE', '/nowhere')?.handler, 'fallback')
  t.equal(new CompatRoutes().match('GET', '/'), undefined)
})
