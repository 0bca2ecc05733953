/**
 * The one case suite every mirror worker passes (STYLE.md rule 8), the `js`
 * worker (an npm registry as target) and the `py` one (a legacy upload API),
 * each through an adapter over real peers: the public upstream and the
 * mirror target of its ecosystem, each behind a FaultRelay
 * (test/peers/fault-relay.ts) that forwards every exchange as it came
 * unless a case scripts a fault. What a job meets is the same for both:
 *
 * - decoded from its queue message, its artifact fetched anonymously from
 *   the authoritative URL through the public leg's client (egress policy
 *   included), re-verified, published once; a repeat is already present;
 * - a target holding other bytes is a collision, never overwritten; a
 *   lookup that missed a version published meanwhile is settled by asking
 *   again after the target's refusal;
 * - bytes that do not match the job's digest, an artifact over
 *   `limits.maxArtifactBytes` (declared or streamed), a job without a
 *   usable digest: refused, nothing stored;
 * - transient target and upstream failures are retried (a publication's at
 *   once, the rest after their window); permanent refusals are left for the
 *   redrive policy (SPEC.md 3.7);
 * - a cancelled job rejects with the signal's reason and leaves nothing;
 * - through the consumer: counted by result, released and redelivered at
 *   once after a transient publication failure, deleted on success.
 *
 * The adapter's fixtures are the SUITE_ARTIFACTS, version 1.0.0, on the
 * public upstream; cases that must not store anything share one of them
 * and each checks that the target still holds nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { MirrorConsumer, type JobRunner } from '../../engine/mirror/mirror-consumer.js'
import { MirrorCounters } from '../../engine/mirror/mirror-counters.js'
import { decodeMirrorJob, encodeMirrorJob, mirrorJobKey, mountOf, type MirrorJob, type MirrorJobMount } from '../../engine/mirror/mirror-job.js'
import {
  MIRROR_COLLISION, MIRROR_INTEGRITY_MISMATCH, MIRROR_JOB_MIRRORED, MIRROR_JOB_REFUSED, MIRROR_JOB_RETRIED, MIRROR_PUBLISH_REFUSED,
} from '../../engine/mirror/mirror-worker.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { FaultRelay, RelayRule } from '../peers/fault-relay.js'
import { waitFor } from './wait-for.js'

/** The fixtures an adapter publishes on its public upstream, version 1.0.0 each. */
export const SUITE_ARTIFACTS = [
  /** Mirrored, then repeated. */
  'suite-mirrored',
  /** The target holds other bytes under the same version. */
  'suite-collision',
  /** Mirrored through the consumer. */
  'suite-consumer',
  /** Never stored: every case that refuses, fails or cancels. */
  'suite-refused',
] as const
export type SuiteArtifact = (typeof SUITE_ARTIFACTS)[number]

export type MirrorOutcome = Awaited<ReturnType<JobRunner['process']>>

/** A worker as the suite drives it: the consumer passes a signal, a test may not. */
export interface SuiteWorker {
  process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome>
}

/** What the target holds for a job's version (js) or file (py), against the job's digest. */
export type Held = 'absent' | 'same' | 'other'

export interface MirrorSuiteAdapter {
  readonly mount: MirrorJobMount
  /** In front of the public upstream: the worker's public leg client asks it, and jobs name its URLs. */
  readonly upstream: FaultRelay
  /** In front of the mirror target: the worker's target is configured at it. */
  readonly target: FaultRelay
  /** The target credential; no log line may carry it. */
  readonly secret: string
  /** The job the artifact route would queue for a fixture (its URL on `upstream`). */
  job(artifact: SuiteArtifact): Promise<MirrorJob>
  /** A worker with its own target client and logger; `maxArtifactBytes` default 16 MiB. */
  worker(t: Test, options?: { readonly maxArtifactBytes?: number }): { readonly worker: SuiteWorker, readonly logger: RecordingLogger }
  held(job: MirrorJob): Promise<Held>
  /** Makes the target hold other bytes for the job's version or file. */
  holdOther(job: MirrorJob): Promise<void>
  /** The target exchange that says what it holds of the job (the idempotency lookup). */
  lookupRule(job: MirrorJob): RelayRule
  /** The target exchange that stores the job (the publish or the upload). */
  sendRule(job: MirrorJob): RelayRule
}

export function mirrorWorkerSuite(t: Test, a: MirrorSuiteAdapter): void {
  const artifactPath = (job: MirrorJob): string => new URL(job.url).pathname
  const fetches = (job: MirrorJob): number => a.upstream.count({ method: 'GET', path: artifactPath(job) })
  const sends = (job: MirrorJob): number => a.target.count(a.sendRule(job))
  const lookups = (job: MirrorJob): number => a.target.count(a.lookupRule(job))
  const noSecret = (t: Test, logger: RecordingLogger): void => {
    t.notOk(JSON.stringify(logger.records).includes(a.secret), 'the target credential is never logged')
  }
  const test = (name: string, body: (t: Test) => Promise<void>): void => {
    t.test(name, async (t) => {
      t.teardown(() => { a.upstream.clear(); a.target.clear() })
      await body(t)
    })
  }
  /** The signal's reason, or a failure when `process` resolved. */
  const rejection = async (t: Test, run: Promise<MirrorOutcome>): Promise<unknown> => {
    try {
      t.fail(`resolved: ${JSON.stringify(await run)}`)
      return undefined
    } catch (error) {
      return error
    }
  }

  test('a job read back from its queue message is mirrored: fetched anonymously from its authoritative URL, verified, published once', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = decodeMirrorJob(encodeMirrorJob(await a.job('suite-mirrored')))
    t.equal(mountOf(job), a.mount, 'the job names the worker\'s mount')
    t.equal(await a.held(job), 'absent')
    const before = { fetches: fetches(job), sends: sends(job) }
    t.same(await worker.process(job), { result: 'mirrored', disposition: 'delete' })
    t.equal(await a.held(job), 'same', 'the target holds the artifact with the job\'s digest')
    t.equal(fetches(job) - before.fetches, 1, 'one fetch of the authoritative URL')
    t.equal(sends(job) - before.sends, 1, 'one publication')
    const fetched = a.upstream.requests.filter((r) => r.path === artifactPath(job))
    t.ok(fetched.every((r) => r.authorization === undefined), 'the public fetch carries no credential')
    const [line, ...more] = logger.find(MIRROR_JOB_MIRRORED)
    t.same(more, [])
    t.match(line, { level: 'info', data: { package: job.package, version: job.version, filename: job.filename, target: a.target.authority } })
    t.ok(typeof line?.data['bytes'] === 'number' && line.data['bytes'] > 0, 'the line counts the bytes published')
    noSecret(t, logger)
  })

  test('the same job again is already present: deleted, nothing fetched or published', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-mirrored')
    t.equal(await a.held(job), 'same', 'mirrored by the case before')
    const before = { fetches: fetches(job), sends: sends(job) }
    t.same(await worker.process(job), { result: 'already_present', disposition: 'delete' })
    t.equal(fetches(job), before.fetches)
    t.equal(sends(job), before.sends)
    t.same(logger.records.filter((r) => r.level !== 'debug'), [], 'nothing above debug')
  })

  test('a lookup that missed a version stored meanwhile: the target refuses the publication, and asked again it holds the same bytes', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-mirrored')
    a.target.fault({ ...a.lookupRule(job), times: 1 }, { kind: 'status', status: 404 })
    const before = sends(job)
    t.same(await worker.process(job), { result: 'already_present', disposition: 'delete' })
    t.equal(sends(job) - before, 1, 'the publication was tried and refused')
    t.equal(await a.held(job), 'same')
  })

  test('the target holds other bytes: a collision, logged at error, never overwritten', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-collision')
    if (await a.held(job) === 'absent') await a.holdOther(job)
    t.equal(await a.held(job), 'other')
    const before = sends(job)
    t.match(await worker.process(job), { result: 'collision', disposition: 'leave' })
    t.equal(sends(job), before, 'nothing published')
    t.match(logger.find(MIRROR_COLLISION), [{ level: 'error', data: { package: job.package, target: a.target.authority, comparison: 'different' } }])
    t.equal(await a.held(job), 'other', 'the target still holds its own')
  })

  test('a lookup that missed other bytes stored meanwhile: asked again after the refusal, a collision', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-collision')
    t.equal(await a.held(job), 'other', 'held since the case before')
    a.target.fault({ ...a.lookupRule(job), times: 1 }, { kind: 'status', status: 404 })
    t.match(await worker.process(job), { result: 'collision', disposition: 'leave' })
    t.equal(logger.find(MIRROR_COLLISION).length, 1)
    t.equal(await a.held(job), 'other')
  })

  test('bytes that do not match the job\'s digest are refused before the target can store them', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.upstream.fault({ method: 'GET', path: artifactPath(job) }, { kind: 'tamper' })
    t.match(await worker.process(job), { result: 'integrity_mismatch', disposition: 'leave' })
    t.match(logger.find(MIRROR_INTEGRITY_MISMATCH), [{ level: 'error', data: { package: job.package } }])
    t.equal(await a.held(job), 'absent')
  })

  test('a declared length over limits.maxArtifactBytes cannot succeed: nothing published', async (t) => {
    const { worker, logger } = a.worker(t, { maxArtifactBytes: 64 })
    const job = await a.job('suite-refused')
    const before = sends(job)
    t.same(await worker.process(job), { result: 'too_large', disposition: 'leave', reason: 'the artifact exceeds 64 bytes' })
    t.equal(sends(job), before)
    t.match(logger.find(MIRROR_JOB_REFUSED), [{ level: 'warn', data: { result: 'too_large', limit: 64 } }])
    t.equal(await a.held(job), 'absent')
  })

  test('without a Content-Length the limit holds while streaming: the cut publication leaves nothing', async (t) => {
    const { worker, logger } = a.worker(t, { maxArtifactBytes: 64 })
    const job = await a.job('suite-refused')
    a.upstream.fault({ method: 'GET', path: artifactPath(job) }, { kind: 'chunked' })
    t.same(await worker.process(job), { result: 'too_large', disposition: 'leave', reason: 'the artifact exceeds 64 bytes' })
    t.match(logger.find(MIRROR_JOB_REFUSED), [{ level: 'warn', data: { result: 'too_large', limit: 64 } }])
    t.equal(await a.held(job), 'absent')
  })

  test('a job without a usable digest cannot succeed: nothing asked of the target', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = { ...await a.job('suite-refused'), integrity: `md5-${Buffer.alloc(16, 1).toString('base64')}`, shasum: undefined }
    const before = { lookups: lookups(job), fetches: fetches(job) }
    t.match(await worker.process(job), { result: 'no_digest', disposition: 'leave' })
    t.equal(lookups(job), before.lookups)
    t.equal(fetches(job), before.fetches)
    t.match(logger.find(MIRROR_JOB_REFUSED), [{ level: 'warn', data: { result: 'no_digest' } }])
  })

  test('the target\'s lookup fails transiently: retried after its window, nothing fetched', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.lookupRule(job), { kind: 'status', status: 503 })
    const before = fetches(job)
    t.same(await worker.process(job), { result: 'retried', disposition: 'leave', reason: 'mirror target unavailable' })
    t.equal(fetches(job), before)
    t.match(logger.find(MIRROR_JOB_RETRIED), [{ level: 'warn', data: { code: 'UPSTREAM_UNAVAILABLE', status: 503 } }])
  })

  test('the target refuses the lookup: publish_refused, left for the redrive policy', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.lookupRule(job), { kind: 'status', status: 403 })
    t.same(await worker.process(job), { result: 'publish_refused', disposition: 'leave', reason: 'the mirror target refused the lookup (UPSTREAM_REFUSED)' })
    t.match(logger.find(MIRROR_PUBLISH_REFUSED), [{ level: 'error', data: { code: 'UPSTREAM_REFUSED', status: 403, target: a.target.authority } }])
    noSecret(t, logger)
  })

  test('the target answers a publication 503: released at once, nothing stored', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.sendRule(job), { kind: 'status', status: 503 })
    t.same(await worker.process(job), { result: 'retried', disposition: 'release', reason: 'target status 503' })
    t.match(logger.find(MIRROR_JOB_RETRIED), [{ level: 'warn' }])
    t.equal(await a.held(job), 'absent')
  })

  test('the target gives no answer to a publication: released at once', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.sendRule(job), { kind: 'cut' })
    t.same(await worker.process(job), { result: 'retried', disposition: 'release', reason: 'no answer from the mirror target' })
    t.match(logger.find(MIRROR_JOB_RETRIED), [{ level: 'warn', data: { code: 'UPSTREAM_UNAVAILABLE' } }])
    t.equal(await a.held(job), 'absent')
  })

  test('the target refuses a publication: publish_refused with its status, left for the redrive policy', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.sendRule(job), { kind: 'status', status: 403 })
    t.same(await worker.process(job), { result: 'publish_refused', disposition: 'leave', reason: 'the mirror target answered 403' })
    t.match(logger.find(MIRROR_PUBLISH_REFUSED), [{ level: 'error', data: { status: 403, target: a.target.authority } }])
    t.equal(await a.held(job), 'absent')
    noSecret(t, logger)
  })

  test('a 409 for a version the target does not hold: released at once', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.lookupRule(job), { kind: 'status', status: 404 })
    a.target.fault(a.sendRule(job), { kind: 'status', status: 409 })
    const before = lookups(job)
    t.match(await worker.process(job), { result: 'retried', disposition: 'release', reason: /409/ })
    t.equal(lookups(job) - before, 2, 'asked again after the refusal')
  })

  test('the public upstream no longer serves the artifact: upstream_refused, nothing published', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.upstream.fault({ method: 'GET', path: artifactPath(job) }, { kind: 'status', status: 404 })
    const before = sends(job)
    t.same(await worker.process(job), { result: 'upstream_refused', disposition: 'leave', reason: 'the public upstream answered 404' })
    t.equal(sends(job), before)
    t.match(logger.find(MIRROR_JOB_REFUSED), [{ level: 'warn', data: { result: 'upstream_refused', status: 404 } }])
  })

  test('the public upstream fails transiently: retried after its window', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-refused')
    a.upstream.fault({ method: 'GET', path: artifactPath(job) }, { kind: 'status', status: 503 })
    t.same(await worker.process(job), { result: 'retried', disposition: 'leave', reason: 'upstream status 503' })
    t.equal(await a.held(job), 'absent')
  })

  test('an authoritative URL on another authority fails the public leg\'s egress policy: nothing fetched or published', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-refused')
    const elsewhere = new URL(job.url)
    elsewhere.port = new URL(a.target.origin).port
    const before = { sends: sends(job), target: a.target.requests.length }
    t.same(await worker.process({ ...job, url: elsewhere.href }), { result: 'upstream_refused', disposition: 'leave', reason: 'TARBALL_HOST_REFUSED' })
    t.equal(sends(job), before.sends)
    t.notOk(a.target.requests.slice(before.target).some((r) => r.path.startsWith(elsewhere.pathname)), 'the other authority never asked')
  })

  test('cancelled before it starts: rejects with the signal\'s reason, nothing asked of the target', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-refused')
    const controller = new AbortController()
    const reason = new Error('cancelled by the drain')
    controller.abort(reason)
    const before = a.target.requests.length
    t.equal(await rejection(t, worker.process(job, controller.signal)), reason)
    t.equal(a.target.requests.length, before)
  })

  test('cancelled mid-publication: rejects with the signal\'s reason, the target holds nothing', async (t) => {
    const { worker } = a.worker(t)
    const job = await a.job('suite-refused')
    const controller = new AbortController()
    const reason = new Error('cancelled by the drain')
    a.target.fault(a.sendRule(job), { kind: 'hold', onHeld: () => controller.abort(reason) })
    t.equal(await rejection(t, worker.process(job, controller.signal)), reason)
    t.equal(await a.held(job), 'absent')
  })

  test('through the consumer: counted by result, released and redelivered at once after a transient publication failure, then deleted', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-consumer')
    const dir = await mkdtemp(join(tmpdir(), 'mirror-suite-'))
    const queue = await EmbeddedQueue.open({ dir: join(dir, 'queue') })
    const counters = new MirrorCounters()
    // A window far longer than the wait: a delivery back within it was released, not left to expire.
    const consumer = new MirrorConsumer({
      queue, counters, logger, concurrency: 1, maxReceiveCount: 5, visibilitySeconds: 300, waitSeconds: 1, receiveRetryMs: 100,
      worker: { process: (j, signal) => worker.process(j, signal) },
    })
    t.teardown(async () => {
      await consumer.stop(5_000)
      await queue.close()
      await rm(dir, { recursive: true, force: true })
    })
    a.target.fault({ ...a.sendRule(job), times: 1 }, { kind: 'status', status: 503 })
    consumer.start()
    await queue.send(encodeMirrorJob(job), { dedupKey: mirrorJobKey(job) })
    await waitFor(() => counters.get('mirrored') === 1, 'the job is mirrored', 30_000)
    t.match(counters.snapshot(), { retried: 1, mirrored: 1, already_present: 0, discarded: 0 })
    t.equal(await a.held(job), 'same')
    await queue.send(encodeMirrorJob(job), { dedupKey: mirrorJobKey(job) })
    await waitFor(() => counters.get('already_present') === 1, 'the repeat is settled', 30_000)
    await consumer.stop(5_000)
    t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'every delivery deleted')
    t.match(counters.snapshot(), { retried: 1, mirrored: 1, already_present: 1 })
  })
}
