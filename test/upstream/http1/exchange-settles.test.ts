/**
 * Every path out of an artifact exchange settles it exactly once (issue 11,
 * defects 1, 3 and 12, at the client level): a refused head rejects the
 * head promise at once, a body whose framing breaks fails the body, and the
 * connection is closed, never parked. First on a scripted connection (every
 * refusal, deterministic), then on real sockets through the UpstreamClient,
 * with head timeouts so long that only the refusal itself can answer, and a
 * graceful close that must finish afterwards (the drain).
 */
import t, { type Test } from 'tap'
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { TLSSocket } from 'node:tls'
import { isServiceError } from '../../../engine/errors.js'
import { makeTestCa } from '../../../bench/peers/tls.js'
import type { ArtifactResponse } from '../../../engine/upstream/http1/artifact-response.js'
import { codeOf, makeClient } from '../servers.js'
import { scriptedExchange } from './scripted-socket.js'

/** The framings the relay refuses (issue 11 defect 1, and RFC 9112 section 6.1). */
const REFUSED_FRAMINGS: Record<string, string> = {
  'Content-Length with Transfer-Encoding': 'content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'two different Content-Lengths': 'content-length: 5\r\ncontent-length: 6\r\n\r\nhello!',
  'the same Content-Length twice': 'content-length: 5\r\ncontent-length: 5\r\n\r\nhello',
  'a list in one Content-Length': 'content-length: 5, 5\r\n\r\nhello',
  'a garbled Content-Length': 'content-length: 5x\r\n\r\nhello',
  'a negative Content-Length': 'content-length: -5\r\n\r\nhello',
  'a 16-digit Content-Length': 'content-length: 1000000000000000\r\n\r\nhello',
  'an HTAB in Content-Length': 'content-length:\t5\r\n\r\nhello',
  'Transfer-Encoding: gzip': 'transfer-encoding: gzip\r\n\r\nhello',
  'Transfer-Encoding: identity': 'transfer-encoding: identity\r\n\r\nhello',
  'Transfer-Encoding: chunked, gzip': 'transfer-encoding: chunked, gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'Transfer-Encoding: gzip, chunked': 'transfer-encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'Transfer-Encoding: chunked<HTAB>': 'transfer-encoding: chunked\t\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'no framing (a body delimited by close)': 'content-type: application/octet-stream\r\n\r\nhello',
}

/** Whole answers refused before their body (their heads), beyond the framings above. */
const REFUSED_HEADS: Record<string, string> = {
  'Transfer-Encoding in HTTP/1.0': 'HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'a 101 nobody asked for': 'HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\n',
  'a bare LF in the head': 'HTTP/1.1 200 OK\r\netag: "a"\nset-cookie: x=1\r\ncontent-length: 0\r\n\r\n',
  'a NUL in a value': 'HTTP/1.1 200 OK\r\netag: "a\x00"\r\ncontent-length: 0\r\n\r\n',
  'obs-fold': 'HTTP/1.1 200 OK\r\netag: "a"\r\n set-cookie: x=1\r\ncontent-length: 0\r\n\r\n',
}

const MALFORMED_LENGTHS = ['-5', 'abc', '', '1e3', '18446744073709551611', '5 5']

const answers = (): [string, string, 'GET' | 'HEAD'][] => [
  ...Object.entries(REFUSED_FRAMINGS).map(([name, rest]): [string, string, 'GET'] => [name, `HTTP/1.1 200 OK\r\n${rest}`, 'GET']),
  ...Object.entries(REFUSED_HEADS).map(([name, text]): [string, string, 'GET'] => [name, text, 'GET']),
  ...MALFORMED_LENGTHS.map((length): [string, string, 'HEAD'] => [`HEAD, Content-Length ${JSON.stringify(length)}`, `HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`, 'HEAD']),
  ...MALFORMED_LENGTHS.map((length): [string, string, 'GET'] => [`304, Content-Length ${JSON.stringify(length)}`, `HTTP/1.1 304 Not Modified\r\netag: "v"\r\ncontent-length: ${length}\r\n\r\n`, 'GET']),
]

t.test('scripted: each refused answer rejects the head once, at once, and closes the connection', async (t) => {
  for (const [name, text, method] of answers()) {
    const run = scriptedExchange(method)
    run.feed(Buffer.from(text, 'latin1'))
    const before = run.outcome()
    t.equal(before.verdict, 'reject', `${name}: refused without waiting for the peer`)
    t.ok(isServiceError(before.error, 'UPSTREAM_UNAVAILABLE'), `${name}: coded UPSTREAM_UNAVAILABLE`)
    t.equal(before.headSettles, 1, `${name}: the head settled once`)
    t.equal(before.response, undefined, `${name}: no response, so no length was ever reported`)
    t.ok(before.destroyed && !before.parked, `${name}: the connection closed, not kept`)
    run.end()
    t.equal(run.outcome().headSettles, 1, `${name}: and never again`)
  }
})

t.test('scripted: a body whose chunked framing breaks fails once, after the bytes before the break', async (t) => {
  const broken = {
    'a bare LF after a chunk size': '3\r\nabc\r\n3\ndef\r\n0\r\n\r\n',
    'a space in a chunk size': '3\r\nabc\r\n3 \r\ndef\r\n0\r\n\r\n',
    'a chunk without its CRLF': '3\r\nabcX3\r\ndef\r\n0\r\n\r\n',
    'a Content-Length trailer': '3\r\nabc\r\n0\r\ncontent-length: 3\r\n\r\n',
  }
  for (const [name, body] of Object.entries(broken)) {
    const run = scriptedExchange()
    run.feed(Buffer.from(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${body}`, 'latin1'))
    const outcome = run.outcome()
    t.equal(outcome.headSettles, 1, `${name}: the head settled once`)
    t.equal(outcome.verdict, 'reject', `${name}: the body failed`)
    t.equal(outcome.bodySettles, 1, `${name}: once`)
    t.equal(outcome.body.toString('latin1'), 'abc', `${name}: after the bytes before the break, never past it`)
    t.ok(outcome.destroyed && !outcome.parked, `${name}: the connection closed`)
    run.end()
    t.equal(run.outcome().bodySettles, 1, `${name}: and never again`)
  }
})

/** A raw upstream that writes `answer` for each request head; over TLS when `tls` is given, closing with or without close_notify. */
async function rawUpstream(t: Test, answer: string, options: { tls?: { key: string, cert: string }, close?: 'notify' | 'fin' } = {}): Promise<string> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((raw) => {
    sockets.add(raw)
    raw.on('close', () => sockets.delete(raw))
    raw.on('error', () => {})
    const socket: Socket = options.tls === undefined ? raw : new TLSSocket(raw, { isServer: true, ...options.tls })
    socket.on('error', () => {})
    let seen = ''
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1')
      if (!seen.includes('\r\n\r\n')) return
      seen = ''
      socket.write(answer, 'latin1', () => {
        // 'notify': TLS close_notify then FIN (socket.end); 'fin': TCP FIN alone, under the TLS layer.
        if (options.close === 'notify') socket.end()
        else if (options.close === 'fin') raw.end()
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  return `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The code openArtifact was refused with; an answer it wrongly accepted has its body destroyed, so the close that follows cannot wait on it. */
function refusal(opening: Promise<ArtifactResponse>): Promise<string> {
  return codeOf(opening.then((res) => { res.body?.destroy(); return res }))
}

/** Only the refusal itself can answer within these: a hang fails the subtest's own timeout instead. */
const PATIENT = { headersMs: 600_000, bodyIdleMs: 600_000, pausedReadMs: 600_000 }

t.test('real sockets: each refused answer rejects openArtifact, and a graceful close then finishes', { timeout: 60_000 }, async (t) => {
  for (const [name, text, method] of answers()) {
    const origin = await rawUpstream(t, text)
    const { client } = makeClient(t, { url: origin, trusted: true, timeouts: PATIENT })
    const code = await refusal(client.openArtifact(new URL(`${origin}/a/-/a-1.0.0.tgz`), { method }))
    t.equal(code, 'UPSTREAM_UNAVAILABLE', `${name}: refused`)
    await t.resolves(client.close(), `${name}: the client closes (a drain can finish)`)
  }
})

t.test('real sockets: a body delimited by close is refused before its first byte, whatever ends it', { timeout: 60_000 }, async (t) => {
  // Node cannot tell a TLS close_notify from a bare TCP FIN (both are 'end'),
  // and plain http has no close_notify at all: no ending proves the body whole.
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const answer = 'HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\r\nhello world'
  const cases = {
    'plain http, FIN (the private leg over http)': await rawUpstream(t, answer, { close: 'fin' }),
    'TLS, FIN without close_notify': await rawUpstream(t, answer, { tls: { key: ca.keyPem, cert: ca.certPem }, close: 'fin' }),
    'TLS, close_notify then FIN': await rawUpstream(t, answer, { tls: { key: ca.keyPem, cert: ca.certPem }, close: 'notify' }),
  }
  for (const [name, origin] of Object.entries(cases)) {
    const { client } = makeClient(t, { url: origin, trusted: true, caPem: ca.caPem, timeouts: PATIENT })
    t.equal(await refusal(client.openArtifact(new URL(`${origin}/a/-/a-1.0.0.tgz`), { method: 'GET' })), 'UPSTREAM_UNAVAILABLE', name)
    await client.close()
  }
})
