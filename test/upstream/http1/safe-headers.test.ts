/**
 * `pickSafeHeaders` (engine/upstream/http1/artifact-response.ts): an
 * explicit allowlist, each value checked against its own syntax as well as
 * RFC 9110's field syntax; a value that fails is dropped, never repaired.
 */
import t from 'tap'
import { SAFE_ARTIFACT_HEADERS, pickSafeHeaders } from '../../../engine/upstream/http1/artifact-response.js'
import { scriptedExchange } from './scripted-socket.js'

t.test('only the allowlist is picked', async (t) => {
  const picked = pickSafeHeaders({
    'set-cookie': 'a=b', location: 'http://x.invalid/', connection: 'close', 'transfer-encoding': 'chunked',
    'x-anything': '1', 'content-type': 'application/octet-stream', etag: '"a"',
  })
  t.same(picked, { 'content-type': 'application/octet-stream', etag: '"a"' })
  t.same([...SAFE_ARTIFACT_HEADERS].sort(), ['accept-ranges', 'age', 'cache-control', 'content-encoding', 'content-length', 'content-type', 'etag', 'expires', 'last-modified'])
})

t.test('well-formed values pass as they are', async (t) => {
  const good = {
    'content-length': '12345',
    'content-type': 'application/octet-stream; charset="utf-8"; a=b',
    'content-encoding': 'gzip, br',
    etag: 'W/"abc-123"',
    'last-modified': 'Sun, 06 Nov 1994 08:49:37 GMT',
    'cache-control': 'public, max-age=300, immutable',
    expires: '0',
    age: '30',
    'accept-ranges': 'bytes',
  }
  t.same(pickSafeHeaders(good), good)
})

t.test('a value that breaks its own syntax, or field syntax, is dropped', async (t) => {
  const bad: Record<string, string> = {
    'content-length': '-5',
    'content-type': 'text/html, text/plain',
    'content-encoding': 'gzip;q=1',
    etag: 'abc',
    age: '-1',
    'accept-ranges': 'bytes, ',
    'cache-control': 'max-age=1\r\nset-cookie: a=b',
    expires: '',
  }
  t.same(pickSafeHeaders(bad), {}, 'nothing survives')
  t.same(pickSafeHeaders({ etag: ['"a"', '"b"'] }), {}, 'a repeated singleton is dropped, not picked twice')
  t.same(pickSafeHeaders({ 'last-modified': 'x\x00y' }), {}, 'a NUL')
  t.same(pickSafeHeaders({ 'cache-control': 'no-cache\x7f' }), {}, 'a DEL')
})

t.test('an upstream head reaches the caller with only its safe headers', async (t) => {
  const run = scriptedExchange('HEAD')
  run.feed(Buffer.from([
    'HTTP/1.1 200 OK', 'content-length: 7', 'etag: "a"', 'etag: "b"', 'content-type: application/octet-stream',
    'set-cookie: evil=1', 'location: http://evil.invalid/', 'age: soon', '', '',
  ].join('\r\n'), 'latin1'))
  const { response } = run.outcome()
  t.same(response?.headers, { 'content-length': '7', 'content-type': 'application/octet-stream' })
  t.equal(response?.body, null)
})
