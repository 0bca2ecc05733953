/**
 * One `py` mirror job at a time (the mirror pipeline over
 * engine/mirror/py-target-protocol.ts) against real peers: a PEP 691
 * fixture index over https through the public leg's own client (egress
 * policy included) and the fixture upload index
 * (test/peers/py-upload-index.ts) as the target. The paths the end-to-end
 * test (py-mirror.test.ts) does not reach: the size cap, a job without a
 * sha256, a refused credential, the tarball-host policy, and a target that
 * answers 409 `File already exists` after a lookup that missed it (same
 * bytes: already present; other bytes: a collision); and the shared mirror
 * worker suite (mirror-worker.suite.ts) with both peers behind fault relays.
 */
import t, { type Test } from 'tap'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import { MIRROR_COLLISION, MIRROR_PUBLISH_REFUSED, MirrorWorker } from '../../engine/mirror/mirror-worker.js'
import { PyTargetProtocol } from '../../engine/mirror/py-target-protocol.js'
import { MIRROR_TARGET_PAUSED } from '../../engine/mirror/target-pace.js'
import { PyUploadTarget, type TargetFile } from '../../engine/mirror/py-upload-target.js'
import { BearerToken } from '../../engine/secret.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { startUploadIndex } from '../peers/py-upload-index.js'
import { startFixtureIndex } from '../pypi/fixture-index.js'
import { Agent } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
import { FaultRelay } from '../peers/fault-relay.js'
import { mirrorWorkerSuite, SUITE_ARTIFACTS, suiteWorkerOptions, type Held, type MirrorSuiteAdapter } from './mirror-worker.suite.js'
import { waitFor as waitUntil } from './wait-for.js'

const TOKEN = 'worker-token'
const ca = await makeTestCa()
t.teardown(() => ca.remove())
const pub = await startFixtureIndex(t, {
  mode: 'json', https: ca,
  projects: [{ name: 'demo', releases: [{ version: '1.0.0' }, { version: '2.0.0' }] }, ...SUITE_ARTIFACTS.map((name) => ({ name, releases: [{ version: '1.0.0' }] }))],
})
const publicClient = new UpstreamClient({
  url: pub.simpleUrl, trusted: false, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'],
  maxResponseBytes: 16 * 1024 * 1024, proxyId: 'py-mirror-test', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
})
t.teardown(() => publicClient.destroy())

function jobFor(filename: string, override: Partial<MirrorJob> = {}): MirrorJob {
  const dist = pub.dist(filename)
  return {
    mount: 'py', url: dist.url, package: dist.project, version: dist.version, filename,
    integrity: `sha256-${Buffer.from(dist.sha256, 'hex').toString('base64')}`, shasum: undefined, coreMetadata: true,
    enqueuedAt: new Date().toISOString(), ...override,
  }
}

async function setup(t: Test, options: { token?: string, maxArtifactBytes?: number, missFirstLookup?: boolean } = {}) {
  const index = await startUploadIndex(t, { token: TOKEN })
  const real = new PyUploadTarget({ url: index.url, token: new BearerToken(options.token ?? TOKEN), maxDocumentBytes: 1024 * 1024 })
  t.teardown(() => real.close())
  let lookups = 0
  // A lookup that misses the file once: another worker uploading it at the same moment.
  const target = options.missFirstLookup !== true ? real : {
    authority: real.authority,
    upload: real.upload.bind(real),
    lookup: async (project: string, filename: string, signal?: AbortSignal): Promise<TargetFile> => (lookups++ === 0 ? { kind: 'absent' } : real.lookup(project, filename, signal)),
  }
  const logger = new RecordingLogger()
  const worker = new MirrorWorker({ source: publicClient, target: new PyTargetProtocol(target), maxArtifactBytes: options.maxArtifactBytes ?? 16 * 1024 * 1024, logger, refusalPauseMs: 50 })
  return { index, worker, logger }
}

const signal = new AbortController().signal

t.test('larger than limits.maxArtifactBytes: too_large, nothing uploaded', async (t) => {
  const { index, worker } = await setup(t, { maxArtifactBytes: 100 })
  const outcome = await worker.process(jobFor('demo-1.0.0-py3-none-any.whl'), signal)
  t.same(outcome, { result: 'too_large', disposition: 'leave', reason: 'the artifact exceeds 100 bytes' })
  t.equal(index.files.size, 0)
})

t.test('a job without a sha256 cannot succeed', async (t) => {
  const { index, worker } = await setup(t)
  const outcome = await worker.process(jobFor('demo-1.0.0-py3-none-any.whl', { integrity: `sha512-${Buffer.alloc(64, 1).toString('base64')}` }), signal)
  t.equal(outcome.result, 'no_digest')
  t.equal(outcome.disposition, 'leave')
  t.equal(index.attempts.length, 0)
})

t.test('a refused credential holds the job like an outage: never refused job by job', async (t) => {
  const { index, worker, logger } = await setup(t, { token: 'wrong' })
  const controller = new AbortController()
  const running = worker.process(jobFor('demo-1.0.0-py3-none-any.whl'), controller.signal)
  await waitUntil(() => logger.find(MIRROR_TARGET_PAUSED).length === 1, 'the target is paused')
  controller.abort(new Error('cancelled by the test'))
  await t.rejects(running, { message: 'cancelled by the test' })
  t.equal(index.attempts[0]?.status, 403)
  t.ok(index.attempts.length <= 2, 'one upload, and at most one trial after the first second')
  t.match(logger.find(MIRROR_TARGET_PAUSED), [{ level: 'warn', data: { cause: /answered 403: the target refused the mirror's credential/ } }])
  t.same(logger.find(MIRROR_PUBLISH_REFUSED), [])
})

t.test('the public leg\'s egress policy: a file on another host is refused, nothing uploaded', async (t) => {
  const { index, worker } = await setup(t)
  const dist = pub.dist('demo-1.0.0-py3-none-any.whl')
  const elsewhere = dist.url.replace('127.0.0.1', 'localhost')
  const outcome = await worker.process(jobFor(dist.filename, { url: elsewhere }), signal)
  t.equal(outcome.result, 'upstream_refused', 'another authority than the public upstream (tarball-host policy)')
  t.equal(index.attempts.length, 0)
  t.notOk(pub.requests.some((r) => r.path.endsWith(dist.filename) && r.method === 'GET' && r.authorization !== undefined), 'never a credential')
})

t.test('409 after a lookup that missed: the same bytes are already present', async (t) => {
  const { index, worker } = await setup(t, { missFirstLookup: true })
  const dist = pub.dist('demo-2.0.0-py3-none-any.whl')
  index.preload('demo', dist.filename, dist.bytes)
  const outcome = await worker.process(jobFor(dist.filename), signal)
  t.same(outcome, { result: 'already_present', disposition: 'delete' })
  t.same(index.attempts.map((a) => a.status), [409], 'the index answered File already exists')
})

t.test('409 after a lookup that missed: other bytes are a collision, never overwritten', async (t) => {
  const { index, worker, logger } = await setup(t, { missFirstLookup: true })
  const dist = pub.dist('demo-2.0.0-py3-none-any.whl')
  const other = Buffer.from('other bytes')
  index.preload('demo', dist.filename, other)
  const outcome = await worker.process(jobFor(dist.filename), signal)
  t.equal(outcome.result, 'collision')
  t.equal(outcome.disposition, 'leave')
  t.ok(logger.records.some((r) => r.level === 'error' && r.message === MIRROR_COLLISION && (r.data?.['job'] as { sha256?: string })?.sha256 === dist.sha256))
  t.same(index.files.get(dist.filename)?.bytes, other)
})

t.test('the shared mirror worker suite: py, a PEP 691 index to the upload index', async (t) => {
  const trusting = new Agent({ connect: { ca: ca.caPem } })
  const upstream = await FaultRelay.start({ peer: pub.url, dispatcher: trusting, tls: { key: ca.keyPem, cert: ca.certPem } })
  const index = await startUploadIndex(t, { token: TOKEN })
  const targetRelay = await FaultRelay.start({ peer: index.url.replace(/\/$/, '') })
  t.teardown(async () => { await upstream.stop(); await targetRelay.stop(); await trusting.close() })
  const source = new UpstreamClient({
    url: `${upstream.origin}/simple/`, trusted: false, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'],
    maxResponseBytes: 16 * 1024 * 1024, proxyId: 'py-mirror-suite', logger: new RecordingLogger(), counters: new UpstreamFetchCounters(),
  })
  t.teardown(() => source.destroy())
  const adapter: MirrorSuiteAdapter = {
    mount: 'py',
    upstream,
    target: targetRelay,
    secret: TOKEN,
    job: async (name) => {
      const job = jobFor(pub.dists.find((d) => d.project === name)!.filename)
      return { ...job, url: job.url.replace(pub.url, upstream.origin) }
    },
    worker: (t, options = {}) => {
      const logger = new RecordingLogger()
      const target = new PyUploadTarget({ url: `${targetRelay.origin}/`, token: new BearerToken(TOKEN), maxDocumentBytes: 1024 * 1024 })
      t.teardown(() => target.close())
      return { worker: new MirrorWorker({ source, target: new PyTargetProtocol(target), ...suiteWorkerOptions(options), logger }), logger }
    },
    held: async (job): Promise<Held> => {
      const held = index.files.get(job.filename)
      if (held === undefined) return 'absent'
      return `sha256-${Buffer.from(held.sha256, 'hex').toString('base64')}` === job.integrity ? 'same' : 'other'
    },
    holdOther: async (job) => { index.preload(job.package, job.filename, Buffer.from(`other bytes than ${job.filename}`)) },
    lookupRule: (job) => ({ method: 'GET', path: `/simple/${job.package}/` }),
    sendRule: () => ({ method: 'POST', path: '/' }),
  }
  mirrorWorkerSuite(t, adapter)
})
