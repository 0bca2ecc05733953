/**
 * The artifact route against real local upstreams (node http and https
 * servers, the https ones with a test CA): both legs, the gate, the integrity
 * floor, the tarball-host policy and the egress guard, conditional requests,
 * HEAD, the relay judgement and the mirror job (SPEC.md 4.4, 5, 6.1).
 */
import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LookupAddress } from 'node:dns'
import { BearerToken } from '../../engine/secret.js'
import { ServiceError } from '../../engine/errors.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { makeClient, startServer } from '../upstream/servers.js'
import type { SelectedArtifact } from '../../server/routes/artifact-route.js'
import { ARTIFACT_RELAY_ANOMALOUS, MIRROR_ENQUEUE_FAILED } from '../../server/routes/public-leg.js'
import { decision, startArtifactRoute } from './harness.js'

const ca = await makeTestCa()
t.teardown(() => ca.remove())

const SHA512 = (bytes: Uint8Array): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`
const TARBALL = randomBytes(200_000)

function selected(tarball: string, extra: Partial<SelectedArtifact> = {}): SelectedArtifact {
  return { version: '1.0.0', filename: 'a-1.0.0.tgz', tarball, integrity: SHA512(TARBALL), shasum: undefined, publishedAt: new Date('2020-01-01T00:00:00Z'), ...extra }
}

/** An https public upstream serving TARBALL at /a/-/a-1.0.0.tgz with an ETag. */
async function publicUpstream(t: Test, body: Buffer = TARBALL) {
  return startServer(t, (req, res) => {
    if (req.headers['if-none-match'] === '"v1"') { res.writeHead(304, { etag: '"v1"' }); res.end(); return }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.byteLength, etag: '"v1"', 'set-cookie': 'a=b' })
    res.end(req.method === 'HEAD' ? undefined : body)
  }, ca)
}

t.test('public leg: a clean GET relays the bytes and enqueues exactly one job; HEAD and 304 enqueue none', async (t) => {
  const up = await publicUpstream(t)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const tarball = `${up.origin}/a/-/a-1.0.0.tgz`
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async () => selected(tarball) })

  const got = await route.get('/js/a/-/a-1.0.0.tgz', { authorization: 'Bearer client-secret' })
  t.equal(got.status, 200)
  t.ok(got.body.equals(TARBALL), 'bytes verbatim')
  t.equal(got.headers['content-type'], 'application/octet-stream')
  t.equal(got.headers['content-length'], String(TARBALL.byteLength))
  t.equal(got.headers.etag, '"v1"', 'the upstream ETag, none of our own')
  t.notOk(got.headers['set-cookie'], 'unsafe headers are not relayed')
  t.equal(up.seen[0]?.headers.authorization, undefined, 'the public leg is anonymous')
  await route.enqueueCalls(1)
  t.equal(route.jobs.length, 1)
  t.match(route.jobs[0], { url: tarball, package: 'a', version: '1.0.0', filename: 'a-1.0.0.tgz', integrity: SHA512(TARBALL), shasum: undefined })
  t.equal(route.observed.length, 1, 'the decision was observed')
  t.same(route.observed[0]?.facts, { ecosystem: 'js', name: 'a', version: '1.0.0', publishedAt: new Date('2020-01-01T00:00:00Z') })

  const head = await route.head('/js/a/-/a-1.0.0.tgz')
  t.equal(head.status, 200)
  t.equal(head.headers['content-length'], String(TARBALL.byteLength))
  t.equal(head.body.byteLength, 0)
  t.equal(up.seen[1]?.method, 'HEAD', 'the upstream request is a HEAD')

  const notModified = await route.get('/js/a/-/a-1.0.0.tgz', { 'if-none-match': '"v1"', 'if-modified-since': 'Wed, 01 Jan 2025 00:00:00 GMT' })
  t.equal(notModified.status, 304)
  t.equal(notModified.body.byteLength, 0)
  t.equal(up.seen[2]?.headers['if-none-match'], '"v1"')
  t.equal(up.seen[2]?.headers['if-modified-since'], 'Wed, 01 Jan 2025 00:00:00 GMT')

  // One more clean GET after them proves no job was pending from HEAD or 304.
  await route.get('/js/a/-/a-1.0.0.tgz')
  await route.enqueueCalls(2)
  t.equal(route.jobs.length, 2, 'HEAD and 304 made no job')
  t.equal(route.counters.snapshot().enqueued, 2)
  t.same(route.counters.snapshot().relays.public, { delivered: 2, bodiless: 2, client_gone: 0, cut: 0, failed: 0, refused: 0, miss: 0 })
})

t.test('the gate: deny is 403 on GET and HEAD; unavailable and expired are 503 with Retry-After', async (t) => {
  const up = await publicUpstream(t)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const verdicts: Record<string, ReturnType<typeof decision>> = {
    '1.0.0': decision('deny', { rule: 'DenyIdentity', reason: 'identity' }),
    '2.0.0': decision('unavailable', { reason: 'no_database' }),
    '3.0.0': decision('expired', { reason: 'expired', ageSeconds: 700_000, maxAgeSeconds: 518_400 }),
  }
  const route = await startArtifactRoute(t, {
    publicClient: client,
    selectVersion: async (_name, file) => selected(`${up.origin}/a/-/${file}`, { version: /a-(.*)\.tgz/.exec(file)?.[1] ?? '' }),
    evaluate: (facts) => verdicts[facts.version] ?? decision('admit'),
  })
  const denied = await route.get('/js/a/-/a-1.0.0.tgz')
  t.equal(denied.status, 403)
  t.type(JSON.parse(denied.body.toString()).error, 'string')
  const deniedHead = await route.head('/js/a/-/a-1.0.0.tgz')
  t.equal(deniedHead.status, 403)
  t.equal(deniedHead.body.byteLength, 0)
  const unavailable = await route.get('/js/a/-/a-2.0.0.tgz')
  t.equal(unavailable.status, 503)
  t.ok(unavailable.headers['retry-after'])
  const expired = await route.get('/js/a/-/a-3.0.0.tgz')
  t.equal(expired.status, 503)
  t.ok(expired.headers['retry-after'])
  t.match(JSON.parse(expired.body.toString()).error, /age 700000 s, maximum 518400 s/)
  t.equal(up.seen.length, 0, 'no refused artifact was requested upstream')
  t.equal(route.observed.length, 4, 'every public decision is observed')
  await sleep(20)
  t.equal(route.jobs.length, 0)
})

t.test('integrity: missing or below the floor is 403 before any upstream request', async (t) => {
  const up = await publicUpstream(t)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const shasum = createHash('sha1').update(TARBALL).digest('hex')
  const sha256 = `sha256-${createHash('sha256').update(TARBALL).digest('base64')}`
  const byFile: Record<string, Partial<SelectedArtifact>> = {
    'a-1.0.0.tgz': { integrity: undefined, shasum: undefined },
    'a-2.0.0.tgz': { integrity: undefined, shasum },
    'a-3.0.0.tgz': { integrity: sha256, shasum },
  }
  const tarball = `${up.origin}/a/-/a-1.0.0.tgz`
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async (_n, file) => selected(tarball, byFile[file]) })
  for (const file of Object.keys(byFile)) {
    const res = await route.get(`/js/a/-/${file}`)
    t.equal(res.status, 403, file)
  }
  t.equal(up.seen.length, 0)
  const lowFloor = await startArtifactRoute(t, { publicClient: client, integrityFloor: 'sha1', selectVersion: async (_n, file) => selected(tarball, byFile[file]) })
  t.equal((await lowFloor.get('/js/a/-/a-2.0.0.tgz')).status, 200, 'a sha1 floor admits a shasum')
  await lowFloor.enqueueCalls(1)
  t.match(lowFloor.jobs[0], { integrity: undefined, shasum })
})

t.test('tarball-host policy and egress guard', async (t) => {
  const up = await publicUpstream(t)
  const other = await publicUpstream(t)
  const strict = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client
  const respecting = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], respectUpstreamTarballHost: true }).client
  const foreign = `${other.origin}/a/-/a-1.0.0.tgz`
  const refused = await startArtifactRoute(t, { publicClient: strict, selectVersion: async () => selected(foreign) })
  t.equal((await refused.get('/js/a/-/a-1.0.0.tgz')).status, 403, 'another port is refused by default')
  t.equal((await refused.head('/js/a/-/a-1.0.0.tgz')).status, 403, 'HEAD passes the same check')
  t.equal(other.seen.length, 0)
  const admitted = await startArtifactRoute(t, { publicClient: respecting, selectVersion: async () => selected(foreign) })
  const res = await admitted.get('/js/a/-/a-1.0.0.tgz')
  t.equal(res.status, 200, 'admitted when the policy respects the upstream tarball host')
  t.ok(res.body.equals(TARBALL))
  t.equal(other.seen.length, 1)

  // A public name that resolves to loopback, with no internal-range exemption.
  const resolve = ((_host: string, _opts: unknown, cb: (err: null, addresses: LookupAddress[]) => void) => {
    cb(null, [{ address: '127.0.0.1', family: 4 }])
  }) as unknown as typeof import('node:dns').lookup
  const guarded = makeClient(t, { url: `https://localhost:${up.port}/`, trusted: false, caPem: ca.caPem, resolve }).client
  const internal = await startArtifactRoute(t, { publicClient: guarded, selectVersion: async () => selected(`https://localhost:${up.port}/a/-/a-1.0.0.tgz`) })
  const before = up.seen.length
  const answer = await internal.get('/js/a/-/a-1.0.0.tgz')
  t.equal(answer.status, 502, 'a name resolving to an internal address is refused as a configuration problem')
  t.match(JSON.parse(answer.body.toString()).error, /^the upstream host localhost resolves to 127\.0\.0\.1, in the internal range 127\.0\.0\.0\/8, .*allowInternalRanges$/,
    'the envelope names the host, the address, the range and the setting')
  t.equal(up.seen.length, before, 'no request reached it')
  t.equal(refused.counters.snapshot().relays.public.refused, 2)
})

t.test('bad names are 404 without any upstream contact', async (t) => {
  const priv = await startServer(t, (_req, res) => { res.end('x') })
  const up = await publicUpstream(t)
  const route = await startArtifactRoute(t, {
    privateClient: makeClient(t, { url: priv.origin, trusted: true }).client,
    publicClient: makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client,
    selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`),
  })
  for (const path of [
    '/js/a/-/a-1.0.0.zip', '/js/a/-/..%2fsecret.tgz', '/js/a/-/%2e%2e.tgz', '/js/a/-/.hidden.tgz',
    '/js/_private/-/a-1.0.0.tgz', '/js/a%20b/-/a-1.0.0.tgz', '/js/@scope%2f..%2fx/-/a.tgz', '/js/a/-/a%00.tgz',
  ]) {
    const res = await route.get(path)
    t.equal(res.status, 404, path)
    t.same(Object.keys(JSON.parse(res.body.toString())), ['error'])
    t.equal((await route.head(path)).status, 404, `HEAD ${path}`)
  }
  t.equal(priv.seen.length, 0)
  t.equal(up.seen.length, 0)
  t.equal(route.selects(), 0)
})

t.test('private leg: bearer forwarded, hit streamed, misses fall through to the public leg', async (t) => {
  const privateBody = randomBytes(70_000)
  const priv = await startServer(t, (req, res) => {
    if (req.url?.includes('moved')) { res.writeHead(302, { location: '/a/-/a-1.0.0.tgz' }); res.end(); return }
    if (req.url?.includes('missing')) { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{}'); return }
    if (req.headers['if-none-match'] === '"p1"') { res.writeHead(304, { etag: '"p1"' }); res.end(); return }
    res.writeHead(200, { 'content-length': privateBody.byteLength, etag: '"p1"' })
    res.end(req.method === 'HEAD' ? undefined : privateBody)
  })
  const up = await publicUpstream(t)
  const route = await startArtifactRoute(t, {
    privateClient: makeClient(t, { url: `${priv.origin}/npm/`, trusted: true, token: new BearerToken('service-token') }).client,
    publicClient: makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client,
    selectVersion: async (_n, file) => selected(`${up.origin}/a/-/a-1.0.0.tgz`, { filename: file }),
  })
  const hit = await route.get('/js/@acme%2Fa/-/a-1.0.0.tgz', { authorization: 'Bearer client-token' })
  t.equal(hit.status, 200)
  t.ok(hit.body.equals(privateBody))
  t.equal(hit.headers['content-type'], 'application/octet-stream', 'the default content type')
  t.equal(priv.seen[0]?.url, '/npm/@acme%2fa/-/a-1.0.0.tgz', 'the conventional location by the requested file name')
  t.equal(priv.seen[0]?.headers.authorization, 'Bearer client-token', 'the client credential as a bearer token')
  await route.get('/js/@acme%2Fa/-/a-1.0.0.tgz', { authorization: 'Basic dXNlcjpwdw==' })
  t.equal(priv.seen[1]?.headers.authorization, 'Bearer service-token', 'else the private client\'s own')
  const cond = await route.get('/js/@acme%2Fa/-/a-1.0.0.tgz', { 'if-none-match': '"p1"' })
  t.equal(cond.status, 304, 'a private 304 answers')
  t.equal(priv.seen[2]?.headers['if-none-match'], '"p1"')
  const head = await route.head('/js/@acme%2Fa/-/a-1.0.0.tgz')
  t.equal(head.status, 200)
  t.equal(head.headers['content-length'], String(privateBody.byteLength))
  t.equal(up.seen.length, 0, 'private hits never reach the public upstream')

  const missing = await route.get('/js/a/-/missing-1.0.0.tgz')
  t.equal(missing.status, 200, 'a private 404 falls through')
  t.ok(missing.body.equals(TARBALL))
  const moved = await route.get('/js/a/-/moved-1.0.0.tgz')
  t.equal(moved.status, 200, 'a private redirect is a miss, never followed')
  t.notOk(priv.seen.some((s) => s.url === '/a/-/a-1.0.0.tgz'), 'the location was not requested')
  t.equal(up.seen.length, 2)
  t.notOk(up.seen.some((s) => s.headers.authorization !== undefined), 'no credential on the public leg')
  await route.enqueueCalls(2)
  t.equal(route.jobs.length, 2, 'only the public relays enqueue')
  const snapshot = route.counters.snapshot()
  t.equal(snapshot.relays.private.delivered, 2)
  t.equal(snapshot.relays.private.miss, 2)

  // A private upstream that does not answer at all is a miss too.
  const gone = await startServer(t, () => {})
  const gonePort = gone.port
  await new Promise<void>((resolve) => gone.server.close(() => resolve()))
  const down = await startArtifactRoute(t, {
    privateClient: makeClient(t, { url: `http://127.0.0.1:${gonePort}/`, trusted: true }).client,
    publicClient: makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] }).client,
    selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`),
  })
  t.equal((await down.get('/js/a/-/a-1.0.0.tgz')).status, 200)
})

t.test('relay judgement: non-success mapped and counted, a non-artifact success relayed without a job', async (t) => {
  const up = await startServer(t, (req, res) => {
    if (req.url?.includes('missing')) { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{"error":"nope"}'); return }
    if (req.url?.includes('broken')) { res.writeHead(502); res.end('bad gateway'); return }
    if (req.url?.includes('html')) { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); res.end('<html>login</html>'); return }
    if (req.url?.includes('moved')) { res.writeHead(301, { location: '/x' }); res.end(); return }
    res.writeHead(200); res.end('ok')
  }, ca)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, { publicClient: client, selectVersion: async (_n, file) => selected(`${up.origin}/a/-/${file}`) })
  const missing = await route.get('/js/a/-/missing.tgz')
  t.equal(missing.status, 404, 'a forwarded miss')
  const broken = await route.get('/js/a/-/broken.tgz')
  t.equal(broken.status, 503)
  t.ok(broken.headers['retry-after'])
  t.equal((await route.get('/js/a/-/moved.tgz')).status, 500, 'a redirect is never followed')
  const html = await route.get('/js/a/-/html.tgz')
  t.equal(html.status, 200)
  t.equal(html.body.toString(), '<html>login</html>', 'the body is verbatim')
  t.equal(html.headers['content-type'], 'text/html; charset=utf-8')
  const anomalies = route.logger.find(ARTIFACT_RELAY_ANOMALOUS)
  t.equal(anomalies.length, 4)
  t.ok(anomalies.every((r) => r.level === 'warn'))
  t.same(route.counters.snapshot().anomalous, { status: 3, content_type: 1 })
  await sleep(20)
  t.equal(route.jobs.length, 0, 'no job for any of them')
  const none = await startArtifactRoute(t, { selectVersion: async () => undefined, publicClient: client })
  t.equal((await none.get('/js/a/-/a-9.9.9.tgz')).status, 404, 'no such version upstream')
  const failing = await startArtifactRoute(t, {
    publicClient: client,
    selectVersion: async () => { throw new ServiceError('UPSTREAM_UNAVAILABLE') },
  })
  const unavailable = await failing.get('/js/a/-/a-1.0.0.tgz')
  t.equal(unavailable.status, 503)
  t.ok(unavailable.headers['retry-after'])
})

t.test('an enqueue failure is logged and counted and leaves the response intact', async (t) => {
  const up = await publicUpstream(t)
  const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
  const route = await startArtifactRoute(t, {
    publicClient: client,
    selectVersion: async () => selected(`${up.origin}/a/-/a-1.0.0.tgz`),
    enqueue: async () => { throw new ServiceError('QUEUE_FAILURE') },
  })
  const res = await route.get('/js/a/-/a-1.0.0.tgz')
  t.equal(res.status, 200)
  t.ok(res.body.equals(TARBALL))
  await route.enqueueCalls(1)
  await sleep(10)
  t.equal(route.counters.snapshot().enqueueFailures, 1)
  t.equal(route.logger.find(MIRROR_ENQUEUE_FAILED)[0]?.level, 'warn')
})
