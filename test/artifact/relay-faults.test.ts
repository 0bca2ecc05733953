/**
 * The streaming relay under faults and backpressure (SPEC.md 4.4; STYLE.md
 * rule 3), through the artifact route over real HTTP: a slow client gets
 * every byte verbatim, with and without a content-length; a client that
 * leaves mid-body closes the upstream request; an upstream that resets
 * mid-body cuts the client's connection rather than ending a short 200; an
 * upstream that fails before its first byte gets the serve error model.
 */
import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { makeClient, startServer } from '../upstream/servers.js'
import { ARTIFACT_UPSTREAM_FAILED } from '../../server/routes/artifact-answers.js'
import type { SelectedArtifact } from '../../server/routes/artifact-route.js'
import { startArtifactRoute } from './harness.js'

const ca = await makeTestCa()
t.teardown(() => ca.remove())

const MIB = 1024 * 1024
const digest = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')
const integrityOf = (bytes: Uint8Array): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`

/** Promise.withResolvers is Node 22; the machines run Node 20. */
function deferred(): { promise: Promise<void>, resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => { resolve = r })
  return { promise, resolve }
}

function selected(tarball: string, body: Uint8Array): SelectedArtifact {
  return { version: '1.0.0', filename: 'a-1.0.0.tgz', tarball, integrity: integrityOf(body), shasum: undefined, publishedAt: undefined }
}

t.test('a slow client gets every byte verbatim, with and without a content-length', async (t) => {
  const body = randomBytes(12 * MIB)
  const up = await startServer(t, (req, res) => {
    const chunked = req.url?.includes('chunked') === true
    res.writeHead(200, chunked ? { 'content-type': 'application/octet-stream' } : { 'content-length': body.byteLength })
    res.end(body)
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async (_n, file) => selected(`${up.origin}/a/-/${file}`, body) })
  for (const file of ['a-1.0.0.tgz', 'chunked-1.0.0.tgz']) {
    const res = await request(`${route.origin}/js/a/-/${file}`, { dispatcher: route.dispatcher })
    t.equal(res.statusCode, 200)
    const hash = createHash('sha256')
    let received = 0
    let chunks = 0
    for await (const chunk of res.body) {
      hash.update(chunk as Uint8Array)
      received += (chunk as Uint8Array).byteLength
      // Stall early so the socket buffers fill and the relay has to pause and resume.
      if (chunks++ === 2) await sleep(300)
    }
    t.equal(received, body.byteLength, `${file}: every byte`)
    t.equal(hash.digest('hex'), digest(body), `${file}: verbatim`)
  }
  await route.enqueueCalls(2)
  t.equal(route.jobs.length, 2)
})

t.test('a client that leaves mid-body closes the upstream request', async (t) => {
  const body = randomBytes(4 * MIB)
  let upstreamRequest: IncomingMessage | undefined
  const upstreamClosed = deferred()
  const up = await startServer(t, (req, res) => {
    upstreamRequest = req
    res.on('close', () => upstreamClosed.resolve())
    res.writeHead(200, { 'content-length': body.byteLength })
    // Slowly, so the upstream is still sending when the client leaves.
    let offset = 0
    const pump = (): void => {
      if (res.destroyed || offset >= body.byteLength) return
      res.write(body.subarray(offset, offset + 64 * 1024))
      offset += 64 * 1024
      setTimeout(pump, 20)
    }
    pump()
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`, body) })
  const controller = new AbortController()
  const res = await request(`${route.origin}/js/a/-/a-1.0.0.tgz`, { dispatcher: route.dispatcher, signal: controller.signal })
  t.equal(res.statusCode, 200)
  for await (const _ of res.body) break // one chunk, then leave
  controller.abort()
  await upstreamClosed.promise
  t.ok(upstreamRequest !== undefined)
  t.ok(upstreamRequest?.destroyed, 'the upstream request was torn down')
  await sleep(20)
  t.equal(route.counters.snapshot().relays.public.client_gone, 1)
  t.equal(route.jobs.length, 0, 'no job for an unfinished relay')
})

async function readCut(t: Test, url: string, dispatcher: import('undici').Dispatcher, size: number): Promise<void> {
  let failed: unknown
  let received = 0
  try {
    const res = await request(url, { dispatcher })
    t.equal(res.statusCode, 200, 'the status left with the first byte')
    for await (const chunk of res.body) received += (chunk as Uint8Array).byteLength
  } catch (error) {
    failed = error
  }
  t.ok(failed instanceof Error, 'the client sees a failed body, not a complete short 200')
  t.ok(received < size)
}

t.test('an upstream that resets mid-body cuts the client connection', async (t) => {
  const body = randomBytes(2 * MIB)
  // The misbehaving upstream's TCP reset, on the private leg (its reset needs plain TCP).
  const priv = await startMisbehavingUpstream()
  t.teardown(() => priv.stop())
  priv.script('/a/-/a-1.0.0.tgz', { kind: 'reset-mid-body', body, headers: { 'content-type': 'application/octet-stream' }, afterBytes: 512 * 1024 })
  const privateRoute = await startArtifactRoute(t, { privateClient: makeClient(t, { url: priv.origin, trusted: true }).client })
  await readCut(t, `${privateRoute.origin}/js/a/-/a-1.0.0.tgz`, privateRoute.dispatcher, body.byteLength)
  await sleep(20)
  t.equal(privateRoute.counters.snapshot().relays.private.cut, 1)

  // The public leg over TLS: the upstream's connection dies half way through.
  const up = await startServer(t, (req, res) => {
    res.writeHead(200, { 'content-length': body.byteLength })
    res.write(body.subarray(0, 512 * 1024), () => { setTimeout(() => req.socket.destroy(), 20) })
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`, body) })
  await readCut(t, `${route.origin}/js/a/-/a-1.0.0.tgz`, route.dispatcher, body.byteLength)
  await sleep(20)
  t.equal(route.counters.snapshot().relays.public.cut, 1)
  const log = route.logger.find(ARTIFACT_UPSTREAM_FAILED)[0]
  t.equal(log?.level, 'error')
  t.equal(log?.data['afterFirstByte'], true)
  t.equal(route.jobs.length, 0)
})

t.test('an upstream that fails before its first byte gets the serve error model', async (t) => {
  const up = await startServer(t, (req, res) => {
    // Headers promise a body, then the connection dies before any of it.
    res.writeHead(200, { 'content-length': 1000 })
    res.flushHeaders()
    setTimeout(() => req.socket.destroy(), 20)
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`, Buffer.alloc(1)) })
  const res = await route.get('/js/a/-/a-1.0.0.tgz')
  t.equal(res.status, 503)
  t.ok(res.headers['retry-after'])
  t.type(JSON.parse(res.body.toString()).error, 'string')
  t.equal(route.counters.snapshot().relays.public.failed, 1)

  // No answer at all (nothing listens): 503 too.
  const closed = await startServer(t, () => {}, ca)
  const port = closed.port
  await new Promise<void>((resolve) => closed.server.close(() => resolve()))
  const gone = makeClient(t, { url: `https://127.0.0.1:${port}/`, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client
  const down = await startArtifactRoute(t, { publicClient: gone, selectVersion: async () => selected(`https://127.0.0.1:${port}/a/-/a-1.0.0.tgz`, Buffer.alloc(1)) })
  const unreachable = await down.get('/js/a/-/a-1.0.0.tgz')
  t.equal(unreachable.status, 503)
  t.ok(unreachable.headers['retry-after'])
  t.equal(down.logger.find(ARTIFACT_UPSTREAM_FAILED)[0]?.level, 'error')
})

t.test('a client that leaves while the upstream has not answered yet aborts that request', async (t) => {
  let seen: IncomingMessage | undefined
  const closedUpstream = deferred()
  const up = await startServer(t, (req) => {
    seen = req
    req.socket.once('close', () => closedUpstream.resolve())
  }, ca) // never answers
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`, Buffer.alloc(1)) })
  const controller = new AbortController()
  const pending = request(`${route.origin}/js/a/-/a-1.0.0.tgz`, { dispatcher: route.dispatcher, signal: controller.signal }).catch((e: unknown) => e)
  while (seen === undefined) await sleep(10)
  controller.abort()
  await pending
  await closedUpstream.promise
  t.ok(seen.socket.destroyed, 'the upstream socket closed')
  await sleep(20)
  t.equal(route.counters.snapshot().relays.public.delivered, 0)
})
