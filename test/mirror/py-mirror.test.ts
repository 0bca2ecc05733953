/**
 * Mirroring `py` files (issue 16), end to end on the embedded queue with
 * real peers: a PEP 691 fixture index over https as the public upstream
 * (real wheels and sdists, test/pypi/fixture-index.ts), the fixture upload
 * index as the mirror target (test/peers/py-upload-index.ts, proved against
 * the real twine by test/pypi/upload-index-twine.test.ts), and Debian's
 * real pip as the client.
 *
 * - `pip download` and `pip install` through `/py`: the worker uploads the
 *   wheel with twine's fields (metadata from the PEP 658 file), and the
 *   index then holds the same bytes; an sdist fetched through the proxy is
 *   uploaded as `sdist`/`source`.
 * - A public file whose bytes do not match its page's sha256: pip gets the
 *   bytes as sent and refuses them by hash; the worker refuses the job
 *   (`integrity_mismatch`) and the index never holds the file.
 * - A repeated job (the next download after the first was mirrored) is
 *   `already_present`, read from the index's simple page, with no upload.
 * - The index holding other bytes under the file name: a `collision`,
 *   logged at error with both digests, never overwritten.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { MIRROR_COLLISION, MIRROR_INTEGRITY_MISMATCH, MIRROR_JOB_MIRRORED } from '../../engine/mirror/mirror-worker.js'
import type { MirrorResult } from '../../engine/mirror/mirror-counters.js'
import { createPipWorkspace, pipDownload, pipInstall } from '../clients/pip-client.js'
import { startTestProxy } from '../helpers/proxy.js'
import { startUploadIndex } from '../peers/py-upload-index.js'
import { PEP691_JSON, startFixtureIndex } from '../pypi/fixture-index.js'
import { waitFor } from './wait-for.js'

const PIP = { timeoutMs: 60_000, noDeps: true }
const TOKEN = 'mirror-upload-token'
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

const pub = await startFixtureIndex(t, {
  mode: 'json',
  https: true,
  projects: [
    { name: 'mirror-me', releases: [{ version: '1.0.0', files: ['wheel', 'sdist'], requiresPython: '>=3.7', requiresDist: ['six>=1'] }] },
    { name: 'tampered', releases: [{ version: '1.0.0', wrongHash: true }] },
    { name: 'collide', releases: [{ version: '2.0.0' }] },
  ],
})
const index = await startUploadIndex(t, { token: TOKEN })
const proxy = await startTestProxy(t, {
  document: {
    mounts: {
      py: {
        upstreams: { public: { url: pub.simpleUrl, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
        rules: [{ rule: 'AllowIfOlderThan', seconds: 86400 }],
        mirror: { target: index.url, token: TOKEN },
      },
    },
  },
})
const target = { indexUrl: `${proxy.url}/py/simple/` }
const counts = (): Record<MirrorResult, number> => proxy.role.metrics()['service.mirror.jobs.processed'] as Record<MirrorResult, number>
const enqueued = (): { recent: number } => proxy.role.metrics()['service.mirror.enqueue'] as { recent: number }

t.test('pip download, then pip install: the wheel is uploaded with twine\'s fields, the same bytes', async (t) => {
  const wheel = pub.dist('mirror_me-1.0.0-py3-none-any.whl')
  const ws = await createPipWorkspace(t)
  const run = await pipDownload(ws, target, ['mirror-me'], PIP)
  t.same(run.files, [wheel.filename])
  t.equal(sha256(await readFile(join(ws.downloadDir, wheel.filename))), wheel.sha256, 'pip got the public bytes')
  await waitFor(() => index.files.has(wheel.filename), 'the worker uploaded the wheel')
  const held = index.files.get(wheel.filename)
  t.equal(held?.sha256, wheel.sha256, 'the index holds the same bytes')
  const fields = new Map(held?.fields ?? [])
  t.equal(fields.get(':action'), 'file_upload')
  t.equal(fields.get('protocol_version'), '1')
  t.equal(fields.get('name'), 'mirror-me', 'the METADATA name, made safe as twine makes it')
  t.equal(fields.get('version'), '1.0.0')
  t.equal(fields.get('filetype'), 'bdist_wheel')
  t.equal(fields.get('pyversion'), 'py3', 'the wheel\'s Python tag')
  t.equal(fields.get('metadata_version'), '2.1', 'from the PEP 658 .metadata the page offers')
  t.equal(fields.get('requires_python'), '>=3.7')
  t.same(held?.fields.filter(([n]) => n === 'requires_dist').map(([, v]) => v), ['six>=1'])
  t.equal(fields.get('sha256_digest'), wheel.sha256)
  t.equal(fields.get('md5_digest'), undefined, 'the page gave no md5, so none is sent')
  await waitFor(() => counts().mirrored >= 1, 'the job is counted')
  t.ok(proxy.logger.records.some((r) => r.message === MIRROR_JOB_MIRRORED && r.data?.['mount'] === 'py'), 'logged at info, naming the mount')
  t.ok(pub.requests.filter((r) => r.path.endsWith(`${wheel.filename}.metadata`)).every((r) => r.authorization === undefined), 'the .metadata fetched anonymously')

  // A second download within queue.enqueueMemorySeconds adds no job (issue 30: one job per artifact while it is remembered).
  const uploadsBefore = index.attempts.length
  const recentBefore = enqueued().recent
  const again = await createPipWorkspace(t)
  const installed = await pipInstall(again, target, ['mirror-me'], PIP)
  t.same(installed.installed, [{ name: 'mirror_me', version: '1.0.0' }], 'pip install through /py')
  await waitFor(() => enqueued().recent > recentBefore, 'the repeated download is remembered as recently enqueued')
  t.equal(index.attempts.length, uploadsBefore, 'nothing uploaded again')
})

t.test('an sdist is uploaded as sdist, pyversion source', async (t) => {
  const sdist = pub.dist('mirror_me-1.0.0.tar.gz')
  const page = (await proxy.get('/py/simple/mirror-me/', { accept: PEP691_JSON })).json() as { files: { filename: string, url: string }[] }
  const url = page.files.find((f) => f.filename === sdist.filename)?.url ?? ''
  const res = await proxy.get(new URL(url).pathname)
  t.equal(res.status, 200)
  t.equal(sha256(res.body), sdist.sha256)
  await waitFor(() => index.files.has(sdist.filename), 'the worker uploaded the sdist')
  const fields = new Map(index.files.get(sdist.filename)?.fields ?? [])
  t.equal(index.files.get(sdist.filename)?.sha256, sdist.sha256)
  t.equal(fields.get('filetype'), 'sdist')
  t.equal(fields.get('pyversion'), 'source')
  t.equal(fields.get('metadata_version'), '1.0', 'no .metadata offered for an sdist: the documented default')
})

t.test('bytes that do not match the page\'s sha256: pip refuses them, the worker never uploads them', async (t) => {
  const file = pub.dist('tampered-1.0.0-py3-none-any.whl')
  t.not(file.advertisedSha256, file.sha256, 'the page states another digest than the bytes have')
  const before = counts().integrity_mismatch
  const ws = await createPipWorkspace(t)
  const run = await pipDownload(ws, target, ['tampered'], { ...PIP, allowFailure: true })
  t.not(run.exitCode, 0, 'pip refuses the file')
  t.match(run.stderr, /DO NOT MATCH THE HASHES/, 'by its hash: the proxy relayed the bytes as sent')
  t.ok(pub.fileRequests().includes(file.filename), 'the file was served through the proxy')
  await waitFor(() => counts().integrity_mismatch > before, 'the worker refused the job')
  const logged = proxy.logger.records.find((r) => r.message === MIRROR_INTEGRITY_MISMATCH && r.data?.['filename'] === file.filename)
  t.match(logged?.data, { mount: 'py', expected: { sha256: file.advertisedSha256 }, actual: { sha256: file.sha256 } }, 'both digests logged')
  t.notOk(index.files.has(file.filename), 'the index never holds it')
  t.notOk(index.attempts.some((a) => a.filename === file.filename && a.status === 200), 'no upload of it completed')
  // The upload streams while the bytes are hashed: it was started, and cut before its closing delimiter.
  await waitFor(() => index.aborted + index.incomplete >= 1, 'the index saw the upload cut short')
  t.ok(index.aborted + index.incomplete >= 1, `the index saw ${index.aborted} upload(s) cut mid-body and ${index.incomplete} without a closing delimiter, and stored nothing`)
})

t.test('the index holds other bytes under the file name: a collision, never overwritten', async (t) => {
  const file = pub.dist('collide-2.0.0-py3-none-any.whl')
  const other = Buffer.from('not the public wheel')
  index.preload('collide', file.filename, other)
  const ws = await createPipWorkspace(t)
  await pipDownload(ws, target, ['collide'], PIP)
  await waitFor(() => counts().collision >= 1, 'the worker found the collision')
  const logged = proxy.logger.records.find((r) => r.message === MIRROR_COLLISION && r.data?.['filename'] === file.filename)
  t.equal(logged?.level, 'error')
  t.match(logged?.data, { job: { sha256: file.sha256 }, held: { sha256: sha256(other) } }, 'both digests')
  t.same(index.files.get(file.filename)?.bytes, other, 'the index keeps what it had')
})
