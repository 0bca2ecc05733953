/**
 * Mirror jobs name their mount (issue 16) compatibly: a job body written by
 * the build before (no `mount` field) still decodes, as a `js` job; a `js`
 * job is still written without the field, byte for byte as before (so a
 * worker of the earlier build reads it); a `py` job round-trips with its
 * own name and file rules; the dispatch hands each job to its mount's
 * worker and refuses one for a mount it has no target for.
 */
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { MirrorDispatch } from '../../engine/mirror/mirror-dispatch.js'
import { checkMirrorJob, decodeMirrorJob, encodeMirrorJob, mountOf, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import { MIRROR_JOB_REFUSED } from '../../engine/mirror/mirror-worker.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const SHA256 = Buffer.alloc(32, 7)
const PY_JOB: MirrorJob = {
  mount: 'py',
  url: 'https://127.0.0.1:8443/files/demo_pkg-1.0.0-py3-none-any.whl',
  package: 'demo-pkg',
  version: '1.0.0',
  filename: 'demo_pkg-1.0.0-py3-none-any.whl',
  integrity: `sha256-${SHA256.toString('base64')}`,
  shasum: undefined,
  md5: 'd'.repeat(32),
  coreMetadata: true,
  enqueuedAt: '2026-01-02T03:04:05.678Z',
}

/** Exactly what this build wrote before jobs named mounts (engine/mirror/mirror-job.ts at f1e5fe6). */
const EARLIER_BODY = '{"v":1,"url":"https://127.0.0.1:8443/left-pad/-/left-pad-1.3.0.tgz","package":"left-pad","version":"1.3.0","filename":"left-pad-1.3.0.tgz","integrity":"sha512-' + Buffer.alloc(64, 1).toString('base64') + '","enqueuedAt":"2025-01-02T03:04:05.678Z"}'

function refusal(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e, 'QUEUE_FAILURE') ? String(e.data?.['detail']) : `other: ${String(e)}`
  }
  return 'accepted'
}

t.test('a job written before jobs named mounts decodes as js, and a js job is written as before', async (t) => {
  const job = decodeMirrorJob(EARLIER_BODY)
  t.equal(mountOf(job), 'js')
  t.notOk('mount' in job, 'no mount key is added to a js job')
  t.equal(job.package, 'left-pad')
  t.equal(encodeMirrorJob(job), EARLIER_BODY, 're-encoded byte for byte: a worker of the earlier build reads it')
  const explicit = decodeMirrorJob(EARLIER_BODY.replace('"v":1,', '"v":1,"mount":"js",'))
  t.equal(mountOf(explicit), 'js', 'an explicit js decodes the same')
  t.equal(encodeMirrorJob(explicit), EARLIER_BODY)
})

t.test('a py job round-trips with every field', async (t) => {
  const body = encodeMirrorJob(PY_JOB)
  t.equal(JSON.parse(body).mount, 'py')
  const decoded = decodeMirrorJob(body)
  t.same(decoded, PY_JOB)
  t.equal(mountOf(decoded), 'py')
  const bare = decodeMirrorJob(encodeMirrorJob({ ...PY_JOB, md5: undefined, coreMetadata: false }))
  t.equal(bare.md5, undefined)
  t.equal(bare.coreMetadata, false)
  t.notOk('md5' in JSON.parse(encodeMirrorJob(bare)) || 'coreMetadata' in JSON.parse(encodeMirrorJob(bare)), 'absent fields are not written')
  const sdist = { ...PY_JOB, url: 'https://127.0.0.1:8443/files/Demo-Pkg-1.0.tar.gz', filename: 'Demo-Pkg-1.0.tar.gz', version: '1.0' }
  t.same(decodeMirrorJob(encodeMirrorJob(sdist)), sdist, 'an sdist whose name part is written with its own spelling')
})

t.test('py jobs are checked by the py rules', async (t) => {
  const cases: [string, unknown, RegExp][] = [
    ['unknown mount', { ...PY_JOB, mount: 'rb' }, /mount is not js or py/],
    ['npm name', { ...PY_JOB, package: '@acme/demo' }, /PEP 503 normal project name/],
    ['non-normal name', { ...PY_JOB, package: 'Demo_Pkg' }, /PEP 503 normal project name/],
    ['an egg', { ...PY_JOB, filename: 'demo_pkg-1.0.0-py3.11.egg' }, /wheel or sdist/],
    ['another version', { ...PY_JOB, version: '2.0.0' }, /wheel or sdist of this project and version/],
    ['another project', { ...PY_JOB, filename: 'other-1.0.0-py3-none-any.whl' }, /wheel or sdist/],
    ['a path', { ...PY_JOB, filename: '../demo_pkg-1.0.0-py3-none-any.whl' }, /distribution file name/],
    ['no digest', { ...PY_JOB, integrity: undefined }, /no digest/],
    ['bad md5', { ...PY_JOB, md5: 'XYZ' }, /md5/],
    ['bad coreMetadata', { ...PY_JOB, coreMetadata: 'yes' }, /coreMetadata/],
    ['http url', { ...PY_JOB, url: 'http://127.0.0.1/files/demo_pkg-1.0.0-py3-none-any.whl' }, /https/],
  ]
  for (const [what, value, detail] of cases) t.match(refusal(() => checkMirrorJob(value)), detail, what)
  t.match(refusal(() => checkMirrorJob({ ...PY_JOB, mount: undefined })), /artifact file name/, 'without the mount a wheel is no js artifact')
})

t.test('the dispatch: each job to its mount\'s worker; a mount without a target is refused and left', async (t) => {
  const seen: string[] = []
  const runner = (mount: string) => ({ process: async (job: MirrorJob) => { seen.push(`${mount}:${job.filename}`); return { result: 'mirrored' as const, disposition: 'delete' as const } } })
  const logger = new RecordingLogger()
  const both = new MirrorDispatch({ js: runner('js'), py: runner('py') }, logger)
  const signal = new AbortController().signal
  await both.process(decodeMirrorJob(EARLIER_BODY), signal)
  await both.process(PY_JOB, signal)
  t.same(seen, ['js:left-pad-1.3.0.tgz', 'py:demo_pkg-1.0.0-py3-none-any.whl'])
  t.same(both.mounts, ['js', 'py'])

  const jsOnly = new MirrorDispatch({ js: runner('js') }, logger)
  const outcome = await jsOnly.process(PY_JOB, signal)
  t.same(outcome, { result: 'publish_refused', disposition: 'leave', reason: 'this worker has no mirror target for mount py (mounts.py.mirror)' })
  t.ok(logger.records.some((r) => r.message === MIRROR_JOB_REFUSED && r.data?.['mount'] === 'py'), 'logged, naming the mount')
  t.throws(() => new MirrorDispatch({}, logger), TypeError)
})
