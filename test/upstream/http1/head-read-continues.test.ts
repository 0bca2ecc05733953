/**
 * At the end of a response head the body has no consumer yet (the caller
 * attaches once the head promise resolves, a tick later). The connection
 * keeps its socket reading there instead of stopping it and starting it
 * again (two epoll_ctl calls per response, issue 18); a read that comes
 * before the consumer waits in the backlog, stops the socket, and reaches
 * the consumer in order.
 */
import t from 'tap'
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import { ArtifactConnection, type OnRead } from '../../../engine/upstream/http1/artifact-connection.js'
import { ArtifactExchange } from '../../../engine/upstream/http1/artifact-exchange.js'
import type { ArtifactResponse } from '../../../engine/upstream/http1/artifact-response.js'

class QuietSocket extends EventEmitter {
  destroyed = false
  resumed = 0
  setNoDelay(): this { return this }
  write(): boolean { return true }
  resume(): this { this.resumed++; return this }
  destroy(): this { this.destroyed = true; return this }
}

const TIMEOUTS = { connectMs: 60_000, headersMs: 60_000, bodyIdleMs: 60_000, pausedReadMs: 60_000 }

t.test('the socket keeps reading past the head; an early read waits and arrives in order', async (t) => {
  const socket = new QuietSocket()
  let onread!: OnRead
  const conn = new ArtifactConnection({ park: () => {}, forget: () => {} }, 'http://quiet', (o) => { onread = o; return socket as unknown as Socket })
  let response: ArtifactResponse | undefined
  const exchange = new ArtifactExchange(conn, 'GET', 'quiet', TIMEOUTS, (result) => { if (!(result instanceof Error)) response = result })
  conn.begin(exchange, 'GET /a HTTP/1.1\r\n\r\n')
  const deliver = (text: string): boolean => {
    const buf = onread.buffer()
    const n = buf.write(text, 'latin1')
    return onread.callback(n, buf)
  }
  t.equal(deliver('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello'), true, 'the head and a first body part: reading goes on')
  t.ok(response !== undefined && exchange.awaitingConsumer, 'the head is out; no consumer yet')
  t.equal(deliver('wor'), false, 'a read before the consumer attaches waits, and stops the socket')
  const parts: string[] = []
  let ended = false
  response!.body!.attach({
    data(chunk: Uint8Array): boolean { parts.push(Buffer.from(chunk).toString('latin1')); return true },
    end(): void { ended = true },
    error(): void { t.fail('no error') },
  })
  t.notOk(exchange.awaitingConsumer)
  t.same(parts, ['hello', 'wor'], 'held reads reach the consumer in order')
  t.ok(socket.resumed > 0, 'the socket reads again')
  t.equal(deliver('ld'), true)
  t.ok(ended, 'the body ended at its length')
  t.equal(parts.join(''), 'helloworld')
})
