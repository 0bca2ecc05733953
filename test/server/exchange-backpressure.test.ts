/**
 * A complete response sent with backpressure (Exchange.respondBuffered): a
 * client that does not read keeps the exchange in flight, and its promise
 * unresolved, until uWS has taken the last byte; the drain counts it until
 * then. Then the client reads and every byte arrives.
 */
import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { FrontDoor } from '../../server/http/front-door.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { CloseReason } from '../../server/http/exchange.js'

t.test('a slow reader holds the exchange (and what it is charged) until the last byte is written', async (t) => {
  const body = Buffer.alloc(32 * 1024 * 1024, 0x61)
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  let ended: CloseReason | undefined
  door.route('get', '/big', async (ex) => {
    await Promise.resolve() // answer outside the synchronous handler, as the packument route does
    ended = await ex.respondBuffered(200, { 'content-type': 'application/octet-stream' }, body)
  })
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())

  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  socket.pause()
  socket.write('GET /big HTTP/1.1\r\nhost: x\r\n\r\n')
  await sleep(300)
  t.equal(ended, undefined, 'not settled while the client reads nothing')
  t.equal(door.inFlight, 1, 'still in flight for the drain')

  let received = 0
  socket.on('data', (chunk: Buffer) => { received += chunk.byteLength })
  socket.resume()
  while (ended === undefined) await sleep(20)
  t.equal(ended, 'completed')
  t.equal(door.inFlight, 0)
  while (received < body.byteLength) await sleep(20)
  t.ok(received > body.byteLength, 'the whole body (and its head) arrived')
})
