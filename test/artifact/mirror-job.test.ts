/**
 * The mirror job's layout (SPEC.md 2.8, 6.1): encode and decode round trip,
 * every field checked, no credential-bearing URL, and enqueueOn sending the
 * encoded body on a real embedded queue.
 */
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isServiceError } from '../../engine/errors.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { EnqueueBuffer, MIRROR_JOBS_LOST } from '../../engine/mirror/enqueue-buffer.js'
import { MAX_MIRROR_JOB_BYTES, MIRROR_JOB_FORMAT, UNDECODABLE_MIRROR_JOB, checkMirrorJob, decodeMirrorJob, encodeMirrorJob, enqueueOn, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const SHA512 = `sha512-${Buffer.alloc(64, 1).toString('base64')}`
const JOB: MirrorJob = {
  url: 'https://127.0.0.1:8443/@acme%2fwidget/-/widget-1.2.3.tgz',
  package: '@acme/widget',
  version: '1.2.3',
  filename: 'widget-1.2.3.tgz',
  integrity: SHA512,
  shasum: 'a'.repeat(40),
  enqueuedAt: '2025-01-02T03:04:05.678Z',
}

function reasonOf(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e, 'QUEUE_FAILURE') ? String(e.data?.['reason']) + ': ' + String(e.data?.['detail']) : `other: ${String(e)}`
  }
  return 'accepted'
}

t.test('round trip keeps every field; absent digests stay absent', async (t) => {
  const body = encodeMirrorJob(JOB)
  t.equal(JSON.parse(body).v, MIRROR_JOB_FORMAT)
  t.same(decodeMirrorJob(body), JOB)
  const shasumOnly = { ...JOB, integrity: undefined }
  const decoded = decodeMirrorJob(encodeMirrorJob(shasumOnly))
  t.equal(decoded.integrity, undefined)
  t.equal(decoded.shasum, JOB.shasum)
  t.notOk('integrity' in JSON.parse(encodeMirrorJob(shasumOnly)), 'an absent digest is not written as null')
})

t.test('invalid jobs are refused with the undecodable reason', async (t) => {
  const cases: [string, unknown][] = [
    ['http url', { ...JOB, url: 'http://127.0.0.1/a/-/a-1.0.0.tgz' }],
    ['userinfo', { ...JOB, url: 'https://user:secret@127.0.0.1/a/-/a-1.0.0.tgz' }],
    ['query', { ...JOB, url: 'https://127.0.0.1/a/-/a-1.0.0.tgz?token=secret' }],
    ['fragment', { ...JOB, url: 'https://127.0.0.1/a/-/a-1.0.0.tgz#x' }],
    ['bad url', { ...JOB, url: 'not a url' }],
    ['bad package', { ...JOB, package: '../etc' }],
    ['empty version', { ...JOB, version: '' }],
    ['bad filename', { ...JOB, filename: '../a.tgz' }],
    ['not tgz', { ...JOB, filename: 'a.zip' }],
    ['no digest', { ...JOB, integrity: undefined, shasum: undefined }],
    ['bad shasum', { ...JOB, shasum: 'xyz' }],
    ['bad time', { ...JOB, enqueuedAt: 'yesterday' }],
    ['not an object', 'job'],
  ]
  for (const [label, value] of cases) {
    t.match(reasonOf(() => checkMirrorJob(value)), new RegExp(`^${UNDECODABLE_MIRROR_JOB}: `), label)
  }
  t.match(reasonOf(() => encodeMirrorJob({ ...JOB, url: 'https://u:p@127.0.0.1/a.tgz' })), /userinfo/, 'encode refuses too')
  t.match(reasonOf(() => decodeMirrorJob('{')), /not JSON/)
  t.match(reasonOf(() => decodeMirrorJob(JSON.stringify({ ...JOB, v: 99 }))), /unknown format/)
  t.match(reasonOf(() => decodeMirrorJob(JSON.stringify(JOB))), /unknown format/, 'a body without its format version')
})

t.test('enqueueOn sends the encoded job on a real embedded queue', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'mirror-job-'))
  const queue = await EmbeddedQueue.open({ dir })
  t.teardown(async () => { await queue.close(); await rm(dir, { recursive: true, force: true }) })
  await enqueueOn(queue)(JOB)
  const [message] = await queue.receive({ max: 10, visibilitySeconds: 30 })
  t.ok(message)
  t.same(decodeMirrorJob(message!.body), JOB)
})

t.test('a job over the body bound is refused on every queue before it takes room; the enqueue buffer counts it', async (t) => {
  const long: MirrorJob = { ...JOB, url: `https://127.0.0.1:8443/${'x'.repeat(200_000)}/@acme%2fwidget/-/widget-1.2.3.tgz` }
  t.ok(Buffer.byteLength(encodeMirrorJob(JOB)) <= MAX_MIRROR_JOB_BYTES, 'an ordinary job fits')
  t.throws(() => encodeMirrorJob(long), { code: 'QUEUE_FAILURE', data: { reason: 'too-large', maxBodyBytes: MAX_MIRROR_JOB_BYTES } })
  const sent: string[] = []
  const logger = new RecordingLogger()
  const buffer = new EnqueueBuffer({
    queue: { sendBatch: async (entries) => entries.map((e) => { sent.push(e.body); return { messageId: String(sent.length) } }) },
    logger, maxBytes: 64 * 1024,
    // A clock that stands still: the pacing does not depend on how long 2,000 encodings take.
    clock: new ManualClock(),
  })
  // Thousands of downloads of the long-URL version hold nothing: each is lost at once, counted and logged at error.
  for (let i = 0; i < 2000; i++) await buffer.enqueue(long)
  t.equal(buffer.stats().bufferedBytes, 0, 'nothing held for them')
  await buffer.enqueue(JOB)
  await buffer.close(5_000)
  t.match(buffer.stats(), { buffered: 0, sent: 1, dropped: 2000 })
  const lines = logger.find(MIRROR_JOBS_LOST)
  t.ok(lines.every((l) => l.level === 'error' && (l.data as { reasons: Record<string, number> }).reasons['too_large'] === l.data?.['lost']), 'each line at error, every loss too large')
  t.equal(lines.reduce((n, l) => n + Number(l.data?.['lost']), 0), 2000, 'every loss is in a line')
  t.equal(lines.length, 2, 'paced: the first at once, the rest in one line at close')
  t.equal(sent.length, 1, 'only the ordinary job reached the queue')
})
