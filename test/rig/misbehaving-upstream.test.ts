import t from 'tap'
import { request } from 'undici'
import { gunzipSync } from 'node:zlib'
import { readPackument } from '../../bench/peers/shared-data.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { makeTestCa } from '../../bench/peers/tls.js'

const BODY = JSON.stringify({ name: 'slow-doc', versions: {}, padding: 'x'.repeat(2000) })

t.test('each misbehaviour, seen by a plain undici client', async (t) => {
  const upstream = await startMisbehavingUpstream()
  t.teardown(() => upstream.stop())
  const get = (path: string, options: Parameters<typeof request>[1] = {}) => request(upstream.url(path), { dispatcher: upstream.dispatcher, ...options })

  t.test('unscripted paths answer 404 and every request is recorded', async (t) => {
    const response = await get('/nothing-here?x=1', { headers: { 'x-probe': 'yes' } })
    t.equal(response.statusCode, 404)
    await response.body.dump()
    t.match(upstream.requests.at(-1), { method: 'GET', url: '/nothing-here?x=1', headers: { 'x-probe': 'yes' } })
  })

  t.test('slow: headers late, body trickles but arrives whole', async (t) => {
    upstream.script('/slow', { kind: 'slow', body: BODY, firstByteDelayMs: 50, chunkBytes: 512, chunkDelayMs: 10 })
    const response = await get('/slow')
    t.equal(await response.body.text(), BODY)
    upstream.script('/slower', { kind: 'slow', body: BODY, firstByteDelayMs: 10_000 })
    await t.rejects(get('/slower', { headersTimeout: 200 }), { code: 'UND_ERR_HEADERS_TIMEOUT' })
  })

  t.test('reset mid-body: some bytes, then the connection dies', async (t) => {
    upstream.script('/reset', { kind: 'reset-mid-body', body: BODY, afterBytes: 100 })
    const response = await get('/reset')
    t.equal(response.statusCode, 200)
    t.equal(response.headers['content-length'], String(BODY.length))
    await t.rejects(response.body.text())
  })

  t.test('truncated gzip: a complete HTTP message whose gzip stream stops short', async (t) => {
    upstream.script('/truncated', { kind: 'truncated-gzip', body: BODY })
    const response = await get('/truncated')
    t.equal(response.headers['content-encoding'], 'gzip')
    const raw = Buffer.from(await response.body.arrayBuffer())
    t.throws(() => gunzipSync(raw), { code: 'Z_BUF_ERROR' })
  })

  t.test('corrupt gzip: the trailer checksum does not match', async (t) => {
    upstream.script('/corrupt', { kind: 'corrupt-gzip', body: BODY })
    const response = await get('/corrupt')
    const raw = Buffer.from(await response.body.arrayBuffer())
    t.throws(() => gunzipSync(raw), { code: 'Z_DATA_ERROR' })
  })

  t.test('malformed JSON with a JSON content type', async (t) => {
    upstream.script('/malformed', { kind: 'malformed-json' })
    const response = await get('/malformed')
    t.equal(response.headers['content-type'], 'application/json')
    const text = await response.body.text()
    t.throws(() => JSON.parse(text), SyntaxError)
  })

  t.test('a document for another package', async (t) => {
    const lodash = await readPackument('lodash')
    upstream.script('/express', { kind: 'another-package', document: lodash })
    const response = await get('/express')
    const body = await response.body.json() as { name: string }
    t.equal(body.name, 'lodash')
  })

  t.test('redirect, then a good answer on the next call', async (t) => {
    upstream.script('/moved', [
      { kind: 'redirect', location: 'http://127.0.0.1:9/elsewhere', status: 307 },
      { kind: 'respond', body: '{"ok":true}' },
    ])
    const first = await get('/moved')
    t.equal(first.statusCode, 307)
    t.equal(first.headers.location, 'http://127.0.0.1:9/elsewhere')
    await first.body.dump()
    const second = await get('/moved')
    t.same(await second.body.json(), { ok: true })
  })

  t.test('oversized, with and without a Content-Length', async (t) => {
    const size = 8 * 1024 * 1024 + 3
    upstream.script('/big', { kind: 'oversized', bytes: size })
    upstream.script('/big-chunked', { kind: 'oversized', bytes: size, declareLength: false })
    for (const path of ['/big', '/big-chunked']) {
      const response = await get(path)
      t.equal(response.headers['content-length'], path === '/big' ? String(size) : undefined)
      let total = 0
      for await (const chunk of response.body) total += (chunk as Buffer).length
      t.equal(total, size, path)
    }
  })

  t.test('gzip bomb: a small body that inflates a thousandfold', async (t) => {
    const expanded = 16 * 1024 * 1024
    upstream.script('/bomb', { kind: 'gzip-bomb', expandedBytes: expanded })
    const response = await get('/bomb')
    t.equal(response.headers['content-encoding'], 'gzip')
    const raw = Buffer.from(await response.body.arrayBuffer())
    t.ok(raw.length * 500 < expanded, `compressed ${raw.length} bytes`)
    t.equal(gunzipSync(raw).length, expanded)
  })

  t.test('a tarball URL on another host', async (t) => {
    const leftPad = await readPackument('left-pad')
    upstream.script('/left-pad', { kind: 'foreign-tarball', document: leftPad, tarballOrigin: 'https://127.0.0.2:8443' })
    const response = await get('/left-pad')
    const body = await response.body.json() as { name: string, versions: Record<string, { dist: { tarball: string, integrity?: string } }> }
    t.equal(body.name, 'left-pad')
    t.equal(Object.keys(body.versions).length, Object.keys(leftPad.versions).length)
    t.equal(body.versions['1.3.0']?.dist.tarball, 'https://127.0.0.2:8443/left-pad/-/left-pad-1.3.0.tgz')
    t.equal(body.versions['1.3.0']?.dist.integrity, leftPad.versions['1.3.0']?.dist.integrity, 'the rest is untouched')
  })
})

t.test('over https with a test CA', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  t.match(upstream.origin, /^https:\/\/127\.0\.0\.1:\d+$/)
  upstream.script('/ok', { kind: 'respond', body: '{}' })
  const response = await request(upstream.url('/ok'), { dispatcher: upstream.dispatcher })
  t.same(await response.body.json(), {})
  await t.rejects(request(upstream.url('/ok')), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
})
