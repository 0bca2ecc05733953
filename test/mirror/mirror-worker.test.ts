/**
 * One mirror job at a time against real registries (PEERS.md): a public
 * Verdaccio over https through the public leg's own client (egress policy
 * included) and a private Verdaccio as the mirror target. Idempotency,
 * collision, the size cap, a job without a digest, a refused publication,
 * the tarball-host policy, and the streamed base64 body; and the shared
 * mirror worker suite (mirror-worker.suite.ts) with both registries behind
 * fault relays.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { request } from 'undici'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import { JsTargetProtocol } from '../../engine/mirror/js-target-protocol.js'
import { MirrorTarget } from '../../engine/mirror/mirror-target.js'
import { MIRROR_COLLISION, MIRROR_PUBLISH_REFUSED, MirrorWorker } from '../../engine/mirror/mirror-worker.js'
import { MIRROR_TARGET_PAUSED } from '../../engine/mirror/target-pace.js'
import { waitFor as waitUntil } from './wait-for.js'
import { Base64Chunker } from '../../engine/mirror/publish-body.js'
import { BearerToken } from '../../engine/secret.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { startVerdaccio, type VerdaccioPeer } from '../../bench/peers/verdaccio.js'
import { encodePackageName } from '../../engine/npm/names.js'
import { FaultRelay } from '../peers/fault-relay.js'
import { mirrorWorkerSuite, SUITE_ARTIFACTS, suiteWorkerOptions, type Held, type MirrorSuiteAdapter } from './mirror-worker.suite.js'

interface Dist { integrity?: string, shasum?: string, tarball?: string }

const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
for (const name of ['idem', 'clash', 'huge', 'nodigest', 'refused', '@scope/scoped', 'charged', 'charged-later', ...SUITE_ARTIFACTS]) {
  await publishFixture(pub, { name, version: '1.0.0', files: { 'index.js': `module.exports = ${JSON.stringify(name)}\n`, 'pad.bin': name === 'huge' ? randomBytes(50_000) : Buffer.alloc(50_000, 3) } })
}
// The target already holds `clash@1.0.0`, with other bytes.
await publishFixture(priv, { name: 'clash', version: '1.0.0', files: { 'index.js': 'module.exports = "the private one"\n' } })
const token = new BearerToken(await priv.publisherToken())

const publicClient = new UpstreamClient({
  url: pub.url, trusted: false, caPem: pub.ca!.caPem, allowInternalRanges: ['127.0.0.0/8'],
  maxResponseBytes: 16 * 1024 * 1024, proxyId: 'mirror-test', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
})
t.teardown(() => publicClient.destroy())

function worker(options: { maxArtifactBytes?: number, token?: BearerToken } = {}): { worker: MirrorWorker, logger: RecordingLogger } {
  const logger = new RecordingLogger()
  const target = new MirrorTarget({ url: priv.url, token: options.token ?? token, maxDocumentBytes: 16 * 1024 * 1024 })
  t.teardown(() => target.close())
  return { worker: new MirrorWorker({ source: publicClient, target: new JsTargetProtocol(target), maxArtifactBytes: options.maxArtifactBytes ?? 64 * 1024 * 1024, logger, refusalPauseMs: 50 }), logger }
}

async function dist(peer: VerdaccioPeer, name: string): Promise<Dist | undefined> {
  const res = await request(`${peer.origin}/${name.replace('/', '%2f')}`, { dispatcher: peer.dispatcher })
  if (res.statusCode !== 200) { await res.body.dump(); return undefined }
  return ((await res.body.json()) as { versions?: Record<string, { dist?: Dist }> }).versions?.['1.0.0']?.dist
}

async function jobFor(name: string, override: Partial<MirrorJob> = {}): Promise<MirrorJob> {
  const d = await dist(pub, name)
  const filename = `${name.split('/').pop()!}-1.0.0.tgz`
  return { url: d!.tarball!, package: name, version: '1.0.0', filename, integrity: d!.integrity, shasum: d!.shasum, enqueuedAt: new Date().toISOString(), ...override }
}

t.test('the base64 chunker encodes across any chunk boundary like one call', async (t) => {
  const bytes = createHash('sha512').update('x').digest()
  for (const cut of [[1], [2], [3], [1, 2], [4, 5, 7], [63]]) {
    const chunker = new Base64Chunker()
    let out = ''
    let at = 0
    for (const size of cut) { out += chunker.push(bytes.subarray(at, at + size)); at += size }
    out += chunker.push(bytes.subarray(at)) + chunker.end()
    t.equal(out, bytes.toString('base64'), `cut ${cut.join(',')}`)
  }
})

t.test('mirrored once; the same job again is already present (at-least-once delivery)', async (t) => {
  const { worker: w } = worker()
  const job = await jobFor('idem')
  t.match(await w.process(job), { result: 'mirrored', disposition: 'delete' })
  t.equal((await dist(priv, 'idem'))?.integrity, job.integrity)
  t.match(await w.process(job), { result: 'already_present', disposition: 'delete' })
})

t.test('a scoped package is published under its scope', async (t) => {
  const { worker: w } = worker()
  const job = await jobFor('@scope/scoped')
  t.match(await w.process(job), { result: 'mirrored' })
  const held = await request(`${priv.origin}/@scope%2fscoped/-/scoped-1.0.0.tgz`)
  const bytes = Buffer.from(await held.body.arrayBuffer())
  t.equal(held.statusCode, 200, 'readable where the private leg asks for it')
  t.equal(`sha512-${createHash('sha512').update(bytes).digest('base64')}`, job.integrity)
})

t.test('the same version with another integrity is a collision: refused, logged with both digests, never overwritten', async (t) => {
  const { worker: w, logger } = worker()
  const before = await dist(priv, 'clash')
  const job = await jobFor('clash')
  t.not(before?.integrity, job.integrity)
  t.match(await w.process(job), { result: 'collision', disposition: 'leave' })
  const [line] = logger.find(MIRROR_COLLISION)
  t.match(line, { level: 'error', data: { job: { integrity: job.integrity }, held: { integrity: before?.integrity } } })
  t.equal((await dist(priv, 'clash'))?.integrity, before?.integrity, 'the target still holds its own')
})

t.test('an artifact over limits.maxArtifactBytes cannot succeed and is never published', async (t) => {
  // 50 kB of random bytes: incompressible, so the tarball is well over the cap.
  const { worker: w } = worker({ maxArtifactBytes: 1024 })
  t.match(await w.process(await jobFor('huge')), { result: 'too_large', disposition: 'leave' })
  t.equal(await dist(priv, 'huge'), undefined)
})

t.test('without a Content-Length the cap is enforced while streaming: the cut publication leaves nothing on the target', async (t) => {
  // The public registry again, behind a relay that sends every tarball chunked (no length to refuse up front).
  const ca = pub.ca!
  const relay = createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    const own = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`
    void request(`${pub.origin}${req.url ?? '/'}`, { dispatcher: pub.dispatcher }).then(async (upstream) => {
      res.statusCode = upstream.statusCode
      res.setHeader('content-type', String(upstream.headers['content-type'] ?? 'application/octet-stream'))
      if (!(req.url ?? '').includes('/-/')) {
        res.end((await upstream.body.text()).replaceAll(pub.origin, own))
        return
      }
      for await (const chunk of upstream.body) res.write(chunk)
      res.end()
    }, (error: unknown) => { res.destroy(error as Error) })
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => { relay.closeAllConnections(); relay.close(resolve) }))
  const origin = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`
  const source = new UpstreamClient({
    url: `${origin}/`, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'],
    maxResponseBytes: 16 * 1024 * 1024, proxyId: 'mirror-test', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
  })
  t.teardown(() => source.destroy())
  const seen = await request(`${origin}/huge/-/huge-1.0.0.tgz`, { dispatcher: pub.dispatcher })
  t.equal(seen.headers['content-length'], undefined, 'the relay sends no length')
  await seen.body.dump()

  const logger = new RecordingLogger()
  const target = new MirrorTarget({ url: priv.url, token, maxDocumentBytes: 16 * 1024 * 1024 })
  t.teardown(() => target.close())
  const w = new MirrorWorker({ source, target: new JsTargetProtocol(target), maxArtifactBytes: 1024, logger })
  const job = await jobFor('huge', {})
  t.match(await w.process({ ...job, url: job.url.replace(pub.origin, origin) }), { result: 'too_large', disposition: 'leave' })
  t.match(logger.records.find((r) => r.data['result'] === 'too_large'), { level: 'warn', data: { limit: 1024 } })
  t.equal(await dist(priv, 'huge'), undefined, 'Verdaccio holds nothing')
})

t.test('a job without a usable digest cannot succeed', async (t) => {
  const { worker: w } = worker()
  t.match(await w.process(await jobFor('nodigest', { integrity: 'md5-AAAA', shasum: undefined })), { result: 'no_digest', disposition: 'leave' })
  t.equal(await dist(priv, 'nodigest'), undefined)
})

t.test('a credential the target refuses holds the job like an outage: never refused, never logged', async (t) => {
  const { worker: w, logger } = worker({ token: new BearerToken('not-a-token') })
  const controller = new AbortController()
  const running = w.process(await jobFor('refused'), controller.signal)
  await waitUntil(() => logger.find(MIRROR_TARGET_PAUSED).length === 1, 'the target is paused')
  controller.abort(new Error('cancelled by the test'))
  await t.rejects(running, { message: 'cancelled by the test' })
  t.match(logger.find(MIRROR_TARGET_PAUSED), [{ level: 'warn', data: { cause: /the target refused the mirror's credential/ } }])
  t.same(logger.find(MIRROR_PUBLISH_REFUSED), [], 'not dead-lettered job by job')
  t.notMatch(JSON.stringify(logger.records), /not-a-token/, 'the credential is never logged')
})

t.test('the authoritative URL passes the tarball-host policy: another port is refused', async (t) => {
  const { worker: w } = worker()
  const job = await jobFor('refused')
  const elsewhere = new URL(job.url)
  elsewhere.port = String(priv.port)
  t.match(await w.process({ ...job, url: elsewhere.href }), { result: 'upstream_refused', disposition: 'leave', reason: 'TARBALL_HOST_REFUSED' })
})

t.test('embedded: both document reads are charged to the proxy\'s memory gate, and every charge returns', async (t) => {
  const logger = new RecordingLogger()
  const target = new MirrorTarget({ url: priv.url, token, maxDocumentBytes: 16 * 1024 * 1024 })
  t.teardown(() => target.close())
  const gate = new AdmissionGate({ budgetBytes: 64 * 1024 * 1024, maxInFlight: 4, waitingRoom: 4 })
  let peak = 0
  const memory = {
    enter: async (signal?: AbortSignal) => {
      const admission = await gate.enter(signal)
      const charge = admission.charge.bind(admission)
      const tryCharge = admission.tryCharge.bind(admission)
      admission.tryCharge = (bytes: number) => { const ok = tryCharge(bytes); peak = Math.max(peak, gate.chargedBytes); return ok }
      admission.charge = (bytes, options) => charge(bytes, options).then(() => { peak = Math.max(peak, gate.chargedBytes) })
      return admission
    },
  }
  const w = new MirrorWorker({ source: publicClient, target: new JsTargetProtocol(target), maxArtifactBytes: 64 * 1024 * 1024, logger, memory })
  const job = await jobFor('charged')
  t.match(await w.process(job), { result: 'mirrored' })
  t.ok(peak > 1024 * 1024, `the reads were charged beyond the entry step (peak ${peak} bytes)`)
  t.equal(gate.chargedBytes, 0, 'every charge returned after the job')

  // A gate that cannot admit: the job waits out its window (transient), nothing is read or published.
  const full = new AdmissionGate({ budgetBytes: 0, maxInFlight: 1, waitingRoom: 0 })
  const held = await full.enter()
  t.teardown(() => held.release())
  const shed = new MirrorWorker({ source: publicClient, target: new JsTargetProtocol(target), maxArtifactBytes: 64 * 1024 * 1024, logger, memory: full })
  const other = await jobFor('charged-later')
  t.match(await shed.process(other), { result: 'retried', disposition: 'leave' })
  t.equal(await dist(priv, 'charged-later'), undefined, 'nothing published while the gate sheds')
})

t.test('the shared mirror worker suite: js, Verdaccio to Verdaccio', async (t) => {
  const upstream = await FaultRelay.start({ peer: pub.origin, dispatcher: pub.dispatcher, tls: { key: pub.ca!.keyPem, cert: pub.ca!.certPem }, rewrite: true })
  const targetRelay = await FaultRelay.start({ peer: priv.origin })
  t.teardown(async () => { await upstream.stop(); await targetRelay.stop() })
  const source = new UpstreamClient({
    url: `${upstream.origin}/`, trusted: false, caPem: pub.ca!.caPem, allowInternalRanges: ['127.0.0.0/8'],
    maxResponseBytes: 16 * 1024 * 1024, proxyId: 'mirror-suite', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
  })
  t.teardown(() => source.destroy())
  const documentPath = (job: MirrorJob): string => `/${encodePackageName(job.package)}`
  const adapter: MirrorSuiteAdapter = {
    mount: 'js',
    upstream,
    target: targetRelay,
    secret: token.reveal(),
    job: async (name) => {
      const job = await jobFor(name)
      return { ...job, url: job.url.replace(pub.origin, upstream.origin) }
    },
    worker: (t, options = {}) => {
      const logger = new RecordingLogger()
      const target = new MirrorTarget({ url: `${targetRelay.origin}/`, token, maxDocumentBytes: 16 * 1024 * 1024 })
      t.teardown(() => target.close())
      return { worker: new MirrorWorker({ source, target: new JsTargetProtocol(target), ...suiteWorkerOptions(options), logger }), logger }
    },
    held: async (job): Promise<Held> => {
      const held = await dist(priv, job.package)
      if (held?.integrity === undefined) return 'absent'
      return held.integrity === job.integrity ? 'same' : 'other'
    },
    holdOther: async (job) => {
      await publishFixture(priv, { name: job.package, version: job.version, files: { 'index.js': 'module.exports = "the private one"\n' } })
    },
    lookupRule: (job) => ({ method: 'GET', path: documentPath(job) }),
    sendRule: (job) => ({ method: 'PUT', path: documentPath(job) }),
  }
  mirrorWorkerSuite(t, adapter)
})
