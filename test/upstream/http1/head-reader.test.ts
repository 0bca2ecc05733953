/**
 * Finding a response head in the reads (engine/upstream/http1/head-parser.ts
 * `ResponseHeadReader`), through a real ArtifactConnection whose reads land
 * in its reused buffer: the head ends only where its own bytes say so, a
 * bare LF is refused at once, and the size bound is llhttp's.
 */
import t from 'tap'
import { createRequire } from 'node:module'
import { isServiceError } from '../../../engine/errors.js'
import { MAX_HEAD_BYTES, ResponseHeadReader } from '../../../engine/upstream/http1/head-parser.js'
import { scriptedExchange } from './scripted-socket.js'

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: any }

function llhttpRejects(text: string): boolean {
  const parser = new HTTPParser()
  parser.initialize(HTTPParser.RESPONSE, {}, 0, 0)
  parser[HTTPParser.kOnHeadersComplete] = (): number => 1
  const result: unknown = parser.execute(Buffer.from(text, 'latin1'))
  parser.close?.()
  return result instanceof Error
}

t.test('a head split across reads ends at its own CRLF CRLF, never at stale bytes of an older read in the reused buffer', async (t) => {
  // The final head arrives in two reads; the first ends in CRLF, and the
  // older read (a 100 Continue) left CRLF right after it in the buffer.
  const prefix = 'HTTP/1.1 200 OK\r\ncontent-length: 4\r\n'
  const pad = 'a'.repeat(prefix.length - 'HTTP/1.1 100 Continue\r\nx-pad: '.length)
  const continued = `HTTP/1.1 100 Continue\r\nx-pad: ${pad}\r\n\r\n`
  t.equal(continued.slice(prefix.length, prefix.length + 2), '\r\n', 'the stale bytes past the second read are a CRLF')
  const run = scriptedExchange()
  run.feed(Buffer.from(continued, 'latin1'))
  run.feed(Buffer.from(prefix, 'latin1'))
  t.equal(run.outcome().verdict, 'incomplete', 'the head is not complete yet')
  run.feed(Buffer.from('\r\nbody', 'latin1'))
  const outcome = run.outcome()
  t.equal(outcome.verdict, 'complete')
  t.equal(outcome.body.toString('latin1'), 'body', 'the body starts after the real end of the head')
  t.ok(outcome.parked, 'and the connection is clean enough to reuse')
})

t.test('a CRLF CRLF cut at every offset across two reads is found once, at the same place', async (t) => {
  const text = 'HTTP/1.1 200 OK\r\ncontent-length: 3\r\netag: "x"\r\n\r\nabc'
  const bytes = Buffer.from(text, 'latin1')
  for (let cut = 1; cut < bytes.byteLength; cut++) {
    const run = scriptedExchange()
    run.feed(bytes, [cut])
    const outcome = run.outcome()
    t.equal(`${outcome.verdict}:${outcome.body.toString('latin1')}:${outcome.response?.headers.etag}`, 'complete:abc:"x"', `cut at ${cut}`)
  }
})

t.test('a bare LF ends nothing: it is refused as soon as it is read', async (t) => {
  for (const text of ['HTTP/1.1 200 OK\n', 'HTTP/1.1 200 OK\r\netag: "x"\n', '\nHTTP/1.1 200 OK\r\n']) {
    t.equal(new ResponseHeadReader().scan(Buffer.from(text, 'latin1'), 0, text.length), 'bare-lf', JSON.stringify(text))
    const run = scriptedExchange()
    run.feed(Buffer.from(text, 'latin1'))
    const outcome = run.outcome()
    t.equal(outcome.verdict, 'reject', `the exchange fails without waiting: ${JSON.stringify(text)}`)
    t.ok(isServiceError(outcome.error, 'UPSTREAM_UNAVAILABLE'))
    t.equal(outcome.headSettles, 1)
  }
  // Across reads: the CR before the LF is in the previous read.
  const reader = new ResponseHeadReader()
  t.equal(reader.scan(Buffer.from('HTTP/1.1 200 OK\r'), 0, 16), 'incomplete')
  t.equal(reader.scan(Buffer.from('\nx-a: 1\r'), 0, 8), 'incomplete', 'a CRLF split across reads is a CRLF')
  t.equal(reader.scan(Buffer.from('x\n'), 0, 2), 'bare-lf', 'a CR followed by another byte, then a LF, is not')
})

t.test('the head size bound is llhttp\'s: what it refuses for size, ours refuses too, found whole or growing', async (t) => {
  const head = (n: number): string => {
    const start = 'HTTP/1.1 200 OK\r\nx-a: '
    return `${start}${'a'.repeat(n - start.length)}\r\n\r\n`
  }
  // llhttp counts the bytes of the reason, names and values; ours counts the whole head, so it refuses a little sooner.
  const over = head(MAX_HEAD_BYTES + 100)
  t.ok(llhttpRejects(over), 'llhttp refuses a head past the bound')
  t.equal(new ResponseHeadReader().scan(Buffer.from(over, 'latin1'), 0, over.length), 'too-large', 'so does ours')
  const exact = head(MAX_HEAD_BYTES)
  t.equal(new ResponseHeadReader().scan(Buffer.from(exact, 'latin1'), 0, exact.length), 'too-large', 'ours refuses a head of MAX_HEAD_BYTES')
  const under = head(MAX_HEAD_BYTES - 200)
  t.notOk(llhttpRejects(under), 'llhttp reads a head a little under the bound')
  t.match(new ResponseHeadReader().scan(Buffer.from(under, 'latin1'), 0, under.length), { rest: under.length }, 'so does ours')
  // Growing without an end: refused once no end could keep it under the bound.
  const reader = new ResponseHeadReader()
  const piece = Buffer.from('HTTP/1.1 200 OK\r\nx-a: '.padEnd(4096, 'a'), 'latin1')
  const verdicts = [0, 1, 2, 3, 4, 5].map(() => reader.scan(piece, 0, piece.byteLength))
  t.same(verdicts, ['incomplete', 'incomplete', 'incomplete', 'incomplete', 'too-large', 'incomplete'], 'refused once past 16 KiB, and the reader starts over')
  const run = scriptedExchange()
  run.feed(Buffer.from(head(MAX_HEAD_BYTES + 1000), 'latin1'))
  t.equal(run.outcome().verdict, 'reject', 'the exchange fails at once')
})
