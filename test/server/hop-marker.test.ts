import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { carriesHopMarker, hopMarker } from '../../server/routes/hop-marker.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { mountJs } from '../../server/routes/js-mount.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

t.test('every element of every Via line is read; the pseudonym is a whole token', async (t) => {
  t.ok(carriesHopMarker('1.1 proxy-a', 'proxy-a'))
  t.ok(carriesHopMarker('1.1 proxy-a, 1.1 lb', 'proxy-a'), 'not the last element')
  t.ok(carriesHopMarker('1.0 edge (nginx, v1), HTTP/1.1 Proxy-A (ours)', 'proxy-a'), 'after a comment holding a comma; case-insensitive')
  t.notOk(carriesHopMarker('1.1 lb, 1.1 proxy-ab', 'proxy-a'), 'a longer name is another hop')
  t.notOk(carriesHopMarker('1.1 xproxy-a', 'proxy-a'))
  t.notOk(carriesHopMarker('1.1 lb (via proxy-a)', 'proxy-a'), 'a comment is no hop')
  t.notOk(carriesHopMarker(undefined, 'proxy-a'))
})

t.test('the pseudonym is the base URL\'s host as an HTTP token, port included', async (t) => {
  t.equal(hopMarker('http://localhost:4873/'), 'registry-proxy.localhost-4873')
  t.equal(hopMarker('https://registry.example/base/'), 'registry-proxy.registry.example')
  t.equal(hopMarker('http://[::1]:8080'), 'registry-proxy.---1--8080', 'brackets and colons are no token characters')
  t.ok(carriesHopMarker(`1.1 ${hopMarker('http://localhost:4873')}`, hopMarker('http://localhost:4873/')), 'what we send is what the loop check finds')
})

/** Sends a raw request with the given header lines and returns the status code. */
async function statusOf(port: number, lines: string[]): Promise<number> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write(`GET /js/some-pkg HTTP/1.1\r\nhost: x\r\n${lines.map((l) => `${l}\r\n`).join('')}connection: close\r\n\r\n`)
  let text = ''
  socket.on('data', (c: Buffer) => { text += c.toString('latin1') })
  await once(socket, 'close')
  return Number(text.slice(9, 12))
}

t.test('the loop is refused when the marker is in any Via line, not only the last', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  mountJs(door, { hopMarker: 'proxy-a', handlers: { packument: (ex) => ex.respondJson(200, {}) } })
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())
  t.equal(await statusOf(port, ['via: 1.1 proxy-a', 'via: 1.1 lb']), 502, 'marker in the first of two lines')
  t.equal(await statusOf(port, ['via: 1.1 lb, 1.1 proxy-a, 1.1 edge']), 502, 'marker in a middle element')
  t.equal(await statusOf(port, ['via: 1.1 lb', 'via: 1.1 edge']), 200, 'no marker')
})
