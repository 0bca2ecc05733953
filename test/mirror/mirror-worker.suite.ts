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
 * - the target down (no answer, a transient status, at the lookup or the
 *   publication): the job is held in its call and tried again once the
 *   target answers (target-pace.ts); a transient upstream failure is
 *   retried after its window;
 * - the target refusing the mirror's credential (401, 403): held like an
 *   outage, never refused;
 * - the target refusing (a status that is not transient, a 409 for a
 *   version it does not hold): tried again up to the refusal tries, then
 *   `refused` with one error line naming its status and reason, left for
 *   the redrive policy (SPEC.md 3.7); a refusal that clears is stored;
 * - a cancelled job rejects with the signal's reason and leaves nothing;
 * - through the consumer: counted by result, a transient publication
 *   failure held in its one delivery, deleted on success.
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
  MIRROR_COLLISION, MIRROR_INTEGRITY_MISMATCH, MIRROR_JOB_MIRRORED, MIRROR_JOB_REFUSED, MIRROR_JOB_RETRIED, MIRROR_PUBLICATION_TRIED_AGAIN, MIRROR_PUBLISH_REFUSED,
} from '../../engine/mirror/mirror-worker.js'
import { MIRROR_TARGET_PAUSED, MIRROR_TARGET_RESUMED } from '../../engine/mirror/target-pace.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import type { Queue } from '../../engine/queue/queue.js'
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
  /** Stored after the target was down at the lookup and at the publication. */
  'suite-held',
  /** Stored at the second try after one refusal. */
  'suite-tried-again',
] as const
export type SuiteArtifact = (typeof SUITE_ARTIFACTS)[number]

export type MirrorOutcome = Awaited<ReturnType<JobRunner['process']>>

/** A worker as the suite drives it: the consumer passes a signal, a test may not. */
export interface SuiteWorker {
  process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome>
}

/** What a case may ask of the worker an adapter builds. */
export interface SuiteWorkerOptions {
  /** Default 16 MiB. */
  readonly maxArtifactBytes?: number
}

/** The MirrorWorker options every adapter passes: the case's limit, and a short pause between refused tries (the tries stay the default 3). */
export function suiteWorkerOptions(options: SuiteWorkerOptions = {}): { maxArtifactBytes: number, refusalPauseMs: number } {
  return { maxArtifactBytes: options.maxArtifactBytes ?? 16 * 1024 * 1024, refusalPauseMs: 50 }
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
  /** A worker with its own target client and logger, built with `suiteWorkerOptions(options)`. */
  worker(t: Test, options?: SuiteWorkerOptions): { readonly worker: SuiteWorker, readonly logger: RecordingLogger }
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

  test('the target down at the lookup and at the publication (503, no answer, 503): held in its call, tried again once it answers, mirrored', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-held')
    t.equal(await a.held(job), 'absent')
    a.target.fault({ ...a.lookupRule(job), times: 1 }, { kind: 'status', status: 503 })
    a.target.fault({ ...a.sendRule(job), times: 1 }, { kind: 'cut' })
    a.target.fault({ ...a.sendRule(job), times: 1 }, { kind: 'status', status: 503 })
    const before = { sends: sends(job), fetches: fetches(job) }
    t.same(await worker.process(job), { result: 'mirrored', disposition: 'delete' })
    t.equal(sends(job) - before.sends, 3, 'published three times: no answer, 503, stored')
    t.equal(fetches(job) - before.fetches, 3, 'the artifact fetched for each publication, never while the target was down')
    t.equal(await a.held(job), 'same')
    const paused = logger.find(MIRROR_TARGET_PAUSED)
    t.equal(paused.length, 3, 'one warning per outage episode')
    t.match(paused, [
      { level: 'warn', data: { target: a.target.authority, cause: 'the lookup answered 503' } },
      { level: 'warn', data: { cause: /^no answer to the publication/ } },
      { level: 'warn', data: { cause: 'the publication answered 503' } },
    ])
    t.equal(logger.find(MIRROR_TARGET_RESUMED).length, 3, 'and one info line when it answers again')
    t.same(logger.find(MIRROR_JOB_RETRIED), [], 'nothing left to a window')
    noSecret(t, logger)
  })

  test('the target refuses the lookup every try: refused after the tries, one error line with its status and reason', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.lookupRule(job), { kind: 'status', status: 400 })
    const before = lookups(job)
    t.same(await worker.process(job), { result: 'refused', disposition: 'leave', reason: 'the mirror target refused 3 tries (400: relay fault: 400)' })
    t.equal(lookups(job) - before, 3, 'asked three times')
    t.match(logger.find(MIRROR_PUBLICATION_TRIED_AGAIN), [
      { level: 'warn', data: { status: 400, try: 1, tries: 3, retryInMs: 50 } },
      { level: 'warn', data: { status: 400, try: 2, tries: 3, retryInMs: 100 } },
    ])
    const refused = logger.find(MIRROR_PUBLISH_REFUSED)
    t.equal(refused.length, 1, 'one error line')
    t.match(refused, [{ level: 'error', data: { package: job.package, version: job.version, result: 'refused', exchange: 'lookup', status: 400, cause: 'relay fault: 400', tries: 3, target: a.target.authority } }])
    noSecret(t, logger)
  })

  test('the target refuses a publication every try: refused with its status and reason, nothing stored, never an immediate loop', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.sendRule(job), { kind: 'status', status: 422 })
    const before = { sends: sends(job), fetches: fetches(job) }
    const started = Date.now()
    t.same(await worker.process(job), { result: 'refused', disposition: 'leave', reason: 'the mirror target refused 3 tries (422: relay fault: 422)' })
    t.ok(Date.now() - started >= 150, 'the tries were apart (50 ms, then 100 ms)')
    t.equal(sends(job) - before.sends, 3, 'three publications')
    t.equal(fetches(job) - before.fetches, 3)
    t.match(logger.find(MIRROR_PUBLISH_REFUSED), [{ level: 'error', data: { exchange: 'publication', status: 422, cause: 'relay fault: 422', tries: 3 } }])
    t.equal(logger.find(MIRROR_PUBLISH_REFUSED).length, 1)
    t.equal(await a.held(job), 'absent')
    noSecret(t, logger)
  })

  test('a 409 for a version the target does not hold (left half-written): asked again at each try, refused after the tries', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.lookupRule(job), { kind: 'status', status: 404 })
    a.target.fault(a.sendRule(job), { kind: 'status', status: 409 })
    const before = { lookups: lookups(job), sends: sends(job) }
    t.match(await worker.process(job), { result: 'refused', disposition: 'leave', reason: /409/ })
    t.equal(sends(job) - before.sends, 3)
    t.equal(lookups(job) - before.lookups, 6, 'each try asked before and again after the refusal')
    t.match(logger.find(MIRROR_PUBLISH_REFUSED), [{ level: 'error', data: { status: 409, cause: 'relay fault: 409', tries: 3 } }])
  })

  test('a refusal that clears: tried again after the pause, then stored', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-tried-again')
    a.target.fault({ ...a.sendRule(job), times: 1 }, { kind: 'status', status: 422 })
    t.same(await worker.process(job), { result: 'mirrored', disposition: 'delete' })
    t.equal(logger.find(MIRROR_PUBLICATION_TRIED_AGAIN).length, 1)
    t.same(logger.find(MIRROR_PUBLISH_REFUSED), [])
    t.equal(await a.held(job), 'same')
  })

  test('the target refuses the mirror\'s credential (401 at the publication): held like an outage, never refused, nothing stored', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-refused')
    a.target.fault(a.sendRule(job), { kind: 'status', status: 401 })
    const before = sends(job)
    const controller = new AbortController()
    const running = worker.process(job, controller.signal)
    await waitFor(() => logger.find(MIRROR_TARGET_PAUSED).length === 1, 'the target is paused')
    controller.abort(new Error('cancelled by the test'))
    await t.rejects(running, { message: 'cancelled by the test' }, 'held until cancelled')
    t.match(logger.find(MIRROR_TARGET_PAUSED), [{ level: 'warn', data: { cause: /^the publication answered 401: the target refused the mirror's credential/ } }])
    t.same(logger.find(MIRROR_PUBLISH_REFUSED), [], 'never refused: a credential fault is the target\'s, not the job\'s')
    t.same(logger.find(MIRROR_PUBLICATION_TRIED_AGAIN), [])
    t.ok(sends(job) - before <= 2, 'no retry loop: one publication, and at most one trial after the first second')
    t.equal(await a.held(job), 'absent')
    noSecret(t, logger)
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

  test('through the consumer: counted by result, a transient publication failure held in its one delivery, then deleted', async (t) => {
    const { worker, logger } = a.worker(t)
    const job = await a.job('suite-consumer')
    const dir = await mkdtemp(join(tmpdir(), 'mirror-suite-'))
    const queue = await EmbeddedQueue.open({ dir: join(dir, 'queue') })
    const deliveries: number[] = []
    const counted: Queue = {
      send: (body, options) => queue.send(body, options),
      sendBatch: (entries) => queue.sendBatch(entries),
      receive: async (options) => {
        const got = await queue.receive(options)
        deliveries.push(...got.map((m) => m.receiveCount))
        return got
      },
      changeVisibility: (handle, seconds) => queue.changeVisibility(handle, seconds),
      delete: (handle) => queue.delete(handle),
      attributes: () => queue.attributes(),
      close: () => queue.close(),
    }
    const counters = new MirrorCounters()
    const consumer = new MirrorConsumer({
      queue: counted, counters, logger, concurrency: 1, maxReceiveCount: 5, visibilitySeconds: 300, waitSeconds: 1, receiveRetryMs: 100,
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
    t.match(counters.snapshot(), { retried: 0, mirrored: 1, already_present: 0, discarded: 0 })
    t.same(deliveries, [1], 'one delivery: the outage cost no receive')
    t.equal(logger.find(MIRROR_TARGET_PAUSED).length, 1)
    t.equal(await a.held(job), 'same')
    await queue.send(encodeMirrorJob(job), { dedupKey: mirrorJobKey(job) })
    await waitFor(() => counters.get('already_present') === 1, 'the repeat is settled', 30_000)
    await consumer.stop(5_000)
    t.same(await queue.receive({ max: 10, visibilitySeconds: 30 }), [], 'every delivery deleted')
    t.match(counters.snapshot(), { retried: 0, mirrored: 1, already_present: 1 })
  })
}
