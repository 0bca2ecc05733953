/**
 * Differential fuzz of the artifact client's HTTP/1.1 parsing
 * (engine/upstream/http1/: the head parser, the body framing, and the
 * exchange and connection that drive them across reads) against Node's own
 * parser, llhttp, reached through `node:http`'s parser binding in memory.
 * The same random and mutated responses go to both. Wherever llhttp
 * rejects, ours must reject too; where ours reads a whole message, llhttp
 * reads the same one; and every exchange settles exactly once.
 *
 * Two generators: heads alone (the head parser and the framing choice), and
 * whole messages (a head with a content-length, chunked or unframed body,
 * chunk extensions and trailers), mutated anywhere and delivered to a real
 * ArtifactConnection in random reads.
 *
 * Seeded and bounded: a couple of seconds and at most 20 000 cases per
 * generator in `npm test`; `FUZZ_SECONDS` (per generator) and `FUZZ_SEED`
 * run longer with the same generators (`npm run fuzz`).
 */
import t from 'tap'
import { createRequire } from 'node:module'
import { ResponseHeadReader, parseResponseHead } from '../../../engine/upstream/http1/head-parser.js'
import { BodyFraming } from '../../../engine/upstream/http1/body-framing.js'
import { FIELD_VALUE } from '../../../engine/upstream/http-field-syntax.js'
import { fuzzBudget, seededRandom, type Random } from '../../helpers/fuzz.js'
import { scriptedExchange } from './scripted-socket.js'

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: any }

type Verdict = 'accept' | 'reject' | 'incomplete' | 'informational'

function ours(bytes: Buffer): Verdict {
  const found = new ResponseHeadReader().scan(bytes, 0, bytes.length)
  if (found === 'incomplete') return 'incomplete'
  if (found === 'too-large' || found === 'bare-lf') return 'reject'
  const head = parseResponseHead(found.text)
  if (typeof head === 'string') return 'reject'
  if (head.statusCode < 200) return 'informational'
  for (const value of Object.values(head.headers)) if (!FIELD_VALUE.test(value)) throw new Error(`accepted a control byte: ${JSON.stringify(value)}`)
  return new BodyFraming().start('GET', head) === undefined ? 'accept' : 'reject'
}

/**
 * llhttp's verdict on `bytes` as the answer to a GET: the parser node:http's
 * client uses (from `_http_common`, with Node's default strict flags), fed
 * in memory so each case costs microseconds rather than a socket.
 */
function llhttp(bytes: Buffer): Verdict {
  const parser = new HTTPParser()
  parser.initialize(HTTPParser.RESPONSE, {}, 0, 0)
  let verdict: Verdict = 'incomplete'
  parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, _headers: unknown, _method: unknown, _url: unknown, status: number): number => {
    if (verdict === 'incomplete') verdict = status < 200 ? 'informational' : 'accept'
    return 1 // skip the body: only the head is compared
  }
  const result: unknown = parser.execute(bytes)
  parser.close?.()
  return result instanceof Error ? 'reject' : verdict
}

const NAMES = ['content-type', 'content-length', 'transfer-encoding', 'etag', 'cache-control', 'set-cookie', 'location', 'x-a', 'last-modified', 'connection', 'keep-alive']
const VALUES = ['application/octet-stream', '5', '0', '18', 'chunked', 'gzip', 'identity', '"abc"', 'max-age=300', 'a=b', 'close', 'timeout=5', 'W/"x"', '', ' ']
const ODD = ['\r', '\n', '\r\n', '\x00', '\t', ' ', ':', '\x7f', '\x80', '\xff', '\x01', '\x1f', ',', '"', '\\', '\x0b', '\x0c']

function pick<T>(rnd: Random, list: readonly T[]): T { return list[Math.floor(rnd() * list.length)] as T }

function freshHead(rnd: Random): string {
  const status = pick(rnd, ['HTTP/1.1 200 OK', 'HTTP/1.1 200', 'HTTP/1.0 200 OK', 'HTTP/1.1 404 Not Found', 'HTTP/1.1 304 Not Modified', 'HTTP/1.1 500 x', 'HTTP/1.1 206 Partial'])
  const lines = [status]
  const count = Math.floor(rnd() * 5)
  for (let i = 0; i < count; i++) lines.push(`${pick(rnd, NAMES)}: ${pick(rnd, VALUES)}`)
  if (rnd() < 0.7) lines.push(`content-length: ${pick(rnd, ['0', '5', '12'])}`)
  return `${lines.join('\r\n')}\r\n\r\n`
}

function mutate(rnd: Random, head: string): string {
  let s = head
  const edits = 1 + Math.floor(rnd() * 3)
  for (let i = 0; i < edits; i++) {
    // Mutations stay inside the head, before its final blank line, so both parsers see one head.
    const body = s.slice(0, -4)
    const at = Math.floor(rnd() * (body.length + 1))
    switch (Math.floor(rnd() * 6)) {
      case 0: s = `${body.slice(0, at)}${pick(rnd, ODD)}${body.slice(at)}\r\n\r\n`; break
      case 1: s = `${body.slice(0, at)}${body.slice(at + 1)}\r\n\r\n`; break
      case 2: s = `${body.slice(0, at)}${String.fromCharCode(Math.floor(rnd() * 256))}${body.slice(at)}\r\n\r\n`; break
      case 3: { const lines = body.split('\r\n'); const line = pick(rnd, lines.slice(1).concat([lines[0] as string])); s = `${body}\r\n${line}\r\n\r\n`; break }
      case 4: s = `${body.replace('\r\n', pick(rnd, ['\n', '\r', '\r\n ', '\r\n\t', ' \r\n']))}\r\n\r\n`; break
      default: s = `${body.replace(':', pick(rnd, [' :', ':\x00', '\t:', '']))}\r\n\r\n`
    }
  }
  return s
}

t.test('wherever llhttp rejects a response head, ours rejects it too', async (t) => {
  const { seed, deadline, maxCases } = fuzzBudget({ seconds: 2, seed: 0x5eed_11 })
  const rnd = seededRandom(seed)
  let cases = 0
  const counts: Record<string, number> = {}
  const escaped: string[] = []
  while (Date.now() < deadline && cases < maxCases) {
    const generated = rnd() < 0.25 ? freshHead(rnd) : mutate(rnd, freshHead(rnd))
    // One head only: bytes after the first blank line would be a second response to llhttp.
    const head = generated.slice(0, generated.indexOf('\r\n\r\n') + 4)
    const bytes = Buffer.from(head, 'latin1')
    const theirs = llhttp(bytes)
    const mine = ours(bytes)
    cases++
    counts[`${theirs}/${mine}`] = (counts[`${theirs}/${mine}`] ?? 0) + 1
    if (theirs === 'reject' && mine === 'accept' && escaped.length < 10) escaped.push(JSON.stringify(head))
  }
  t.ok(cases > 100, `ran ${cases} cases (seed ${seed}): ${JSON.stringify(counts)}`)
  t.ok((counts['reject/reject'] ?? 0) > 0 && (counts['accept/accept'] ?? 0) > 0, 'the generator reaches both verdicts')
  t.same(escaped, [], 'no head llhttp rejects is accepted by ours')
})

t.test('known heads: the strict cases', async (t) => {
  const refused = [
    'HTTP/1.1 200 OK\r\netag: "a"\nset-cookie: x=1\r\n\r\n',
    'HTTP/1.1 200 OK\r\netag: "a"\rx\r\n\r\n',
    'HTTP/1.1 200 OK\r\netag: a\x00b\r\n\r\n',
    'HTTP/1.1 200 OK\r\netag: a\r\n folded\r\n\r\n',
    'HTTP/1.1 200 OK\r\netag : a\r\n\r\n',
  ]
  for (const head of refused) {
    t.equal(ours(Buffer.from(head, 'latin1')), 'reject', JSON.stringify(head))
    t.equal(llhttp(Buffer.from(head, 'latin1')), 'reject', `llhttp agrees: ${JSON.stringify(head)}`)
  }
  // Stricter than llhttp where RFC 9112 is: a control byte in the reason phrase.
  t.equal(ours(Buffer.from('HTTP/1.1 200 O\x01K\r\n\r\n', 'latin1')), 'reject', 'a control byte in the reason phrase')
  t.equal(ours(Buffer.from('HTTP/1.1 200 OK\r\netag: \t"a" \t\r\ncontent-length: 0\r\n\r\n', 'latin1')), 'accept', 'OWS around a value is allowed')
  t.equal(ours(Buffer.from('HTTP/1.1 200 OK\r\nx-a: caf\xe9\r\ncontent-length: 0\r\n\r\n', 'latin1')), 'accept', 'obs-text in a value is allowed')
})

// ---- whole messages: head and body framing, through a real connection ----

interface MessageVerdict {
  readonly verdict: 'reject' | 'complete' | 'incomplete' | 'upgrade'
  readonly body: Buffer
}

/**
 * llhttp's reading of `bytes` as the answer to a GET: informational answers
 * are skipped, as a client does; the verdict is taken when the final answer
 * completes (bytes after it would be the next response on the connection,
 * which ours refuses to reuse).
 */
function llhttpMessage(bytes: Buffer): MessageVerdict {
  const parser = new HTTPParser()
  parser.initialize(HTTPParser.RESPONSE, {}, 0, 0)
  const parts: Buffer[] = []
  let final = false
  let done: MessageVerdict | undefined
  parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, _headers: unknown, _method: unknown, _url: unknown, status: number): number => {
    final = status >= 200
    return 0
  }
  parser[HTTPParser.kOnBody] = (chunk: Buffer): void => { if (final && done === undefined) parts.push(Buffer.from(chunk)) }
  parser[HTTPParser.kOnMessageComplete] = (): void => { if (final && done === undefined) done = { verdict: 'complete', body: Buffer.concat(parts) } }
  const result: unknown = parser.execute(bytes)
  parser.close?.()
  if (done !== undefined) return done
  if (result instanceof Error) return { verdict: 'reject', body: Buffer.alloc(0) }
  // A 101 (or a CONNECT-like upgrade) stops llhttp; ours refuses one it never asked for.
  return { verdict: (parser as { upgrade?: boolean }).upgrade === true ? 'upgrade' : 'incomplete', body: Buffer.concat(parts) }
}

const STATUS_LINES = ['HTTP/1.1 200 OK', 'HTTP/1.1 200', 'HTTP/1.0 200 OK', 'HTTP/1.1 404 Not Found', 'HTTP/1.1 204 No Content', 'HTTP/1.1 304 Not Modified', 'HTTP/1.1 203 x']
const EXTENSIONS = ['', '', '', ';a', ';a=b', ';a="b c"', ';a="q\\"x"', ';a=b;c', ';x-y=1']
const TRAILERS = ['x-t: 1', 'etag: "z"', 'x-empty:', 'x-ows: \t v \t']
/** Body bytes that look like framing, so cuts and mutations land on lookalikes. */
const BODY_ALPHABET = 'abcdef0123456789;="\r\n :xyz'

function hexSize(rnd: Random, n: number): string {
  const hex = n.toString(16)
  const cased = rnd() < 0.2 ? hex.toUpperCase() : hex
  return rnd() < 0.1 ? `00${cased}` : cased
}

function freshMessage(rnd: Random): string {
  const head = [pick(rnd, STATUS_LINES)]
  for (let i = Math.floor(rnd() * 3); i > 0; i--) head.push(`${pick(rnd, NAMES.filter((n) => n !== 'content-length' && n !== 'transfer-encoding'))}: ${pick(rnd, VALUES)}`)
  let body = ''
  for (let i = Math.floor(rnd() * 24); i > 0; i--) body += pick(rnd, [...BODY_ALPHABET])
  const informational = rnd() < 0.05 ? 'HTTP/1.1 100 Continue\r\n\r\n' : ''
  const framing = rnd()
  let rest: string
  if (framing < 0.35) {
    head.push(`content-length: ${body.length}`)
    rest = body
  } else if (framing < 0.9) {
    head.push('transfer-encoding: chunked')
    rest = ''
    for (let at = 0; at < body.length;) {
      const size = 1 + Math.floor(rnd() * (body.length - at))
      rest += `${hexSize(rnd, size)}${pick(rnd, EXTENSIONS)}\r\n${body.slice(at, at + size)}\r\n`
      at += size
    }
    rest += `${rnd() < 0.1 ? '000' : '0'}${pick(rnd, EXTENSIONS)}\r\n`
    for (let i = Math.floor(rnd() * 2.5); i > 0; i--) rest += `${pick(rnd, TRAILERS)}\r\n`
    rest += '\r\n'
  } else {
    // No framing: a body delimited by the connection closing.
    rest = body
  }
  return `${informational}${head.join('\r\n')}\r\n\r\n${rest}`
}

/** Edits anywhere in the message: the head, the chunk lines, the trailers and the body alike. */
function mutateMessage(rnd: Random, message: string): string {
  let s = message
  for (let i = 1 + Math.floor(rnd() * 2); i > 0; i--) {
    const at = Math.floor(rnd() * (s.length + 1))
    switch (Math.floor(rnd() * 7)) {
      case 0: s = `${s.slice(0, at)}${pick(rnd, ODD)}${s.slice(at)}`; break
      case 1: s = `${s.slice(0, at)}${s.slice(at + 1)}`; break
      case 2: s = `${s.slice(0, at)}${String.fromCharCode(Math.floor(rnd() * 256))}${s.slice(at)}`; break
      case 3: {
        // One CRLF (past the first, when there is one) turned into a lookalike.
        const crlf = s.indexOf('\r\n', at)
        if (crlf !== -1) s = `${s.slice(0, crlf)}${pick(rnd, ['\n', '\r', '\r\r\n', '\r\n ', '\r\n\t', ' \r\n', '\t\r\n', '\r\n\r\n'])}${s.slice(crlf + 2)}`
        break
      }
      case 4: s = `${s.slice(0, at)}${pick(rnd, [' ', '\t', ';', '=', '"', '\xa0', '\x0b', '0', 'f', 'x'])}${s.slice(at)}`; break
      case 5: s = `${s.slice(0, at)}${pick(rnd, ['transfer-encoding: chunked\r\n', 'content-length: 3\r\n', 'x-t: 1\r\n', '0\r\n\r\n', '5\r\n'])}${s.slice(at)}`; break
      default: s = s.slice(0, at)
    }
  }
  return s
}

function cutsFor(rnd: Random, length: number): number[] {
  const cuts: number[] = []
  for (let i = Math.floor(rnd() * 4); i > 0; i--) cuts.push(Math.floor(rnd() * length))
  return cuts.sort((a, b) => a - b)
}

t.test('whole messages: wherever llhttp rejects, ours rejects; where ours reads one, llhttp reads the same; each exchange settles once', async (t) => {
  const { seed, deadline, maxCases } = fuzzBudget({ seconds: 2, seed: 0x5eed_12 })
  const rnd = seededRandom(seed)
  let cases = 0
  const counts: Record<string, number> = {}
  const escaped: string[] = []
  const differed: string[] = []
  const unsettled: string[] = []
  while (Date.now() < deadline && cases < maxCases) {
    const text = rnd() < 0.3 ? freshMessage(rnd) : mutateMessage(rnd, freshMessage(rnd))
    const bytes = Buffer.from(text, 'latin1')
    const theirs = llhttpMessage(bytes)
    const run = scriptedExchange('GET', rnd() < 0.3 ? { holdEvery: 1 + Math.floor(rnd() * 3) } : {})
    run.feed(bytes, cutsFor(rnd, bytes.byteLength))
    const mine = run.outcome()
    cases++
    counts[`${theirs.verdict}/${mine.verdict}`] = (counts[`${theirs.verdict}/${mine.verdict}`] ?? 0) + 1
    const show = JSON.stringify(text)
    // Ours never ends a message where llhttp would read on (or ends it elsewhere): that is a cut passed as whole, or a desync.
    if (mine.verdict === 'complete' && (theirs.verdict !== 'complete' || !theirs.body.equals(mine.body)) && differed.length < 10) {
      differed.push(`${show}: llhttp ${theirs.verdict} ${JSON.stringify(theirs.body.toString('latin1'))}, ours ${JSON.stringify(mine.body.toString('latin1'))}`)
    }
    // Whatever the bytes, once the peer closes, the head has settled once, and a body it announced has too.
    run.end()
    const closed = run.outcome()
    // llhttp refuses some heads byte by byte, before they end; ours refuses a
    // head once it has ended, or when the peer closes first. Either way,
    // never accepted: an incomplete message is not an accepted one.
    if (theirs.verdict === 'reject' && closed.verdict !== 'reject' && escaped.length < 10) escaped.push(`${mine.verdict}: ${show}`)
    const bodyExpected = closed.response?.body !== null && closed.response !== undefined ? 1 : 0
    if ((closed.headSettles !== 1 || closed.bodySettles !== bodyExpected) && unsettled.length < 10) {
      unsettled.push(`head ${closed.headSettles}, body ${closed.bodySettles}: ${show}`)
    }
  }
  t.ok(cases > 100, `ran ${cases} cases (seed ${seed}): ${JSON.stringify(counts)}`)
  t.ok((counts['reject/reject'] ?? 0) > 0 && (counts['complete/complete'] ?? 0) > 0, 'the generator reaches both verdicts')
  t.same(escaped, [], 'no message llhttp rejects is accepted by ours')
  t.same(differed, [], 'where ours reads a whole message, llhttp reads the same one')
  t.same(unsettled, [], 'every exchange settled its head once, and its body once')
})

t.test('known messages: the chunked framing is as strict as llhttp', async (t) => {
  const CHUNKED = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n'
  const refused: Record<string, string> = {
    'a chunk-size line ended by a bare LF': `${CHUNKED}5\nhello\r\n0\r\n\r\n`,
    'a space before the size': `${CHUNKED} 5\r\nhello\r\n0\r\n\r\n`,
    'a space after the size': `${CHUNKED}5 \r\nhello\r\n0\r\n\r\n`,
    'an HTAB after the size': `${CHUNKED}5\t\r\nhello\r\n0\r\n\r\n`,
    'a no-break space before the size': `${CHUNKED}\xa05\r\nhello\r\n0\r\n\r\n`,
    'whitespace before an extension': `${CHUNKED}5 ;a=b\r\nhello\r\n0\r\n\r\n`,
    'a NUL in an extension': `${CHUNKED}5;a\x00\r\nhello\r\n0\r\n\r\n`,
    'a bare CR in an extension': `${CHUNKED}5;a\rb\r\nhello\r\n0\r\n\r\n`,
    'an empty extension': `${CHUNKED}5;\r\nhello\r\n0\r\n\r\n`,
    'a trailer ended by a bare LF': `${CHUNKED}5\r\nhello\r\n0\r\nx-t: 1\n\r\n`,
    'the last line a bare LF': `${CHUNKED}5\r\nhello\r\n0\r\n\n`,
    'a NUL in a trailer': `${CHUNKED}5\r\nhello\r\n0\r\nx-t: \x001\r\n\r\n`,
    'a trailer without a colon': `${CHUNKED}5\r\nhello\r\n0\r\nxt\r\n\r\n`,
    'a folded trailer': `${CHUNKED}5\r\nhello\r\n0\r\nx-t: 1\r\n 2\r\n\r\n`,
    'a Content-Length trailer': `${CHUNKED}5\r\nhello\r\n0\r\ncontent-length: 5\r\n\r\n`,
    'a response head ended by bare LFs': 'HTTP/1.1 200 OK\ncontent-length: 1\n\nx',
    'a head line ended by a bare LF': 'HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\nx',
    'a head past 16 KiB': `HTTP/1.1 200 OK\r\nx-a: ${'a'.repeat(17_000)}\r\ncontent-length: 0\r\n\r\n`,
  }
  for (const [name, text] of Object.entries(refused)) {
    const bytes = Buffer.from(text, 'latin1')
    t.equal(llhttpMessage(bytes).verdict, 'reject', `llhttp refuses ${name}`)
    const run = scriptedExchange()
    run.feed(bytes)
    t.equal(run.outcome().verdict, 'reject', `ours refuses ${name}, at once`)
  }
  // Where RFC 9112 is stricter than llhttp, ours follows the RFC.
  const stricter: Record<string, string> = {
    'Transfer-Encoding in HTTP/1.0 (section 6.1)': 'HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'a 101 nobody asked for (RFC 9110 section 15.2.2)': 'HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx',
    // Also llhttp's verdict from 9.4 (Node 22 and 24); Node 20's llhttp 9.3 reads them.
    'an empty Transfer-Encoding on a 304': 'HTTP/1.1 304 Not Modified\r\ntransfer-encoding: \r\n\r\n',
    'an empty element and a parameter in a 304\'s Transfer-Encoding': 'HTTP/1.1 304 Not Modified\r\ntransfer-encoding: \r\ntransfer-encoding: a=b\r\n\r\n',
    'a coding other than chunked, on any status': 'HTTP/1.1 304 Not Modified\r\ntransfer-encoding: gzip, chunked\r\n\r\n',
  }
  for (const [name, text] of Object.entries(stricter)) {
    const run = scriptedExchange()
    run.feed(Buffer.from(text, 'latin1'))
    t.equal(run.outcome().verdict, 'reject', `ours refuses ${name}`)
  }
  const accepted: Record<string, [string, string]> = {
    'extensions, quoted and plain': [`${CHUNKED}5;a=b;c="d e"\r\nhello\r\n0;z\r\n\r\n`, 'hello'],
    'padded and upper-case sizes': [`${CHUNKED}0005\r\nhello\r\nA\r\n0123456789\r\n000\r\n\r\n`, 'hello0123456789'],
    'trailers with OWS': [`${CHUNKED}5\r\nhello\r\n0\r\nx-t: \t1 \r\nx-empty:\r\n\r\n`, 'hello'],
  }
  for (const [name, [text, body]] of Object.entries(accepted)) {
    const bytes = Buffer.from(text, 'latin1')
    t.same(llhttpMessage(bytes), { verdict: 'complete', body: Buffer.from(body) }, `llhttp reads ${name}`)
    const run = scriptedExchange()
    run.feed(bytes)
    const mine = run.outcome()
    t.equal(mine.verdict, 'complete', `ours reads ${name}`)
    t.equal(mine.body.toString('latin1'), body, `ours reads the same body: ${name}`)
  }
})
