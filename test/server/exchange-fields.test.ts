/**
 * What the Exchange writes, read as raw bytes off a real front door: a
 * framing or hop-by-hop field a route hands it is never written, in any
 * letter case (uWS frames the message itself), and a HEAD request gets
 * GET's status and headers with the length GET's body has, never a body,
 * whatever the route passes (RFC 9110 section 9.3.2; issue 11 items 2, 9).
 */
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { FrontDoor } from '../../server/http/front-door.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { ServiceError } from '../../engine/errors.js'

interface Raw {
  send(text: string): void
  /** Everything received so far, latin1. */
  readonly received: string
  /** Resolves once `done(received)` holds; rejects if the connection closes first. */
  waitFor(done: (received: string) => boolean): Promise<void>
}

async function openRaw(t: Test, port: number): Promise<Raw> {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  let received = ''
  let closed = false
  const wake = new Set<() => void>()
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1')
    for (const w of wake) w()
  })
  socket.on('close', () => {
    closed = true
    for (const w of wake) w()
  })
  return {
    send: (text) => { socket.write(text, 'latin1') },
    get received() { return received },
    async waitFor(done) {
      while (!done(received)) {
        if (closed) throw new Error(`connection closed; received ${JSON.stringify(received)}`)
        await new Promise<void>((resolve) => {
          const w = (): void => { wake.delete(w); resolve() }
          wake.add(w)
        })
      }
    },
  }
}

interface Head {
  readonly status: number
  /** Every field line as [lower-case name, value], in order. */
  readonly fields: [string, string][]
  /** Offset of the first byte after the head in the text it was read from. */
  readonly end: number
}

function parseHead(text: string, from = 0): Head | undefined {
  const end = text.indexOf('\r\n\r\n', from)
  if (end < 0) return undefined
  const [statusLine = '', ...lines] = text.slice(from, end).split('\r\n')
  const fields = lines.map((line): [string, string] => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
  })
  return { status: Number(statusLine.split(' ')[1]), fields, end: end + 4 }
}

const values = (head: Head, name: string): string[] => head.fields.filter(([n]) => n === name).map(([, v]) => v)

/**
 * GET, HEAD, then a marker GET on one connection: the head of each, the GET
 * body, and what came between the HEAD answer and the marker's (a body sent
 * to a HEAD would show there; a HEAD answer uWS left pending closes the
 * connection at the marker instead).
 */
async function getThenHead(t: Test, port: number, path: string): Promise<{ get: Head; getBody: string; head: Head; afterHead: string }> {
  const raw = await openRaw(t, port)
  raw.send(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`)
  await raw.waitFor((r) => parseHead(r) !== undefined)
  const get = parseHead(raw.received) as Head
  const length = Number(values(get, 'content-length')[0])
  await raw.waitFor((r) => r.length >= get.end + length)
  const getBody = raw.received.slice(get.end, get.end + length)

  raw.send(`HEAD ${path} HTTP/1.1\r\nhost: x\r\n\r\n`)
  await raw.waitFor((r) => parseHead(r, get.end + length) !== undefined)
  const head = parseHead(raw.received, get.end + length) as Head
  // A marker request: anything the HEAD answer carried as a body shows up before its status line.
  raw.send('GET /marker HTTP/1.1\r\nhost: x\r\n\r\n')
  await raw.waitFor((r) => r.includes('\r\n\r\n', r.indexOf('x-marker', head.end)) && r.includes('x-marker', head.end))
  const marker = raw.received.indexOf('HTTP/1.1 ', head.end)
  return { get, getBody, head, afterHead: raw.received.slice(head.end, marker) }
}

async function door(t: Test, setup: (door: FrontDoor) => void): Promise<number> {
  const d = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  setup(d)
  d.route('get', '/marker', (ex) => ex.respond(204, { 'x-marker': 'yes' }))
  const port = await d.listen()
  t.teardown(() => d.stopAccepting())
  return port
}

const FRAMING = {
  'Transfer-Encoding': 'chunked',
  'Content-Length': '2',
  CONNECTION: 'keep-alive',
  'Keep-Alive': 'timeout=5',
  Upgrade: 'h2c',
  Trailer: 'x-t',
  Date: 'Thu, 01 Jan 1970 00:00:00 GMT',
  'X-Padded': '  value\t ',
  'X-Ok': 'fine',
}

t.test('a framing or hop-by-hop field from a route is never written, in any letter case', async (t) => {
  const port = await door(t, (d) => {
    d.route('get', '/complete', (ex) => ex.respond(200, FRAMING, 'body'))
    d.route('get', '/streamed', async (ex) => {
      await Promise.resolve() // outside the synchronous handler, as a relay writes
      ex.writeHead(200, FRAMING)
      ex.write(Buffer.from('body'))
      ex.end()
    })
  })

  const complete = await openRaw(t, port)
  complete.send('GET /complete HTTP/1.1\r\nhost: x\r\n\r\n')
  await complete.waitFor((r) => parseHead(r) !== undefined)
  const head = parseHead(complete.received) as Head
  t.same(values(head, 'content-length'), ['4'], 'one Content-Length, the one uWS measured')
  t.same(values(head, 'transfer-encoding'), [], 'no Transfer-Encoding beside it')
  t.same(values(head, 'connection'), [], 'no Connection from the route')
  t.same(values(head, 'keep-alive'), [])
  t.same(values(head, 'upgrade'), [])
  t.same(values(head, 'trailer'), [])
  t.equal(values(head, 'date').length, 1, 'one Date, the one uWS writes')
  t.same(values(head, 'x-padded'), ['value'], 'a value without the whitespace around it')
  t.same(values(head, 'x-ok'), ['fine'])
  t.ok(head.fields.every(([name]) => name === 'date' || name === 'content-length' || name === 'uwebsockets' || name.startsWith('x-')), 'nothing else')
  await complete.waitFor((r) => r.length >= head.end + 4)
  t.equal(complete.received.slice(head.end), 'body')

  const streamed = await openRaw(t, port)
  streamed.send('GET /streamed HTTP/1.1\r\nhost: x\r\n\r\n')
  await streamed.waitFor((r) => r.endsWith('0\r\n\r\n'))
  const chunked = parseHead(streamed.received) as Head
  t.same(values(chunked, 'transfer-encoding'), ['chunked'], 'one Transfer-Encoding, the one uWS writes')
  t.same(values(chunked, 'content-length'), [], 'no Content-Length beside it')
  t.same(values(chunked, 'connection'), [])
  t.same(values(chunked, 'x-padded'), ['value'])
  t.equal(streamed.received.slice(chunked.end), '4\r\nbody\r\n0\r\n\r\n', 'the body, framed once')
})

t.test('HEAD gets the status and headers GET gets, with its length, never a body, and the connection stays open', async (t) => {
  const port = await door(t, (d) => {
    // Each route answers every method the same way, as a route that forgets HEAD would.
    d.route('any', '/complete', (ex) => ex.respond(200, { 'content-type': 'text/plain', etag: '"e"' }, 'body'))
    d.route('any', '/error', (ex) => ex.respondError(new ServiceError('NOT_FOUND')))
    d.route('any', '/retry', (ex) => ex.respondError(new ServiceError('UPSTREAM_UNAVAILABLE'), { head: ex.method === 'HEAD' }))
    d.route('any', '/json', async (ex) => {
      await Promise.resolve()
      ex.respondJson(200, { hello: 'world' })
    })
    d.route('any', '/buffered', async (ex) => {
      await Promise.resolve()
      await ex.respondBuffered(200, { 'content-type': 'application/json', etag: '"b"' }, Buffer.from('{"a":1}'))
    })
    // As the packument route answers: HEAD said, the length given.
    d.route('any', '/packument-like', async (ex) => {
      await Promise.resolve()
      await ex.respondBuffered(200, { 'content-type': 'application/json', etag: '"p"' }, Buffer.from('{"name":"p"}'), { head: ex.method === 'HEAD' })
    })
  })
  for (const path of ['/complete', '/error', '/retry', '/json', '/buffered', '/packument-like']) {
    const { get, getBody, head, afterHead } = await getThenHead(t, port, path)
    t.ok(getBody.length > 0, `${path}: GET has a body`)
    t.equal(head.status, get.status, `${path}: the same status`)
    for (const name of ['content-type', 'content-length', 'etag', 'retry-after']) {
      t.same(values(head, name), values(get, name), `${path}: the same ${name}`)
    }
    t.equal(afterHead, '', `${path}: no body after the HEAD answer`)
  }
})
