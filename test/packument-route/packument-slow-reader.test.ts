/**
 * The packument route against a client that reads slowly (issue 11, fragile
 * packument code): the answer leaves with tryEnd/onWritable, so uWS never
 * holds an unsent copy outside the memory gate's accounting; the request's
 * charge returns at the last byte written, not when the write is queued, and
 * the exchange stays in flight (the drain counts it) until then.
 */
import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import type { PackumentService } from '../../engine/packument/packument-service.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { createPackumentHandler } from '../../server/routes/packument-route.js'
import { mountJs } from '../../server/routes/js-mount.js'

const MIB = 1024 * 1024
// Far more than the loopback socket buffers on both ends can hold while the client reads nothing.
const BODY = Buffer.alloc(96 * MIB, 0x20)
const RENDER_CHARGE = 2 * BODY.byteLength

t.test('a slow reader holds the request\'s charge and keeps it in flight until the last byte is written', async (t) => {
  const gate = new AdmissionGate({ budgetBytes: 1024 * MIB, maxInFlight: 4, waitingRoom: 4 })
  // The one thing the route asks of the service: an assembled answer, charged to the request as a render is.
  const service = {
    assemble: async ({ admission }: { admission: import('../../engine/memory/gate.js').Admission }) => {
      await admission.charge(RENDER_CHARGE, { timeoutMs: Infinity })
      return { body: BODY, etag: '"slow"' }
    },
  } as unknown as PackumentService
  const logger = new RecordingLogger()
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger })
  mountJs(door, { hopMarker: 'registry-proxy@test', handlers: { packument: createPackumentHandler({ service, gate, logger }) } })
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())

  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  socket.write('GET /js/slow HTTP/1.1\r\nhost: x\r\n\r\n')
  // The first bytes prove the answer has started; then the client stops reading.
  const [first] = await once(socket, 'data') as [Buffer]
  socket.pause()
  t.match(first.toString('latin1'), /^HTTP\/1\.1 200 /, 'the answer started')

  t.ok(gate.chargedBytes >= RENDER_CHARGE, 'the render charge is still held while bytes remain unwritten')
  t.equal(door.inFlight, 1, 'the exchange is still in flight for the drain')

  let received = first.byteLength
  socket.on('data', (chunk: Buffer) => { received += chunk.byteLength })
  socket.resume()
  while (received < BODY.byteLength) await sleep(10)
  while (door.inFlight !== 0) await sleep(10)
  t.equal(gate.chargedBytes, 0, 'every charge returned once the last byte was written')
  t.ok(received > BODY.byteLength, 'the whole body (and its head) arrived')
})
