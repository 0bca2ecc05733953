/**
 * A connection whose reads fill its 256 KiB buffer, and which the relay
 * keeps up with, borrows a 512 KiB one from its pool for the rest of the
 * exchange: fewer reads per relayed byte (issue 18). The loan ends with the
 * exchange, so no connection keeps a large buffer for life (that split the
 * pool into fast and slow connections and raised the p99); how many are out
 * at once is bounded by the pool's LargeReadBuffers, and a closed connection
 * gives its place back. A view the relay still holds is never swapped away
 * under it, and a lent buffer never becomes two sockets' read target.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import {
  ArtifactConnection, LARGE_READ_BUFFER_BYTES, READ_BUFFER_BYTES, LargeReadBuffers, type OnRead,
} from '../../../engine/upstream/http1/artifact-connection.js'
import { ArtifactExchange } from '../../../engine/upstream/http1/artifact-exchange.js'
import type { ArtifactResponse } from '../../../engine/upstream/http1/artifact-response.js'
import type { ArtifactBody } from '../../../engine/upstream/http1/artifact-body.js'

class QuietSocket extends EventEmitter {
  destroyed = false
  setNoDelay(): this { return this }
  write(): boolean { return true }
  resume(): this { return this }
  destroy(): this { this.destroyed = true; return this }
}

const TIMEOUTS = { connectMs: 60_000, headersMs: 60_000, bodyIdleMs: 60_000, pausedReadMs: 60_000 }
const owner = { park: () => {}, forget: () => {} }

/** A connection answering GETs of `length` body bytes, their bodies consumed by `data`. */
function relayed(large: LargeReadBuffers, length: number, data: (chunk: Uint8Array) => boolean = () => true) {
  const socket = new QuietSocket()
  let onread!: OnRead
  const conn = new ArtifactConnection(owner, 'http://quiet', (o) => { onread = o; return socket as unknown as Socket }, large)
  let bytes = 0
  let ended = 0
  let body: ArtifactBody | undefined
  /** Sends one request and reads its head (a read of its own, which fills nothing). */
  const request = (): void => {
    let response: ArtifactResponse | undefined
    const exchange = new ArtifactExchange(conn, 'GET', 'quiet', TIMEOUTS, (result) => { if (!(result instanceof Error)) response = result })
    conn.begin(exchange, 'GET /a HTTP/1.1\r\n\r\n')
    const head = Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`, 'latin1')
    const first = onread.buffer()
    head.copy(first)
    onread.callback(head.byteLength, first)
    bytes = 0
    body = response!.body!
    body.attach({ data(chunk) { bytes += chunk.byteLength; return data(chunk) }, end() { ended++ }, error() {} })
  }
  request()
  /** One read that fills the buffer node asks for (or ends the body); returns that buffer's size. */
  const fill = (): number => {
    const buf = onread.buffer()
    onread.callback(Math.min(buf.byteLength, length - bytes), buf)
    return buf.byteLength
  }
  /** Reads until the body ends; the sizes of the buffers read into. */
  const finish = (): number[] => {
    const sizes: number[] = []
    const before = ended
    while (ended === before) sizes.push(fill())
    return sizes
  }
  return { conn, fill, finish, request, socket, get onread() { return onread }, get body() { return body! } }
}

t.test('full reads the relay takes borrow a large buffer for the exchange, within the limit', async (t) => {
  const large = new LargeReadBuffers(1)
  const a = relayed(large, 8 * READ_BUFFER_BYTES)
  t.equal(a.fill(), READ_BUFFER_BYTES, 'a connection starts with the small buffer')
  t.equal(a.fill(), LARGE_READ_BUFFER_BYTES, 'after a read that filled it, the next read gets a large one')
  t.equal(a.fill(), LARGE_READ_BUFFER_BYTES, 'and keeps it while the exchange lasts')
  t.equal(large.lent, 1)
  t.same(large.snapshot(), { lent: 1, kept: 0, limit: 1 }, 'telemetry reads the same figures')

  const b = relayed(large, 8 * READ_BUFFER_BYTES)
  t.equal(b.fill(), READ_BUFFER_BYTES)
  t.equal(b.fill(), READ_BUFFER_BYTES, 'the limit is reached: a second connection stays small')

  a.finish()
  t.equal(large.lent, 0, 'the exchange ended: the loan came back')
  t.equal(large.kept, 1, 'and is kept for the next loan')
  t.same(large.snapshot(), { lent: 0, kept: 1, limit: 1 })
  t.equal(a.onread.buffer().byteLength, READ_BUFFER_BYTES, 'the kept-alive connection reads into its own small buffer again')

  t.equal(b.fill(), LARGE_READ_BUFFER_BYTES, 'the other connection borrows it at its next full read')
  t.equal(large.kept, 0, 'the same buffer, not a new one')
  b.finish()
  a.conn.destroy()
  b.conn.destroy()
})

t.test('the next exchange on a kept-alive connection borrows again, from the start', async (t) => {
  const large = new LargeReadBuffers(4)
  const a = relayed(large, 4 * READ_BUFFER_BYTES)
  t.same(a.finish(), [READ_BUFFER_BYTES, LARGE_READ_BUFFER_BYTES, LARGE_READ_BUFFER_BYTES])
  t.equal(large.lent, 0)
  a.request()
  t.same(a.finish(), [READ_BUFFER_BYTES, LARGE_READ_BUFFER_BYTES, LARGE_READ_BUFFER_BYTES], 'small first, as any connection')
  t.equal(large.lent, 0)
  t.equal(large.kept, 1, 'one buffer served both exchanges')
  a.conn.destroy()
})

t.test('a read that did not fill the buffer borrows nothing', async (t) => {
  const large = new LargeReadBuffers(1)
  const socket = new QuietSocket()
  let onread!: OnRead
  const conn = new ArtifactConnection(owner, 'http://quiet', (o) => { onread = o; return socket as unknown as Socket }, large)
  const exchange = new ArtifactExchange(conn, 'GET', 'quiet', TIMEOUTS, () => {})
  conn.begin(exchange, 'GET /a HTTP/1.1\r\n\r\n')
  const buf = onread.buffer()
  const n = buf.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello', 'latin1')
  onread.callback(n, buf)
  t.not(onread.buffer().byteLength, LARGE_READ_BUFFER_BYTES)
  t.equal(large.lent, 0, 'nothing was lent')
  conn.destroy()
})

t.test('a slow client: full reads the relay keeps borrow nothing (a larger buffer would only be held longer)', async (t) => {
  const large = new LargeReadBuffers(4)
  const r = relayed(large, 8 * READ_BUFFER_BYTES, () => false)
  for (let i = 0; i < 3; i++) {
    const buf = r.onread.buffer()
    t.equal(buf.byteLength === LARGE_READ_BUFFER_BYTES, false, `read ${i + 1} is not into a large buffer`)
    r.onread.callback(buf.byteLength, buf)
    r.body.proceed()
  }
  t.equal(large.lent, 0)
  r.conn.destroy()
})

t.test('a client that stops keeping up ends the loan once the relay lets go of the view it kept', async (t) => {
  const large = new LargeReadBuffers(1)
  let keep = false
  const r = relayed(large, 16 * READ_BUFFER_BYTES, () => !keep)
  t.equal(r.fill(), READ_BUFFER_BYTES)
  t.equal(r.fill(), LARGE_READ_BUFFER_BYTES, 'borrowed while the client kept up')
  keep = true
  t.equal(r.fill(), LARGE_READ_BUFFER_BYTES, 'the relay keeps this view: backpressure')
  t.equal(large.lent, 1, 'still lent while the view is held')
  t.not(r.onread.buffer().byteLength, LARGE_READ_BUFFER_BYTES, 'node asks for the next read\'s buffer: not the held one')
  keep = false
  r.body.proceed()
  t.equal(large.lent, 0, 'the view is let go: the loan came back')
  t.equal(large.kept, 1)
  t.equal(r.fill(), READ_BUFFER_BYTES, 'reads go to the small buffer again')
  r.conn.destroy()
})

t.test('a loan that ends while the socket\'s next read targets the lent buffer waits for that read', async (t) => {
  const large = new LargeReadBuffers(1)
  let keep = false
  const r = relayed(large, 16 * READ_BUFFER_BYTES, () => !keep)
  r.fill()
  t.equal(r.fill(), LARGE_READ_BUFFER_BYTES)
  // The next read's buffer is taken (the socket targets the lent one), then a read lands in the spare and is kept.
  const target = r.onread.buffer()
  t.equal(target.byteLength, LARGE_READ_BUFFER_BYTES)
  keep = true
  const spare = Buffer.alloc(64 * 1024)
  r.onread.callback(spare.byteLength, spare)
  keep = false
  r.body.proceed()
  t.equal(large.lent, 1, 'not given back: the socket would still read into it')
  t.equal(large.lend(), undefined, 'so no other connection can borrow it')
  t.not(r.onread.buffer(), target, 'at the next read node gets another buffer')
  t.equal(large.lent, 0, 'and the loan came back')
  r.conn.destroy()
})

t.test('a view the relay holds is not swapped away: the held buffer stays as it was', async (t) => {
  const large = new LargeReadBuffers(1)
  let kept: Uint8Array | undefined
  const r = relayed(large, 8 * READ_BUFFER_BYTES, (chunk) => { kept ??= chunk; return false })
  const main = r.onread.buffer()
  main.fill(7)
  r.onread.callback(main.byteLength, main)
  const copy = Buffer.from(kept!)
  t.equal(kept!.byteLength, READ_BUFFER_BYTES, 'the relay kept a full read')
  const next = r.onread.buffer()
  t.not(next, main, 'the next read goes elsewhere while the view is held')
  t.not(next.byteLength, LARGE_READ_BUFFER_BYTES, 'and not into a large buffer')
  t.ok(Buffer.from(kept!).equals(copy), 'the held view is unchanged')
  r.conn.destroy()
})

t.test('an exchange that ends after the relay let go of a kept last view gives the loan back', async (t) => {
  const large = new LargeReadBuffers(1)
  let keepNext = false
  const r = relayed(large, 3 * READ_BUFFER_BYTES, () => !keepNext)
  t.equal(r.fill(), READ_BUFFER_BYTES)
  keepNext = true
  // The last 512 KiB arrive in the lent buffer and the relay keeps the view (backpressure).
  t.equal(r.fill(), LARGE_READ_BUFFER_BYTES)
  t.equal(large.lent, 1, 'still lent while the view is held')
  const target = r.onread.buffer()
  t.not(target.byteLength, LARGE_READ_BUFFER_BYTES, 'the socket\'s next read does not target the held buffer')
  keepNext = false
  r.body.proceed()
  t.equal(large.lent, 0, 'the exchange ended on proceed: the loan came back')
  t.equal(large.kept, 1)
  r.conn.destroy()
})

t.test('a connection closed mid-loan gives its place back but not the buffer, which a held view may still read', async (t) => {
  const large = new LargeReadBuffers(1)
  const a = relayed(large, 8 * READ_BUFFER_BYTES)
  a.fill()
  t.equal(a.fill(), LARGE_READ_BUFFER_BYTES)
  a.conn.destroy()
  t.equal(large.lent, 0, 'the place came back')
  t.equal(large.kept, 0, 'the buffer was not kept for reuse')
  const b = relayed(large, 8 * READ_BUFFER_BYTES)
  b.fill()
  t.equal(b.fill(), LARGE_READ_BUFFER_BYTES, 'another connection may borrow')
  b.conn.destroy()
})

t.test('LargeReadBuffers reuses returned buffers, and lets them go after a quiet spell', async (t) => {
  const large = new LargeReadBuffers(4, 40)
  const lent = [large.lend(), large.lend(), large.lend(), large.lend()]
  t.equal(large.lend(), undefined, 'no more than the limit at once')
  for (const buf of lent) large.giveBack(buf!)
  t.equal(large.lent, 0)
  t.equal(large.kept, 4, 'every returned buffer is kept: a steady load leaves nothing for the collector')
  const again = large.lend()
  t.ok(lent.includes(again), 'a loan reuses a kept buffer')
  large.giveBack(again!)
  // The quiet spell starts after the last loan: the first timer sees that loan and waits again.
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(large.kept, 0, 'none lent for a while: the kept buffers were let go')
  t.not(lent.includes(large.lend()), true, 'a loan after that gets a new buffer')
})

t.test('kept buffers stay while buffers are lent', async (t) => {
  const large = new LargeReadBuffers(4, 20)
  const a = large.lend()!
  large.lend()
  large.giveBack(a)
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(large.kept, 1, 'one still lent: the process is not idle')
  large.trim()
  t.equal(large.kept, 0)
})
