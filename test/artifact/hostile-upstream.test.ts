/**
 * Artifact upstreams that misbehave on purpose (issue 11, defects 1, 2, 3
 * and 12), through the artifact route on a real front door: every refused
 * answer settles (the private leg falls through to the public leg, the
 * client always gets an answer), no upstream byte can forge a header, a body
 * delimited by the connection closing is never relayed as whole or
 * mirrored, and a malformed Content-Length is never turned into a length.
 */
import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server, type Socket, type AddressInfo } from 'node:net'
import { TLSSocket } from 'node:tls'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { makeClient, startServer } from '../upstream/servers.js'
import type { SelectedArtifact } from '../../server/routes/artifact-route.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { startArtifactRoute } from './harness.js'

const TARBALL = randomBytes(50_000)
const SHA512 = `sha512-${createHash('sha512').update(TARBALL).digest('base64')}`
const ca = await makeTestCa()

function selected(tarball: string): SelectedArtifact {
  return { version: '1.0.0', filename: 'a-1.0.0.tgz', tarball, integrity: SHA512, shasum: undefined, publishedAt: new Date('2020-01-01T00:00:00Z') }
}

/**
 * A raw upstream that writes `answer` as given for every request, then
 * closes as `close` says: 'keep' leaves the connection open, 'fin' ends
 * TCP (over TLS: without close_notify).
 */
async function rawUpstream(t: Test, answer: string, options: { tls?: TestCa; close?: 'keep' | 'fin' } = {}): Promise<string> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((raw) => {
    sockets.add(raw)
    raw.on('close', () => sockets.delete(raw))
    raw.on('error', () => {})
    const socket: Socket = options.tls === undefined ? raw : new TLSSocket(raw, { isServer: true, key: options.tls.keyPem, cert: options.tls.certPem })
    socket.on('error', () => {})
    let seen = ''
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1')
      if (!seen.includes('\r\n\r\n')) return
      seen = ''
      socket.write(answer, 'latin1', () => { if (options.close === 'fin') raw.end() })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  return `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A well-behaved https public upstream serving TARBALL. */
async function publicLeg(t: Test) {
  const up = await startServer(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TARBALL.byteLength })
    res.end(req.method === 'HEAD' ? undefined : TARBALL)
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  return { client, tarball: `${up.origin}/a/-/a-1.0.0.tgz`, seen: up.seen }
}

const REFUSED_FRAMINGS: Record<string, string> = {
  'content-length with transfer-encoding': 'content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'two different content-lengths': 'content-length: 5\r\ncontent-length: 6\r\n\r\nhello!',
  'the same content-length twice': 'content-length: 5\r\ncontent-length: 5\r\n\r\nhello',
  'a garbled content-length': 'content-length: 5x\r\n\r\nhello',
  'a 16-digit content-length': 'content-length: 1000000000000000\r\n\r\nhello',
  'transfer-encoding: gzip': 'transfer-encoding: gzip\r\n\r\nhello',
  'transfer-encoding: identity': 'transfer-encoding: identity\r\n\r\nhello',
  'transfer-encoding: chunked, gzip': 'transfer-encoding: chunked, gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'transfer-encoding: gzip, chunked': 'transfer-encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
}

t.test('refused upstream framing settles: the private leg falls through to the public leg', async (t) => {
  const pub = await publicLeg(t)
  for (const [name, rest] of Object.entries(REFUSED_FRAMINGS)) {
    const privateOrigin = await rawUpstream(t, `HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n${rest}`)
    const { client } = makeClient(t, { url: privateOrigin, trusted: true })
    const route = await startArtifactRoute(t, { privateClient: client, publicClient: pub.client, selectVersion: async () => selected(pub.tarball) })
    const res = await route.get('/js/a/-/a-1.0.0.tgz')
    t.equal(res.status, 200, `${name}: answered`)
    t.ok(res.body.equals(TARBALL), `${name}: the public leg's bytes`)
  }
})

t.test('refused upstream framing on the public leg answers in the serve error model, no job', async (t) => {
  for (const [name, rest] of Object.entries(REFUSED_FRAMINGS)) {
    const origin = await rawUpstream(t, `HTTP/1.1 200 OK\r\n${rest}`, { tls: ca })
    const { client } = makeClient(t, { url: origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
    const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${origin}/a/-/a-1.0.0.tgz`) })
    const res = await route.get('/js/a/-/a-1.0.0.tgz')
    t.equal(res.status, 503, `${name}: a transient upstream failure`)
    t.match(JSON.parse(res.body.toString()), { error: String }, `${name}: the envelope`)
    t.equal(route.jobs.length, 0, `${name}: nothing enqueued`)
  }
})

const INJECTIONS: Record<string, string> = {
  'a bare LF in a value': 'etag: "a"\nset-cookie: evil=1\nlocation: http://evil.invalid/\r\n',
  'a bare CR in a value': 'etag: "a"\rset-cookie: evil=1\r\n',
  'a NUL in a value': 'cache-control: max-age=1\x00set-cookie: evil=1\r\n',
  'LF LF splitting the response': 'content-type: text/plain\n\nHTTP/1.1 302 Found\nlocation: http://evil.invalid/\r\n',
  'an obs-fold line': 'etag: "a"\r\n set-cookie: evil=1\r\n',
  'a space before the colon': 'etag : "a"\r\n',
  'a DEL in a value': 'etag: "a\x7f"\r\n',
}

t.test('an upstream head with a control byte or obs-fold is refused: no forged header reaches the client', async (t) => {
  const pub = await publicLeg(t)
  for (const [name, header] of Object.entries(INJECTIONS)) {
    const privateOrigin = await rawUpstream(t, `HTTP/1.1 200 OK\r\n${header}content-length: 3\r\n\r\nabc`)
    const { client } = makeClient(t, { url: privateOrigin, trusted: true })
    const route = await startArtifactRoute(t, { privateClient: client, publicClient: pub.client, selectVersion: async () => selected(pub.tarball) })
    const res = await route.get('/js/a/-/a-1.0.0.tgz')
    t.equal(res.status, 200, `${name}: the private answer refused, the public one served`)
    t.ok(res.body.equals(TARBALL), `${name}: the public bytes`)
    t.equal(res.headers['set-cookie'], undefined, `${name}: no Set-Cookie`)
    t.equal(res.headers['location'], undefined, `${name}: no Location`)
  }
})

t.test('the front door writes no header that breaks RFC 9110 field syntax, whatever a route hands it', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  door.route('get', '/*', (ex) => {
    ex.respond(200, { 'x-ok': 'fine', etag: '"a"\r\nset-cookie: evil=1', 'bad name': 'x', 'x-nul': 'a\x00b' }, 'body')
  })
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())
  const res = await fetch(`http://127.0.0.1:${port}/x`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('x-ok'), 'fine')
  t.equal(res.headers.get('set-cookie'), null)
  t.equal(res.headers.get('etag'), null, 'the poisoned value dropped, not written')
  t.equal(res.headers.get('x-nul'), null)
  t.equal(await res.text(), 'body')
})

t.test('a body delimited by close is never relayed as whole, nor mirrored, even when TCP ends cleanly', async (t) => {
  // TCP FIN without a TLS close_notify: Node reports it as an ordinary end, so the relay cannot tell it from a cut.
  const origin = await rawUpstream(t, `HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\r\n${'x'.repeat(1000)}`, { tls: ca, close: 'fin' })
  const { client } = makeClient(t, { url: origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${origin}/a/-/a-1.0.0.tgz`) })
  const res = await route.get('/js/a/-/a-1.0.0.tgz')
  t.equal(res.status, 503, 'refused before the first byte')
  t.equal(route.jobs.length, 0, 'no mirror job')
  t.equal(route.counters.snapshot().relays.public.delivered, 0, 'nothing counted as delivered')
})

t.test('a malformed Content-Length on HEAD or 304 is refused, never turned into a length', async (t) => {
  const pub = await publicLeg(t)
  for (const length of ['-5', 'abc', '1e3', '']) {
    const privateOrigin = await rawUpstream(t, `HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`)
    const { client } = makeClient(t, { url: privateOrigin, trusted: true })
    const route = await startArtifactRoute(t, { privateClient: client, publicClient: pub.client, selectVersion: async () => selected(pub.tarball) })
    const res = await route.head('/js/a/-/a-1.0.0.tgz')
    t.equal(res.status, 200, `HEAD, content-length ${JSON.stringify(length)}: the public leg answered`)
    t.equal(res.headers['content-length'], String(TARBALL.byteLength), `HEAD, content-length ${JSON.stringify(length)}: the real length`)
  }
  for (const length of ['-5', 'abc']) {
    const privateOrigin = await rawUpstream(t, `HTTP/1.1 304 Not Modified\r\netag: "v"\r\ncontent-length: ${length}\r\n\r\n`)
    const { client } = makeClient(t, { url: privateOrigin, trusted: true })
    const route = await startArtifactRoute(t, { privateClient: client, publicClient: pub.client, selectVersion: async () => selected(pub.tarball) })
    const res = await route.get('/js/a/-/a-1.0.0.tgz', { 'if-none-match': '"v"' })
    t.not(res.headers['content-length'], '18446744073709551611', `304, content-length ${length}: no invented length`)
    t.not(res.headers['content-length'], '9223372036854775808', `304, content-length ${length}: no invented length`)
    t.equal(res.status, 200, `304, content-length ${length}: refused, the public leg answered`)
  }
})

t.test('a 206 or an unprompted 304 is not the artifact: the public leg answers 503 without a job, the private leg falls through', async (t) => {
  const answers = {
    '206 to a GET that asked for no range': `HTTP/1.1 206 Partial Content\r\ncontent-range: bytes 0-2/50000\r\ncontent-length: 3\r\n\r\nabc`,
    '304 to a GET that asked for no validation': `HTTP/1.1 304 Not Modified\r\netag: "v"\r\n\r\n`,
    '203 with a body': `HTTP/1.1 203 Non-Authoritative\r\ncontent-length: 3\r\n\r\nabc`,
  }
  const pub = await publicLeg(t)
  for (const [name, answer] of Object.entries(answers)) {
    const origin = await rawUpstream(t, answer, { tls: ca })
    const { client } = makeClient(t, { url: origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
    const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${origin}/a/-/a-1.0.0.tgz`) })
    const res = await route.get('/js/a/-/a-1.0.0.tgz')
    t.equal(res.status, 503, `public ${name}: 503`)
    t.ok(res.headers['retry-after'], `public ${name}: Retry-After`)
    t.equal(route.jobs.length, 0, `public ${name}: no job`)
    const head = await route.head('/js/a/-/a-1.0.0.tgz')
    t.equal(head.status, 503, `public ${name}, HEAD: 503`)
    t.equal(head.body.byteLength, 0, `public ${name}, HEAD: no body`)

    const privateOrigin = await rawUpstream(t, answer)
    const priv = makeClient(t, { url: privateOrigin, trusted: true }).client
    const both = await startArtifactRoute(t, { privateClient: priv, publicClient: pub.client, selectVersion: async () => selected(pub.tarball) })
    const fell = await both.get('/js/a/-/a-1.0.0.tgz')
    t.equal(fell.status, 200, `private ${name}: fell through`)
    t.ok(fell.body.equals(TARBALL), `private ${name}: the public leg's whole artifact`)
    const fellHead = await both.head('/js/a/-/a-1.0.0.tgz')
    t.equal(fellHead.status, 200, `private ${name}, HEAD: fell through`)
    t.equal(fellHead.headers['content-length'], String(TARBALL.byteLength), `private ${name}, HEAD: the public leg's length`)
  }
})
