/**
 * Differential fuzz of the artifact client's response-head parser
 * (engine/upstream/http1-head-parser.ts plus the framing check of
 * http1-body-framing.ts) against Node's own parser, llhttp, reached through
 * `node:http`'s client on an in-memory socket. The same random and mutated
 * heads go to both; wherever llhttp rejects a head, ours must not accept
 * it, and any head ours accepts carries no control byte in a value.
 *
 * Seeded and bounded in time: `FUZZ_SECONDS` (default 2) and `FUZZ_SEED`
 * (default fixed) let `npm run fuzz` run longer with the same generator.
 */
import t from 'tap'
import { createRequire } from 'node:module'
import { ResponseHeadReader, parseResponseHead } from '../../engine/upstream/http1-head-parser.js'
import { BodyFraming } from '../../engine/upstream/http1-body-framing.js'
import { FIELD_VALUE } from '../../engine/upstream/http-field-syntax.js'
import { fuzzBudget, seededRandom, type Random } from '../helpers/fuzz.js'

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: any }

type Verdict = 'accept' | 'reject' | 'incomplete' | 'informational'

function ours(bytes: Buffer): Verdict {
  const found = new ResponseHeadReader().scan(bytes, 0, bytes.length)
  if (found === 'incomplete') return 'incomplete'
  if (found === 'too-large') return 'reject'
  const head = parseResponseHead(found.text)
  if (typeof head === 'string') return 'reject'
  if (head.statusCode < 200) return 'informational'
  for (const value of Object.values(head.headers)) if (!FIELD_VALUE.test(value)) throw new Error(`accepted a control byte: ${JSON.stringify(value)}`)
  return new BodyFraming().start('GET', head.statusCode, head.headers) === undefined ? 'accept' : 'reject'
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
