/**
 * Backpressure through the relay, end to end (STYLE.md rule 3; issue 11,
 * fragile relay code): a client that stops reading a large artifact stops
 * the upstream. What the upstream manages to write meanwhile is bounded by
 * the socket buffers along the way, far below the artifact's size, and the
 * proxy's memory does not grow with the artifact. With a Content-Length
 * (tryEnd) and without one (chunked write). Then the client reads again and
 * gets every byte.
 */
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { makeClient, startServer } from '../upstream/servers.js'
import { startArtifactRoute } from './harness.js'

const MIB = 1024 * 1024
const ARTIFACT_BYTES = 256 * MIB
/** Loopback socket buffers (send and receive, upstream side and client side) plus the relay's one read buffer fit well under this. */
const IN_FLIGHT_BOUND = 96 * MIB
const CHUNK = Buffer.alloc(64 * 1024, 0x5a)

/** An upstream that writes ARTIFACT_BYTES as fast as its socket takes them, and counts what it handed over. */
async function fastUpstream(t: Test, chunked: boolean): Promise<{ origin: string; written: () => number }> {
  let written = 0
  const up = await startServer(t, (req, res) => {
    res.writeHead(200, chunked ? { 'content-type': 'application/octet-stream' } : { 'content-type': 'application/octet-stream', 'content-length': ARTIFACT_BYTES })
    const pump = (): void => {
      while (written < ARTIFACT_BYTES && !res.destroyed) {
        const chunk = CHUNK.subarray(0, Math.min(CHUNK.byteLength, ARTIFACT_BYTES - written))
        written += chunk.byteLength
        if (!res.write(chunk)) {
          res.once('drain', pump)
          return
        }
      }
      if (written >= ARTIFACT_BYTES) res.end()
    }
    pump()
  })
  return { origin: up.origin, written: () => written }
}

/** Resolves once `read()` has not moved for `quiet` consecutive looks: the pipeline has stalled. */
async function settled(read: () => number, quiet = 20): Promise<number> {
  let last = -1
  let same = 0
  while (same < quiet) {
    await sleep(50)
    const now = read()
    same = now === last ? same + 1 : 0
    last = now
  }
  return last
}

for (const chunked of [false, true]) {
  const framing = chunked ? 'chunked' : 'content-length'
  t.test(`a client that stops reading stops the upstream (${framing})`, async (t) => {
    const upstream = await fastUpstream(t, chunked)
    const route = await startArtifactRoute(t, { privateClient: makeClient(t, { url: upstream.origin, trusted: true }).client })
    const port = Number(new URL(route.origin).port)
    global.gc?.()
    const rssBefore = process.memoryUsage().rss

    const socket = connect(port, '127.0.0.1')
    t.teardown(() => socket.destroy())
    await once(socket, 'connect')
    socket.write('GET /js/a/-/a-1.0.0.tgz HTTP/1.1\r\nhost: x\r\n\r\n')
    const [first] = await once(socket, 'data') as [Buffer]
    socket.pause()
    t.match(first.toString('latin1'), /^HTTP\/1\.1 200 /, 'the relay started')

    const stalledAt = await settled(upstream.written)
    const rssGrowth = process.memoryUsage().rss - rssBefore
    t.ok(stalledAt < IN_FLIGHT_BOUND, `the upstream paused after ${(stalledAt / MIB).toFixed(1)} MiB of ${ARTIFACT_BYTES / MIB} MiB`)
    t.ok(rssGrowth < IN_FLIGHT_BOUND, `the proxy's memory grew ${(rssGrowth / MIB).toFixed(1)} MiB, not with the artifact`)

    let received = first.byteLength
    let tail = ''
    socket.on('data', (chunk: Buffer) => {
      received += chunk.byteLength
      tail = (tail + chunk.toString('latin1')).slice(-16)
    })
    socket.resume()
    // The body ends the byte count without framing, or with the last chunk's framing.
    const expected = ARTIFACT_BYTES + first.indexOf('\r\n\r\n') + 4
    while (chunked ? !tail.endsWith('\r\n0\r\n\r\n') : received < expected) await sleep(20)
    t.equal(upstream.written(), ARTIFACT_BYTES, 'the upstream resumed and finished')
    if (!chunked) t.equal(received, expected, 'every byte, no more')
    else t.ok(received > ARTIFACT_BYTES, 'every byte')
    while (route.counters.snapshot().relays.private.delivered === 0) await sleep(10)
    t.equal(route.counters.snapshot().relays.private.delivered, 1, 'the relay counted one delivery')
  })
}
