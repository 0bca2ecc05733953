/**
 * A connection whose reads fill its 256 KiB buffer moves to a 1 MiB one,
 * fewer reads per relayed byte (issue 18); how many connections may do so
 * is bounded by the pool's ReadBufferBudget, so memory stays one small
 * buffer per connection plus a fixed few, and a closed connection gives its
 * place back. A view the relay still holds is never swapped away under it.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import {
  ArtifactConnection, LARGE_READ_BUFFER_BYTES, READ_BUFFER_BYTES, ReadBufferBudget, type OnRead,
} from '../../../engine/upstream/http1/artifact-connection.js'
import { ArtifactExchange } from '../../../engine/upstream/http1/artifact-exchange.js'
import type { ArtifactResponse } from '../../../engine/upstream/http1/artifact-response.js'

class QuietSocket extends EventEmitter {
  destroyed = false
  setNoDelay(): this { return this }
  write(): boolean { return true }
  resume(): this { return this }
  destroy(): this { this.destroyed = true; return this }
}

const TIMEOUTS = { connectMs: 60_000, headersMs: 60_000, bodyIdleMs: 60_000, pausedReadMs: 60_000 }
const owner = { park: () => {}, forget: () => {} }

/** A connection answering one GET of `length` body bytes, its body consumed by `data`. */
function relayed(budget: ReadBufferBudget, length: number, data: (chunk: Uint8Array) => boolean = () => true) {
  const socket = new QuietSocket()
  let onread!: OnRead
  const conn = new ArtifactConnection(owner, 'http://quiet', (o) => { onread = o; return socket as unknown as Socket }, budget)
  let response: ArtifactResponse | undefined
  const exchange = new ArtifactExchange(conn, 'GET', 'quiet', TIMEOUTS, (result) => { if (!(result instanceof Error)) response = result })
  conn.begin(exchange, 'GET /a HTTP/1.1\r\n\r\n')
  const head = Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`, 'latin1')
  const first = onread.buffer()
  head.copy(first)
  onread.callback(head.byteLength, first)
  let bytes = 0
  response!.body!.attach({ data(chunk) { bytes += chunk.byteLength; return data(chunk) }, end() {}, error() {} })
  /** One read that fills the buffer node asks for (or ends the body); returns that buffer's size. */
  const fill = (): number => {
    const buf = onread.buffer()
    onread.callback(Math.min(buf.byteLength, length - bytes), buf)
    return buf.byteLength
  }
  return { conn, fill, socket, onread }
}

t.test('full reads grow the buffer, within the budget; a closed connection gives its place back', async (t) => {
  const budget = new ReadBufferBudget(1)
  const a = relayed(budget, 8 * READ_BUFFER_BYTES)
  t.equal(a.fill(), READ_BUFFER_BYTES, 'a connection starts with the small buffer')
  t.equal(a.fill(), LARGE_READ_BUFFER_BYTES, 'after a read that filled it, the next read gets the large one')
  t.equal(a.fill(), LARGE_READ_BUFFER_BYTES, 'and keeps it')

  const b = relayed(budget, 8 * READ_BUFFER_BYTES)
  t.equal(b.fill(), READ_BUFFER_BYTES)
  t.equal(b.fill(), READ_BUFFER_BYTES, 'the budget is spent: a second connection stays small')

  a.conn.destroy()
  const c = relayed(budget, 8 * READ_BUFFER_BYTES)
  t.equal(c.fill(), READ_BUFFER_BYTES)
  t.equal(c.fill(), LARGE_READ_BUFFER_BYTES, 'the closed connection gave its place back')
  b.conn.destroy()
  c.conn.destroy()
})

t.test('a read that did not fill the buffer does not grow it', async (t) => {
  const budget = new ReadBufferBudget(1)
  const socket = new QuietSocket()
  let onread!: OnRead
  const conn = new ArtifactConnection(owner, 'http://quiet', (o) => { onread = o; return socket as unknown as Socket }, budget)
  const exchange = new ArtifactExchange(conn, 'GET', 'quiet', TIMEOUTS, () => {})
  conn.begin(exchange, 'GET /a HTTP/1.1\r\n\r\n')
  const buf = onread.buffer()
  const n = buf.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello', 'latin1')
  onread.callback(n, buf)
  t.not(onread.buffer().byteLength, LARGE_READ_BUFFER_BYTES)
  t.ok(budget.take(), 'nothing was taken from the budget')
  conn.destroy()
})

t.test('a view the relay holds is not swapped away: the held buffer stays as it was', async (t) => {
  const budget = new ReadBufferBudget(1)
  let kept: Uint8Array | undefined
  const r = relayed(budget, 8 * READ_BUFFER_BYTES, (chunk) => { kept ??= chunk; return false })
  const main = r.onread.buffer()
  main.fill(7)
  r.onread.callback(main.byteLength, main)
  const copy = Buffer.from(kept!)
  t.equal(kept!.byteLength, READ_BUFFER_BYTES, 'the relay kept a full read')
  const next = r.onread.buffer()
  t.not(next, main, 'the next read goes elsewhere while the view is held')
  t.not(next.byteLength, LARGE_READ_BUFFER_BYTES, 'and not into a new large buffer')
  t.ok(Buffer.from(kept!).equals(copy), 'the held view is unchanged')
  r.conn.destroy()
})
