/**
 * Ambiguous request framing at the front door (RFC 9112 section 6.3):
 * answered 400 (501 for a coding it does not understand) and the connection
 * closed, with raw bytes on a real socket.
 */
import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { FrontDoor } from '../../server/http/front-door.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { requestFramingRefusal } from '../../server/http/request-framing.js'

/** Writes `raw`, then reads until the server closes or 2 s pass; returns what came back and whether the server closed. */
async function exchange(port: number, raw: string): Promise<{ text: string; closedByServer: boolean }> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let text = ''
  socket.on('data', (c: Buffer) => { text += c.toString('latin1') })
  socket.write(raw)
  const closed = once(socket, 'close').then(() => true)
  const timer = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000).unref())
  const closedByServer = await Promise.race([closed, timer])
  socket.destroy()
  return { text, closedByServer }
}

t.test('ambiguous framing: 400 and the connection closed; unambiguous framing is served', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  door.route('any', '/*', (ex) => ex.respondJson(200, { ok: true }))
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())

  const refused: Record<string, [string, number]> = {
    'two different Content-Lengths': ['POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ncontent-length: 5\r\n\r\nabcde', 400],
    'Transfer-Encoding: chunked, identity': ['POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 400],
    'Transfer-Encoding: gzip, chunked': ['POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', 501],
  }
  for (const [name, [raw, status]] of Object.entries(refused)) {
    const alone = await exchange(port, raw)
    t.match(alone.text, new RegExp(`^HTTP/1\\.1 ${status} `), `${name}: ${status}`)
    t.match(alone.text, /"error":/, `${name}: the envelope`)
    t.ok(alone.closedByServer, `${name}: the connection is closed`)
    // A request pipelined behind it is never answered: the connection closes first.
    const pipelined = await exchange(port, `${raw}GET /next HTTP/1.1\r\nhost: x\r\n\r\n`)
    t.notMatch(pipelined.text, /HTTP\/1\.1 200 /, `${name}: the request behind it is not answered`)
    t.ok(pipelined.closedByServer, `${name}, pipelined: the connection is closed`)
  }
  // Content-Length with Transfer-Encoding: uWS reads the body by its length, finds
  // the rest of the chunked body is no request, and closes before any answer
  // leaves (RFC 9112 section 6.3 item 3 asks for the close); nothing is answered.
  const both = await exchange(port, 'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nhost: x\r\n\r\n')
  t.notMatch(both.text, /HTTP\/1\.1 200 /, 'Content-Length with Transfer-Encoding: nothing answered as a success')
  t.ok(both.closedByServer, 'Content-Length with Transfer-Encoding: the connection is closed')
  t.equal(requestFramingRefusal('3', 'chunked')?.code, 'REQUEST_FRAMING_AMBIGUOUS', 'and where its body framing allows an answer, it is 400')

  for (const raw of [
    'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc',
    'POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  ]) {
    t.match((await exchange(port, raw)).text, /^HTTP\/1\.1 200 /, JSON.stringify(raw.split('\r\n').slice(2, 4)))
  }
})

t.test('requestFramingRefusal', async (t) => {
  t.equal(requestFramingRefusal(undefined, undefined), undefined)
  t.equal(requestFramingRefusal('12', undefined), undefined)
  t.equal(requestFramingRefusal('12, 12', undefined), undefined, 'one length repeated')
  t.equal(requestFramingRefusal(undefined, 'Chunked'), undefined)
  t.equal(requestFramingRefusal('-1', undefined)?.code, 'REQUEST_FRAMING_AMBIGUOUS')
  t.equal(requestFramingRefusal('', undefined)?.code, 'REQUEST_FRAMING_AMBIGUOUS')
  t.equal(requestFramingRefusal(undefined, 'chunked, chunked')?.code, 'REQUEST_FRAMING_AMBIGUOUS')
  t.equal(requestFramingRefusal(undefined, 'identity')?.code, 'REQUEST_FRAMING_AMBIGUOUS')
})
