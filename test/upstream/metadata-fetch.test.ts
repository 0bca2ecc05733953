/**
 * UpstreamClient.fetchDocument against real local servers: decoding, the
 * ingest ceiling, status mapping with its logs and counters, timeouts,
 * credentials, hop marker, keep-alive and backpressure.
 */
import t from 'tap'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { isServiceError } from '../../engine/errors.js'
import { BearerToken } from '../../engine/secret.js'
import {
  METADATA_FETCH_FAILED, METADATA_FETCH_REFUSED, METADATA_MISS,
} from '../../engine/upstream/upstream-client.js'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'
import { RUN_BYTES } from '../../engine/upstream/chunk-runs.js'
import { codeOf, makeClient, startServer, text } from './servers.js'
import { ManualClock } from '../doubles/manual-clock.js'

const DOC = JSON.stringify({ name: 'left-pad', versions: { '1.0.0': { name: 'left-pad', version: '1.0.0' } } })

t.test('a plain document is returned with its validators and the hop marker is sent', async (t) => {
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', etag: '"abc"', 'last-modified': 'Wed, 01 Jan 2025 00:00:00 GMT' })
    res.end(DOC)
  })
  const { client } = makeClient(t, { url: `${up.origin}/npm/`, trusted: true })
  const got = await client.fetchDocument('left-pad')
  t.equal(got.kind, 'document')
  if (got.kind !== 'document') return
  t.equal(text(got.chunks), DOC)
  t.equal(got.bytes, Buffer.byteLength(DOC))
  t.equal(got.etag, '"abc"')
  t.equal(got.lastModified, 'Wed, 01 Jan 2025 00:00:00 GMT')
  t.equal(up.seen[0]?.url, '/npm/left-pad')
  t.equal(up.seen[0]?.headers.via, '1.1 proxy-test')
  t.equal(up.seen[0]?.headers.accept, 'application/json')
  t.match(up.seen[0]?.headers['accept-encoding'], /gzip/)
})

t.test('a scoped name is requested as @scope%2fname and accept is passed on', async (t) => {
  const up = await startServer(t, (_req, res) => { res.end('{}') })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  await client.fetchDocument('@babel/core', { accept: 'application/vnd.npm.install-v1+json' })
  t.equal(up.seen[0]?.url, '/@babel%2fcore')
  t.equal(up.seen[0]?.headers.accept, 'application/vnd.npm.install-v1+json')
})

t.test('keep-alive: sequential fetches reuse their connections', async (t) => {
  const up = await startServer(t, (_req, res) => { res.end(DOC) })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  for (let i = 0; i < 8; i++) await client.fetchDocument('left-pad')
  t.equal(up.seen.length, 8)
  // undici's pool may open a second socket when the next request arrives
  // before the first socket's drain event; it never opens one per request.
  t.ok(up.connections() <= 2, `8 requests over ${up.connections()} connections`)
})

t.test('gzip, deflate and brotli are decoded as streams', async (t) => {
  const big = JSON.stringify({ name: 'x', filler: 'abc'.repeat(100_000) })
  const bodies: Record<string, Buffer> = { gzip: gzipSync(big), deflate: deflateSync(big), br: brotliCompressSync(Buffer.from(big)) }
  const up = await startServer(t, (req, res) => {
    const coding = (req.url ?? '').slice(1)
    res.writeHead(200, { 'content-encoding': coding })
    res.end(bodies[coding])
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  for (const coding of ['gzip', 'deflate', 'br']) {
    const seen: number[] = []
    const got = await client.fetchDocument(coding, { onChunk: (c) => { seen.push(c.byteLength) } })
    if (got.kind !== 'document') { t.fail(coding); continue }
    t.equal(text(got.chunks), big, coding)
    t.equal(got.bytes, Buffer.byteLength(big), `${coding} counts decompressed bytes`)
    t.ok(seen.length > 1, `${coding} arrives in several chunks`)
    t.equal(seen.reduce((a, b) => a + b, 0), got.bytes, `${coding}: onChunk saw every byte`)
  }
})

t.test('the ceiling applies to decompressed bytes', async (t) => {
  const body = 'x'.repeat(200_000)
  const up = await startServer(t, (req, res) => {
    if (req.url === '/plain') { res.end(body); return }
    if (req.url === '/chunked') { res.write(body.slice(0, 100_000)); res.end(body.slice(100_000)); return }
    res.writeHead(200, { 'content-encoding': 'gzip' })
    res.end(gzipSync(body)) // ~1 KB on the wire
  })
  const { client, counters, logger } = makeClient(t, { url: up.origin, trusted: true, maxResponseBytes: 150_000 })
  t.equal(await codeOf(client.fetchDocument('plain')), 'RESPONSE_TOO_LARGE', 'declared length over the ceiling')
  t.equal(await codeOf(client.fetchDocument('chunked')), 'RESPONSE_TOO_LARGE', 'undeclared length over the ceiling')
  t.equal(await codeOf(client.fetchDocument('gzip')), 'RESPONSE_TOO_LARGE', 'small on the wire, large decoded')
  t.equal(counters.get('too_large'), 3)
  t.equal(logger.find(METADATA_FETCH_FAILED).length, 3)
  const exact = makeClient(t, { url: up.origin, trusted: true, maxResponseBytes: 200_000 }).client
  const got = await exact.fetchDocument('gzip')
  t.equal(got.kind === 'document' && got.bytes, 200_000, 'a body exactly at the ceiling passes')
})

t.test('a gzip bomb is stopped at the ceiling, not inflated whole', async (t) => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 }) // ~64 KB inflating to 64 MiB
  t.ok(bomb.byteLength < 256 * 1024)
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': bomb.byteLength })
    res.end(bomb)
  })
  const ceiling = 256 * 1024
  const { client } = makeClient(t, { url: up.origin, trusted: true, maxResponseBytes: ceiling })
  let delivered = 0
  const code = await codeOf(client.fetchDocument('bomb', { onChunk: (c) => { delivered += c.byteLength } }))
  t.equal(code, 'RESPONSE_TOO_LARGE')
  t.ok(delivered <= ceiling, `only ${delivered} decoded bytes were handed on`)
})

t.test('corrupt, truncated or unknown compression is UPSTREAM_DECODE; a cut body is UPSTREAM_UNAVAILABLE', async (t) => {
  const gz = gzipSync(DOC)
  const up = await startServer(t, (req, res) => {
    switch (req.url) {
      case '/corrupt': {
        const bad = Buffer.from(gz)
        bad.fill(0x55, 10, 20)
        res.writeHead(200, { 'content-encoding': 'gzip' })
        res.end(bad)
        return
      }
      case '/truncated-gzip':
        res.writeHead(200, { 'content-encoding': 'gzip' })
        res.end(gz.subarray(0, gz.byteLength - 12))
        return
      case '/truncated-br': {
        const br = brotliCompressSync(Buffer.from(DOC.repeat(50)))
        res.writeHead(200, { 'content-encoding': 'br' })
        res.end(br.subarray(0, br.byteLength - 4))
        return
      }
      case '/unknown':
        res.writeHead(200, { 'content-encoding': 'zstd' })
        res.end(DOC)
        return
      case '/cut':
        res.writeHead(200, { 'content-length': '100000' })
        res.write('{"name":"cut"')
        setImmediate(() => res.socket?.destroy())
        return
      default:
        res.end(DOC)
    }
  })
  const { client, counters } = makeClient(t, { url: up.origin, trusted: true })
  t.equal(await codeOf(client.fetchDocument('corrupt')), 'UPSTREAM_DECODE')
  t.equal(await codeOf(client.fetchDocument('truncated-gzip')), 'UPSTREAM_DECODE')
  t.equal(await codeOf(client.fetchDocument('truncated-br')), 'UPSTREAM_DECODE')
  t.equal(await codeOf(client.fetchDocument('unknown')), 'UPSTREAM_DECODE')
  t.equal(counters.get('decode'), 4)
  t.equal(await codeOf(client.fetchDocument('cut')), 'UPSTREAM_UNAVAILABLE')
  t.equal(counters.get('connection'), 1)
  const again = await client.fetchDocument('fine')
  t.equal(again.kind, 'document', 'the client still works afterwards')
})

t.test('statuses map to a miss or a coded error, with the SPEC.md 6.2 logs and counters', async (t) => {
  const up = await startServer(t, (req, res) => {
    const status = Number((req.url ?? '').slice(1))
    res.writeHead(status, status >= 300 && status < 400 ? { location: 'https://elsewhere.invalid/x?token=abc' } : {})
    res.end('secret-body-text')
  })
  const token = new BearerToken('tok-SECRET-123')
  const { client, logger, counters } = makeClient(t, { url: up.origin, trusted: true, token })
  const cases: Array<[status: number, outcome: string, level: 'warn' | 'error', message: string]> = [
    [404, 'miss', 'warn', METADATA_MISS],
    [410, 'miss', 'warn', METADATA_MISS],
    [401, 'UPSTREAM_REFUSED', 'warn', METADATA_FETCH_REFUSED],
    [403, 'UPSTREAM_REFUSED', 'warn', METADATA_FETCH_REFUSED],
    [408, 'UPSTREAM_UNAVAILABLE', 'error', METADATA_FETCH_FAILED],
    [429, 'UPSTREAM_UNAVAILABLE', 'error', METADATA_FETCH_FAILED],
    [500, 'UPSTREAM_UNAVAILABLE', 'error', METADATA_FETCH_FAILED],
    [503, 'UPSTREAM_UNAVAILABLE', 'error', METADATA_FETCH_FAILED],
    [301, 'UPSTREAM_REDIRECT', 'warn', METADATA_FETCH_REFUSED],
    [302, 'UPSTREAM_REDIRECT', 'warn', METADATA_FETCH_REFUSED],
    [307, 'UPSTREAM_REDIRECT', 'warn', METADATA_FETCH_REFUSED],
    [400, 'UPSTREAM_REFUSED', 'warn', METADATA_FETCH_REFUSED],
    [204, 'UPSTREAM_REFUSED', 'warn', METADATA_FETCH_REFUSED],
  ]
  for (const [status, outcome, level, message] of cases) {
    const before = logger.records.length
    let got: string
    try {
      const r = await client.fetchDocument(String(status))
      got = r.kind
    } catch (e) {
      got = isServiceError(e) ? e.code : String(e)
      if (isServiceError(e)) t.equal(e.data?.['status'], status, `${status} error carries the status`)
    }
    t.equal(got, outcome, `${status} -> ${outcome}`)
    const added = logger.records.slice(before)
    t.equal(added.length, 1, `${status} logs one line`)
    t.equal(added[0]?.level, level, `${status} logs at ${level}`)
    t.equal(added[0]?.message, message)
    t.equal(added[0]?.data['status'], status)
    t.equal(added[0]?.data['upstream'], `127.0.0.1:${up.port}`, 'the upstream authority is named')
  }
  t.equal(up.seen.length, cases.length, 'no redirect was followed')
  t.same(counters.snapshot(), {
    upstream_status: 11, decode: 0, other: 2, too_large: 0, timeout: 0, connection: 0, egress: 0,
  }, `${SNAPSHOT_KEYS.upstreamFetchErrors}: 401/403 count as other, every other status as upstream_status`)
  const logged = JSON.stringify(logger.records)
  t.notMatch(logged, /secret-body-text/, 'no body in logs')
  t.notMatch(logged, /tok-SECRET-123/, 'no credential in logs')
  t.notMatch(logged, /token=abc|elsewhere/, 'no redirect target or query in logs')
})

t.test('the private side sends its credential; the public side never does', async (t) => {
  const up = await startServer(t, (_req, res) => { res.end(DOC) })
  const token = new BearerToken('tok-SECRET-456')
  const { client, logger } = makeClient(t, { url: up.origin, trusted: true, token })
  await client.fetchDocument('left-pad')
  t.equal(up.seen[0]?.headers.authorization, 'Bearer tok-SECRET-456')
  t.notMatch(JSON.stringify(logger.records), /tok-SECRET-456/)
  let code = 'nothing thrown'
  try { makeClient(t, { url: 'https://127.0.0.1:1/', trusted: false, token }) } catch (e) { code = isServiceError(e) ? e.code : String(e) }
  t.equal(code, 'CONFIG_INVALID', 'a public upstream refuses a token')
})

t.test('timeouts: headers, body idle and the whole-exchange cap', async (t) => {
  const up = await startServer(t, (req, res) => {
    if (req.url === '/silent') return // never answers
    if (req.url === '/stall') { res.writeHead(200); res.write('{"name":'); return } // never finishes
    res.end(DOC)
  })
  const { client, counters, logger } = makeClient(t, {
    url: up.origin, trusted: true, timeouts: { headersMs: 150, bodyIdleMs: 150, exchangeMs: 400 },
  })
  t.equal(await codeOf(client.fetchDocument('silent')), 'UPSTREAM_TIMEOUT', 'no headers in time')
  t.equal(await codeOf(client.fetchDocument('stall')), 'UPSTREAM_TIMEOUT', 'body went quiet')
  t.equal(await codeOf(client.fetchDocument('left-pad', { onChunk: () => new Promise<void>(() => {}) })), 'UPSTREAM_TIMEOUT',
    'a read paused past the exchange cap fails')
  t.equal(counters.get('timeout'), 3)
  t.equal(logger.find(METADATA_FETCH_FAILED).filter((r) => r.level === 'error').length, 3)
})

t.test('a connection failure is UPSTREAM_UNAVAILABLE and logged at error', async (t) => {
  const up = await startServer(t, (_req, res) => { res.end() })
  const port = up.port
  await new Promise<void>((resolve) => up.server.close(() => resolve()))
  const { client, logger, counters } = makeClient(t, { url: `http://127.0.0.1:${port}/`, trusted: true })
  t.equal(await codeOf(client.fetchDocument('left-pad')), 'UPSTREAM_UNAVAILABLE')
  t.equal(counters.get('connection'), 1)
  t.equal(logger.find(METADATA_FETCH_FAILED)[0]?.data['detail'], 'ECONNREFUSED')
})

t.test('the caller abort is thrown as its reason, unlogged', async (t) => {
  const up = await startServer(t, () => {})
  const { client, logger } = makeClient(t, { url: up.origin, trusted: true })
  const controller = new AbortController()
  const reason = new Error('client went away')
  const pending = client.fetchDocument('left-pad', { signal: controller.signal })
  setTimeout(() => controller.abort(reason), 50)
  let thrown: unknown
  try { await pending } catch (e) { thrown = e }
  t.equal(thrown, reason)
  t.equal(logger.records.length, 0)
})

t.test('onChunk backpressure: a slow consumer keeps the reader paused', async (t) => {
  const total = 64 * 1024 * 1024
  const block = Buffer.alloc(64 * 1024, 0x61)
  let written = 0
  const up = await startServer(t, (_req, res) => {
    res.writeHead(200, { 'content-length': total })
    const pump = (): void => {
      while (written < total) {
        written += block.byteLength
        if (!res.write(block)) { res.once('drain', pump); return }
      }
      res.end()
    }
    pump()
  })
  const { client } = makeClient(t, { url: up.origin, trusted: true, maxResponseBytes: total })
  const controller = new AbortController()
  let calls = 0
  let release!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  let firstCall!: () => void
  const started = new Promise<void>((resolve) => { firstCall = resolve })
  const pending = client.fetchDocument('big', {
    signal: controller.signal,
    onChunk: async () => {
      calls++
      firstCall()
      await held
    },
  })
  pending.catch(() => {})
  await started
  // Give the sender every chance to run ahead; it must stay within socket and stream buffers.
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(calls, 1, 'no further chunk is delivered while onChunk is pending')
  t.ok(written < 16 * 1024 * 1024, `the sender was held back after ${written} of ${total} bytes`)
  release()
  controller.abort(new Error('done'))
  let thrown: unknown
  try { await pending } catch (e) { thrown = e }
  t.ok(thrown instanceof Error, 'the aborted read rejects')
})

t.test('a TLS handshake that never completes is a connect timeout', async (t) => {
  const { createServer } = await import('node:net')
  const sockets = new Set<import('node:net').Socket>()
  const silent = createServer((s) => { sockets.add(s) }) // accepts TCP, never speaks TLS
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    silent.close(() => resolve())
  }))
  const port = (silent.address() as import('node:net').AddressInfo).port
  const { client, counters } = makeClient(t, { url: `https://127.0.0.1:${port}/`, trusted: true, timeouts: { connectMs: 150 } })
  t.equal(await codeOf(client.fetchDocument('left-pad')), 'UPSTREAM_TIMEOUT')
  t.equal(counters.get('timeout'), 1)
})

t.test('close() lets an in-flight fetch finish, then refuses new ones', async (t) => {
  let answer!: () => void
  const up = await startServer(t, (_req, res) => { answer = () => res.end(DOC) })
  const { client } = makeClient(t, { url: up.origin, trusted: true })
  const inFlight = client.fetchDocument('left-pad')
  while (up.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  const closing = client.close()
  answer()
  const got = await inFlight
  t.equal(got.kind, 'document', 'the in-flight fetch completed')
  await closing
  t.equal(await codeOf(client.fetchDocument('left-pad')), 'UPSTREAM_UNAVAILABLE', 'a closed client sends nothing')
  t.equal(up.seen.length, 1)
})

t.test('a large document comes back in runs, not in the socket\'s pieces', async (t) => {
  const big = JSON.stringify({ name: 'x', filler: 'abcd'.repeat(1_000_000) })
  const up = await startServer(t, (_req, res) => { res.end(big) })
  const { client } = makeClient(t, { url: up.origin, trusted: true, maxResponseBytes: 8 * 1024 * 1024 })
  const seen: number[] = []
  const got = await client.fetchDocument('x', { onChunk: (c) => { seen.push(c.byteLength) } })
  if (got.kind !== 'document') return t.fail(got.kind)
  t.equal(text(got.chunks), big)
  t.ok(seen.length > got.chunks.length, `${seen.length} pieces read, ${got.chunks.length} kept`)
  for (const chunk of got.chunks.slice(0, -1)) t.ok(chunk.byteLength >= RUN_BYTES, `a run of ${chunk.byteLength} bytes`)
})

t.test('a metadata miss logs once per package per 15 minutes; the rest are counted, and the next line says how many', async (t) => {
  const up = await startServer(t, (_req, res) => { res.writeHead(404).end() })
  const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'))
  const { client, logger, counters } = makeClient(t, { url: up.origin, trusted: true, clock })
  const misses = (): Record<string, unknown>[] => logger.records.filter((r) => r.message === METADATA_MISS).map((r) => r.data)
  for (let i = 0; i < 5; i++) t.equal((await client.fetchDocument('absent-one')).kind, 'miss')
  t.equal((await client.fetchDocument('absent-two')).kind, 'miss')
  t.match(misses(), [{ package: 'absent-one', status: 404 }, { package: 'absent-two', status: 404 }], 'one line per package')
  t.equal(counters.snapshot()['upstream_status'], 6, 'every miss is counted')
  clock.advance(15 * 60_000 - 1)
  await client.fetchDocument('absent-one')
  t.equal(misses().length, 2, 'still within 15 minutes of its line')
  clock.advance(1)
  await client.fetchDocument('absent-one')
  t.equal(misses().length, 3, 'logged again once 15 minutes have passed')
  t.match(misses()[2], { package: 'absent-one', repeats: 5 }, 'the misses not logged since its last line')
  t.equal(misses()[0]?.['repeats'], undefined, 'a first line carries no repeats')
})
