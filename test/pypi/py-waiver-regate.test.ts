/**
 * A py project page shaped by a waiver is gated again at the waiver's
 * expiry (issue 31 item 2), as a js answer is: retained and served from the
 * store while the waiver holds, rendered again from the first request at
 * or past its expiry, well inside the store's five-minute time to live.
 * A real proxy role with a manual clock, a policy document naming the
 * waiver, and a py upstream over https.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { fileUrl } from '../../engine/pypi/file-url.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { startTestProxy } from '../helpers/proxy.js'

const JSON_TYPE = 'application/vnd.pypi.simple.v1+json'

t.test('a retained py page is re-gated at the expiry of the waiver that shaped it', async (t) => {
  const clock = new ManualClock(Date.now())
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const file = (filename: string, uploaded: number) => ({
    filename, url: `${upstream.origin}/files/${filename}`, hashes: { sha256: 'ab'.repeat(32) }, 'upload-time': new Date(uploaded).toISOString(),
  })
  const PAGE = '/simple/urgent-fix/'
  upstream.script(PAGE, {
    kind: 'respond',
    headers: { 'content-type': JSON_TYPE },
    body: JSON.stringify({
      meta: { 'api-version': '1.1' },
      name: 'urgent-fix',
      files: [file('urgent_fix-1.0.0.tar.gz', Date.parse('2020-01-01T00:00:00Z')), file('urgent_fix-2.1.3-py3-none-any.whl', clock.now() - 3_600_000)],
    }),
  })
  const expiresMs = clock.now() + 120_000
  const dir = await mkdtemp(join(tmpdir(), 'py-waiver-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const policyFile = join(dir, 'policy.json')
  await writeFile(policyFile, JSON.stringify({
    waivers: [{ mount: 'py', package: 'Urgent_Fix', versions: '==2.1.3', reason: 'INC-9 hotfix', by: 'sec-team', expires: new Date(expiresMs).toISOString() }],
  }))
  const proxy = await startTestProxy(t, {
    clock,
    document: {
      mounts: {
        py: {
          upstreams: { public: { url: `${upstream.origin}/simple/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 604_800 }],
        },
      },
      policy: { file: policyFile, pollSeconds: 0 },
    },
  })
  const pageReads = (): number => upstream.requests.filter((r) => r.url === PAGE).length
  const listed = async (): Promise<{ status: number, files: string[] }> => {
    const res = await proxy.get('/py/simple/urgent-fix/', { accept: JSON_TYPE })
    if (res.status !== 200) return { status: res.status, files: [] }
    return { status: res.status, files: (res.json() as { files: { filename: string }[] }).files.map((f) => f.filename) }
  }

  t.same(await listed(), { status: 200, files: ['urgent_fix-1.0.0.tar.gz', 'urgent_fix-2.1.3-py3-none-any.whl'] }, 'the waiver admits the quarantined wheel')
  t.equal(pageReads(), 1)
  clock.set(expiresMs - 1)
  t.same(await listed(), { status: 200, files: ['urgent_fix-1.0.0.tar.gz', 'urgent_fix-2.1.3-py3-none-any.whl'] }, 'the millisecond before: still the waiver\'s page')
  t.equal(pageReads(), 1, 'served from the store while the waiver holds')
  clock.set(expiresMs)
  t.same(await listed(), { status: 200, files: ['urgent_fix-1.0.0.tar.gz'] }, 'at its expiry the page is gated again: the wheel is withheld')
  t.equal(pageReads(), 2, 'rendered again from the upstream, two minutes into a five-minute time to live')
  t.same(await listed(), { status: 200, files: ['urgent_fix-1.0.0.tar.gz'] })
  t.equal(pageReads(), 2, 'the re-gated page is retained in turn')
  const wheelName = 'urgent_fix-2.1.3-py3-none-any.whl'
  const wheel = await proxy.get(new URL(fileUrl(proxy.url, 'urgent-fix', `${upstream.origin}/files/${wheelName}`, wheelName)).pathname)
  t.equal(wheel.status, 403, 'its download is refused too')
})
