/**
 * The bounds of `POST /js/-/npm/v1/security/advisories/bulk` (issue 17 item
 * 3), on a real proxy: the body as sent (AUDIT_MAX_BODY_BYTES, declared or
 * counted), the body once decoded (AUDIT_MAX_DECODED_BYTES: a gzip bomb
 * stops there), malformed and undecodable requests, a mount with no
 * database, and every charge returned to the memory gate afterwards. The
 * route matching of the npm v1 paths is checked too.
 */
import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { decodeRequestBody } from '../../server/http/decoded-request-body.js'
import { AUDIT_MAX_BODY_BYTES, AUDIT_MAX_DECODED_BYTES } from '../../server/routes/audit-route.js'
import { matchJsRoute } from '../../server/routes/js-routes.js'
import { ServiceError } from '../../engine/errors.js'
import { startTestProxy } from '../helpers/proxy.js'
import { gzipBomb } from '../peers/misbehaving-upstream.js'

const BULK = '/js/-/npm/v1/security/advisories/bulk'

t.test('npm v1 paths', async (t) => {
  t.same(matchJsRoute('POST', BULK), { kind: 'audit_bulk' })
  t.same(matchJsRoute('GET', BULK), { kind: 'not_found' })
  t.same(matchJsRoute('POST', '/js/-/npm/v1/security/audits/quick'), { kind: 'audit_legacy' })
  t.same(matchJsRoute('GET', '/js/-/npm/v1/keys'), { kind: 'signing_keys' })
  t.same(matchJsRoute('GET', '/js/-/npm/v1/attestations/left-pad@1.3.0'), { kind: 'attestations', package: 'left-pad', version: '1.3.0' })
  t.same(matchJsRoute('GET', '/js/-/npm/v1/attestations/@scope/name@1.0.0-rc.1'), { kind: 'attestations', package: '@scope%2fname', version: '1.0.0-rc.1' })
  t.same(matchJsRoute('GET', '/js/-/npm/v1/attestations/@scope%2Fname@2.0.0'), { kind: 'attestations', package: '@scope%2Fname', version: '2.0.0' })
  for (const bad of ['left-pad', 'left-pad@', '@scope@1.0.0', 'a/b/c@1.0.0']) {
    t.same(matchJsRoute('GET', `/js/-/npm/v1/attestations/${bad}`), { kind: 'not_found' }, bad)
  }
})

t.test('decoding under a bound', async (t) => {
  const malformed = (reason: string): ServiceError => new ServiceError('AUDIT_REQUEST_INVALID', { data: { reason } })
  const tooLarge = new ServiceError('AUDIT_BODY_TOO_LARGE')
  const options = { maxDecodedBytes: 1024, tooLarge, malformed }
  t.equal(Buffer.from(decodeRequestBody(gzipSync('{"a":["1.0.0"]}'), 'gzip', options)).toString(), '{"a":["1.0.0"]}')
  t.equal(Buffer.from(decodeRequestBody(Buffer.from('{}'), undefined, options)).toString(), '{}')
  t.throws(() => decodeRequestBody(gzipSync(Buffer.alloc(1025)), 'gzip', options), tooLarge, 'one byte over the bound')
  t.throws(() => decodeRequestBody(Buffer.alloc(1025), 'identity', options), tooLarge)
  t.throws(() => decodeRequestBody(Buffer.from('not gzip'), 'gzip', options), { code: 'AUDIT_REQUEST_INVALID' })
  t.throws(() => decodeRequestBody(Buffer.from('{}'), 'compress', options), { code: 'AUDIT_REQUEST_INVALID' })
  t.throws(() => decodeRequestBody(gzipSync(gzipSync('{}')), 'gzip, gzip', options), { code: 'AUDIT_REQUEST_INVALID' })
})

t.test('the route on a proxy without an advisory database', async (t) => {
  const proxy = await startTestProxy(t)
  const post = (body: Uint8Array | string, headers: Record<string, string> = {}) =>
    proxy.fetch('POST', BULK, { headers: { 'content-type': 'application/json', ...headers }, body })

  const bomb = gzipBomb(AUDIT_MAX_DECODED_BYTES * 4)
  t.ok(bomb.byteLength < AUDIT_MAX_BODY_BYTES, `the bomb (${bomb.byteLength} bytes) passes the bound as sent`)
  const exploded = await post(bomb, { 'content-encoding': 'gzip' })
  t.equal(exploded.status, 413, 'a gzip bomb stops at the decoded bound')
  t.match(exploded.json(), { error: /once decoded/ })

  const oversized = await post(Buffer.alloc(AUDIT_MAX_BODY_BYTES + 1, 0x20))
  t.equal(oversized.status, 413, 'over the bound as sent')
  t.match(oversized.json(), { error: /as sent/ })

  const malformed = await post(gzipSync('{"lodash": "4.17.20"}'), { 'content-encoding': 'gzip' })
  t.equal(malformed.status, 400)
  t.match(malformed.json(), { error: /malformed/ })
  t.equal((await post(Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' })).status, 400, 'an undecodable body')
  t.equal((await post('{"a":["1.0.0"]}', { 'content-encoding': 'zstd' })).status, 400, 'an unknown coding')

  const unknown = await post(gzipSync('{"lodash":["4.17.20"]}'), { 'content-encoding': 'gzip' })
  t.equal(unknown.status, 503, 'no database: unknown, not absent')
  t.equal(unknown.headers['retry-after'], '30')

  const legacy = await proxy.fetch('POST', '/js/-/npm/v1/security/audits', { body: '{}' })
  t.equal(legacy.status, 501)

  const gate = proxy.role.metrics()['service.serve.admission.memory'] as { chargedBytes: number }
  t.equal(gate.chargedBytes, 0, 'every charge returned')
})

/**
 * POSTs `body` as npm does (node:http, the whole body written whatever the
 * server answers meanwhile): the status and body read, and the request's
 * own error. npm's fetch (minipass-fetch) forwards a request error that
 * follows the response into the response body, so npm then reports that
 * error (EPIPE) and never the 413 envelope.
 */
function postLikeNpm(url: string, body: Buffer, chunked: boolean): Promise<{ status?: number, body?: string, error?: string }> {
  return new Promise((resolve) => {
    const seen: { status?: number, body?: string, error?: string } = {}
    const req = httpRequest(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...(chunked ? {} : { 'content-length': String(body.byteLength) }) },
    }, (res) => {
      seen.status = res.statusCode
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => { seen.body = Buffer.concat(chunks).toString() })
      res.on('error', () => {})
    })
    req.on('error', (error: NodeJS.ErrnoException) => { seen.error = error.code ?? error.message })
    // After the last event either side: a late EPIPE is what npm trips on.
    req.on('close', () => setTimeout(() => resolve(seen), 100))
    req.end(body)
  })
}

t.test('a body over the bound is read and dropped before its 413, so npm reads the 413 rather than EPIPE', async (t) => {
  const proxy = await startTestProxy(t)
  const over = randomBytes(AUDIT_MAX_BODY_BYTES + 2 * 1024 * 1024)
  for (const chunked of [false, true]) {
    const answer = await postLikeNpm(`${proxy.url}${BULK}`, over, chunked)
    t.match(answer, { status: 413, body: /exceeds .* as sent/ }, `${chunked ? 'chunked' : 'with a Content-Length'}: the 413 envelope`)
    t.equal(answer.error, undefined, `${chunked ? 'chunked' : 'with a Content-Length'}: the whole body was taken, no EPIPE`)
  }
  const gate = proxy.role.metrics()['service.serve.admission.memory'] as { chargedBytes: number }
  t.equal(gate.chargedBytes, 0, 'nothing of the dropped body is charged or kept')
})
