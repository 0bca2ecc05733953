/**
 * The real `pip` (Debian's, /usr/bin/python3 -m pip) through the proxy's
 * `/py` mount (issue 16): a public PEP 691 JSON index over https (gated)
 * and a private PEP 503 HTML index over http (trusted), both fixture indexes
 * serving real wheels (test/pypi/fixture-index.ts). The public rules are
 * `DenyIfCve` then a 7-day `AllowIfOlderThan`, over an advisory database
 * compiled in memory from the real PYSEC samples of ../shared/data, as
 * test/packument-route/advisory-gate.test.ts provides one for `js`.
 *
 * The fixture project is named after flask because PYSEC-2023-62 marks
 * flask <2.2.5 and 2.3.0 <= v < 2.3.2 affected:
 *   2.2.5  uploaded 2020            admitted (fixed)          <- pip's pick
 *   2.3.1  uploaded 2020            denied by DenyIfCve
 *   2.3.2  uploaded 2020, yanked    offered with its yank     (pip skips it unless pinned)
 *   3.0.0  uploaded now             withheld by the quarantine
 * flask 2.2.5 requires itsdangerous>=2.0 (2.1.2 old, 2.2.0 uploaded now).
 * markupsafe is on both sides: the private project hides the public one.
 */
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import { systemClock } from '../../engine/clock.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { pysecSamples } from '../advisory/fixtures.js'
import { createPipWorkspace, pipDownload, pipInstall } from '../clients/pip-client.js'
import { startTestProxy } from '../helpers/proxy.js'
import { PEP691_JSON, startFixtureIndex, uploadedAgo, type FixtureIndex } from '../pypi/fixture-index.js'

const PIP_TIMEOUT_MS = 60_000

interface PageFile {
  filename: string
  url: string
  hashes: Record<string, string>
  yanked?: unknown
  'upload-time'?: string
  'core-metadata'?: unknown
  'dist-info-metadata'?: unknown
}
interface Page { meta: Record<string, string>; name: string; versions?: string[]; files: PageFile[] }

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

/** The real PYSEC samples compiled as the `py` advisory database (no EPSS: these rules read none). */
function pyAdvisoryArtifact(): Uint8Array {
  const builder = new ArtifactBuilder('py')
  for (const record of pysecSamples()) builder.add(record)
  return builder.build({
    compiledAt: new Date(),
    osvSource: '127.0.0.1:9',
    osvSourceUrl: 'http://127.0.0.1:9/osv/PyPI/all.zip',
    epss: undefined,
    epssStatus: 'unavailable',
    epssScoreDate: undefined,
  })
}

/** Every request the fixture indexes saw came from the proxy, never from pip. */
function noRequestFromPip(index: FixtureIndex): boolean {
  return index.requests.every((r) => !(r.userAgent ?? '').startsWith('pip/'))
}

t.test('pip through the /py mount: gated, hash-checked, private first', async (t) => {
  const [pub, priv] = await Promise.all([
    startFixtureIndex(t, {
      mode: 'json',
      https: true,
      projects: [
        {
          name: 'flask',
          releases: [
            { version: '2.2.5', requiresDist: ['itsdangerous>=2.0'], requiresPython: '>=3.7' },
            { version: '2.3.1', requiresDist: ['itsdangerous>=2.0'], requiresPython: '>=3.8' },
            { version: '2.3.2', requiresDist: ['itsdangerous>=2.0'], requiresPython: '>=3.8', yanked: 'withdrawn by the fixture' },
            { version: '3.0.0', requiresDist: ['itsdangerous>=2.0'], requiresPython: '>=3.8', uploadTime: uploadedAgo(60) },
          ],
        },
        { name: 'itsdangerous', releases: [{ version: '2.1.2' }, { version: '2.2.0', uploadTime: uploadedAgo(3600) }] },
        { name: 'markupsafe', releases: [{ version: '2.1.5' }] },
      ],
      pages: { argset: 'pep691-json/pypi-simple/argset-700.json' },
    }),
    startFixtureIndex(t, {
      mode: 'html',
      projects: [{ name: 'markupsafe', releases: [{ version: '0.9.0' }] }],
      pages: { django: 'pep503-html/dependabot-core/pypi_simple_response_django.html' },
    }),
  ])

  const storeDir = await mkdtemp(join(tmpdir(), 'proxy-store-'))
  t.teardown(() => rm(storeDir, { recursive: true, force: true }))
  const store = await FilesystemObjectStore.open({ root: storeDir, clock: systemClock })
  await store.put(advisoryObjectKey('py'), pyAdvisoryArtifact(), {})

  const proxy = await startTestProxy(t, {
    document: {
      store: { path: storeDir },
      advisories: { pollIntervalSeconds: 0.2 },
      mounts: {
        py: {
          upstreams: {
            public: { url: pub.simpleUrl, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
            private: { url: priv.simpleUrl },
          },
          rules: [{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 604800 }],
        },
      },
    },
  })
  let ready = await proxy.get('/readyz')
  for (let i = 0; i < 100 && ready.status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    ready = await proxy.get('/readyz')
  }
  t.equal(ready.status, 200, 'ready once the py advisory database is loaded')

  const target = { indexUrl: `${proxy.url}/py/simple/` }
  const runOptions = { timeoutMs: PIP_TIMEOUT_MS }

  t.test('the index root and non-normal names', async (t) => {
    const root = await proxy.get('/py/simple/')
    t.equal(root.status, 404)
    t.match(root.json(), { error: String }, 'the error envelope')
    const redirect = await proxy.get('/py/simple/Foo_Bar/')
    t.equal(redirect.status, 301)
    t.match(redirect.headers['location'], /^(http:\/\/127\.0\.0\.1:\d+)?\/py\/simple\/foo-bar\/$/)
  })

  t.test('the gated page: quarantined and advisory-denied versions are absent, the yank kept', async (t) => {
    const res = await proxy.get('/py/simple/flask/', { accept: PEP691_JSON })
    t.equal(res.status, 200)
    t.equal(res.headers['content-type'], PEP691_JSON)
    t.equal(res.headers['vary'], 'Accept')
    const page = res.json() as Page
    t.same(page.files.map((f) => f.filename).sort(), ['flask-2.2.5-py3-none-any.whl', 'flask-2.3.2-py3-none-any.whl'],
      '2.3.1 (PYSEC-2023-62) and 3.0.0 (uploaded a minute ago) are withheld')
    if (page.versions !== undefined) t.same([...page.versions].sort(), ['2.2.5', '2.3.2'], 'versions names only what is offered')
    for (const f of page.files) {
      t.ok(f.url.startsWith(`${proxy.url}/py/files/`), `${f.filename} is served by the proxy: ${f.url}`)
      const dist = pub.dist(f.filename)
      t.equal(f.hashes['sha256'], dist.sha256, 'the upstream digest, kept')
      t.equal(f['upload-time'], dist.uploadTime, 'the upload time, kept')
      // pip 22.3-23.0 (Debian 12 ships 23.0.1) crash with "unhashable type: 'dict'" on this key
      // in JSON; PEP 714 renamed it to core-metadata for exactly that reason.
      t.equal(f['dist-info-metadata'], undefined, 'no dist-info-metadata object in JSON (PEP 714)')
    }
    t.equal(page.files.find((f) => f.filename === 'flask-2.3.2-py3-none-any.whl')?.yanked, 'withdrawn by the fixture', 'offered with its yank and reason')
    t.ok(pub.pageRequests('flask').every((r) => r.authorization === undefined), 'no credential sent to the public index')

    const html = await proxy.get('/py/simple/flask/', { accept: 'text/html' })
    t.equal(html.status, 200)
    t.match(html.headers['content-type'], /^text\/html/)
    t.equal(html.headers['vary'], 'Accept')
    const text = html.body.toString('utf8')
    t.notMatch(text, /flask-2\.3\.1|flask-3\.0\.0/, 'the HTML page withholds the same versions')
    t.match(text, /data-yanked="withdrawn by the fixture"/)
  })

  t.test('pip download resolves to the newest admitted version and checks its sha256', async (t) => {
    const ws = await createPipWorkspace(t)
    const run = await pipDownload(ws, target, ['flask'], { ...runOptions, noDeps: true })
    t.same(run.files, ['flask-2.2.5-py3-none-any.whl'], 'not 3.0.0 (quarantine), 2.3.2 (yanked) or 2.3.1 (advisory)')
    t.equal(sha256(await readFile(join(ws.downloadDir, 'flask-2.2.5-py3-none-any.whl'))), pub.dist('flask-2.2.5-py3-none-any.whl').sha256)
  })

  t.test('pinned: the yanked version downloads; the denied and quarantined ones do not exist', async (t) => {
    const ws = await createPipWorkspace(t)
    const yanked = await pipDownload(ws, target, ['flask==2.3.2'], { ...runOptions, noDeps: true })
    t.same(yanked.files, ['flask-2.3.2-py3-none-any.whl'])
    t.match(yanked.stderr, /Reason for being yanked: withdrawn by the fixture/)
    for (const version of ['2.3.1', '3.0.0']) {
      const refused = await pipDownload(ws, target, [`flask==${version}`], { ...runOptions, noDeps: true, allowFailure: true })
      t.equal(refused.exitCode, 1, `flask==${version}`)
      t.match(refused.stderr, new RegExp(`No matching distribution found for flask==${version.replace(/\./g, '\\.')}`))
    }
  })

  t.test('pip install --target installs flask and its dependency through the proxy', async (t) => {
    const ws = await createPipWorkspace(t)
    const run = await pipInstall(ws, target, ['flask'], runOptions)
    t.same(run.installed, [{ name: 'flask', version: '2.2.5' }, { name: 'itsdangerous', version: '2.1.2' }], 'itsdangerous 2.2.0 waits in quarantine')
    const fetched = pub.fileRequests()
    t.ok(fetched.includes('flask-2.2.5-py3-none-any.whl'), 'the public index served flask')
    t.ok(fetched.includes('itsdangerous-2.1.2-py3-none-any.whl'), 'and itsdangerous')
    t.notOk(fetched.some((f) => f.startsWith('flask-2.3.1') || f.startsWith('flask-3.0.0') || f.startsWith('itsdangerous-2.2.0')), 'never a withheld file')
    t.ok(noRequestFromPip(pub) && noRequestFromPip(priv), 'every upstream request came from the proxy, none from pip')
  })

  t.test('a private project hides the public one of the same name', async (t) => {
    const page = (await proxy.get('/py/simple/markupsafe/', { accept: PEP691_JSON })).json() as Page
    t.same(page.files.map((f) => f.filename), ['markupsafe-0.9.0-py3-none-any.whl'], 'no public 2.1.5')
    const ws = await createPipWorkspace(t)
    const run = await pipDownload(ws, target, ['markupsafe'], { ...runOptions, noDeps: true })
    t.same(run.files, ['markupsafe-0.9.0-py3-none-any.whl'])
    t.equal(sha256(await readFile(join(ws.downloadDir, 'markupsafe-0.9.0-py3-none-any.whl'))), priv.dist('markupsafe-0.9.0-py3-none-any.whl').sha256)
    t.ok(priv.fileRequests().includes('markupsafe-0.9.0-py3-none-any.whl'), 'the private index served the file')
    t.notOk(pub.fileRequests().some((f) => f.startsWith('markupsafe')), 'the public file was never fetched')
    t.ok(noRequestFromPip(priv), 'through the proxy')
  })

  t.test('real pages read through the proxy (pages only: their files live on public hosts)', async (t) => {
    const django = await proxy.get('/py/simple/django/', { accept: PEP691_JSON })
    t.equal(django.status, 200)
    const djangoPage = django.json() as Page
    t.ok(djangoPage.files.length > 100, `${djangoPage.files.length} private files`)
    t.ok(djangoPage.files.every((f) => f.url.startsWith(`${proxy.url}/py/files/django/`)), 'rewritten under the proxy')
    const argset = await proxy.get('/py/simple/argset/', { accept: PEP691_JSON })
    t.equal(argset.status, 200)
    const argsetPage = argset.json() as Page
    t.same(argsetPage.files.map((f) => f.filename).sort(), ['argset-0.1.0-py3-none-any.whl', 'argset-0.1.0.tar.gz'], 'uploaded 2021, no advisory: admitted')
    t.ok(argsetPage.files.every((f) => f.url.startsWith(`${proxy.url}/py/files/argset/`)), 'no upstream file URL offered')
  })
})
