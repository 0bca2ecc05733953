/**
 * The pip rig on its own (no proxy): Debian's pip pointed straight at the
 * fixture Simple index, in `json` mode over https and in `html` mode over
 * http, resolves the newest installable version, verifies its sha256,
 * installs a wheel with its dependency into a target folder, and skips a
 * yanked version unless it is pinned with `==` (PEP 592). The pages
 * themselves are checked too, so a failure in test/e2e/pip-install.test.ts
 * points at the proxy, not at the rig.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Agent, request } from 'undici'
import { sharedDataPath } from '../../bench/peers/shared-data.js'
import { createPipWorkspace, pipDownload, pipInstall, pipVersion } from '../clients/pip-client.js'
import { PEP691_JSON, startFixtureIndex, uploadedAgo, type FixtureIndex, type FixtureIndexOptions, type FixtureProject } from './fixture-index.js'

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

/** What pip 23 sends for a project page (recorded here; pip's collector.py). */
const PIP_PAGE_ACCEPT = 'application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01'

// Names are lower case as pip 23.0 asks for them: its PEP 658 check compares
// METADATA's Name with the requirement text as written (fixed in pip 23.1).
const PROJECTS: readonly FixtureProject[] = [
  {
    name: 'demo-pure',
    releases: [
      { version: '1.0.0', files: ['wheel', 'sdist'], requiresPython: '>=3.8,<4' },
      // Uploaded now: pip itself has no quarantine and takes it.
      { version: '1.1.0', uploadTime: uploadedAgo(0), requiresPython: '>=3.8,<4' },
      { version: '1.2.0', yanked: 'broken on import' },
      { version: '1.3.0', yanked: true },
      { version: '2.0.0', requiresPython: '>=4' },
    ],
  },
  { name: 'with-dep', releases: [{ version: '1.0.0', requiresDist: ['demo-pure>=1.0'] }] },
  { name: 'bad-hash', releases: [{ version: '1.0.0', wrongHash: true }] },
]

interface Page {
  meta: Record<string, string>
  name: string
  versions: string[]
  files: { filename: string; url: string; hashes: Record<string, string>; size: number; 'upload-time': string; yanked: unknown; 'requires-python'?: string; 'core-metadata'?: unknown; 'dist-info-metadata'?: unknown }[]
}

async function httpGet(t: Test, index: FixtureIndex, path: string, headers: Record<string, string> = {}) {
  const ca = index.caFile === undefined ? undefined : await readFile(index.caFile, 'utf8')
  const dispatcher = new Agent(ca === undefined ? {} : { connect: { ca } })
  t.teardown(() => dispatcher.close())
  const res = await request(`${index.url}${path}`, { headers, dispatcher })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: res.headers, body }
}

for (const variant of [{ mode: 'json', https: true }, { mode: 'html', https: false }] as const satisfies readonly FixtureIndexOptions[]) {
  t.test(`${variant.mode} mode over ${variant.https ? 'https' : 'http'}`, async (t) => {
    const index = await startFixtureIndex(t, { ...variant, projects: PROJECTS })
    const target = { indexUrl: index.simpleUrl, ...(index.caFile === undefined ? {} : { caFile: index.caFile }) }
    t.equal(index.url.startsWith(variant.https ? 'https://127.0.0.1:' : 'http://127.0.0.1:'), true, index.url)

    t.test('the pages say what the mode promises', async (t) => {
      const page = await httpGet(t, index, '/simple/demo-pure/', { accept: PIP_PAGE_ACCEPT })
      t.equal(page.status, 200)
      const wheel = index.dist('demo_pure-1.0.0-py3-none-any.whl')
      if (variant.mode === 'json') {
        t.equal(page.headers['content-type'], PEP691_JSON)
        t.equal(page.headers['vary'], 'Accept')
        const doc = JSON.parse(page.body.toString('utf8')) as Page
        t.equal(doc.meta['api-version'], '1.1')
        t.same(doc.versions, ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '2.0.0'])
        t.equal(doc.files.length, 6)
        for (const f of doc.files) {
          t.equal(f.url, `${index.url}/files/${f.filename}`, 'absolute, on this server')
          t.equal(typeof f.size, 'number')
          t.match(f['upload-time'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
          t.equal(f.hashes['sha256'], index.dist(f.filename).sha256)
        }
        t.same(doc.files.map((f) => f.yanked), [false, false, false, 'broken on import', true, false])
        t.equal(doc.files[0]?.['requires-python'], '>=3.8,<4')
        t.same(doc.files[0]?.['core-metadata'], { sha256: wheel.metadataSha256 })
        t.equal(doc.files[0]?.['dist-info-metadata'], undefined, 'the legacy key only when asked for')
        t.equal(doc.files.find((f) => f.filename.endsWith('.tar.gz'))?.['core-metadata'], undefined, 'no .metadata announced for an sdist')
        const html = await httpGet(t, index, '/simple/demo-pure/', { accept: 'text/html' })
        t.match(html.headers['content-type'], /^text\/html/, 'HTML when the client takes no JSON')
      } else {
        t.equal(page.headers['content-type'], 'text/html', 'HTML whatever the Accept')
        t.equal(page.headers['vary'], undefined)
        const html = page.body.toString('utf8')
        t.match(html, `<a href="${wheel.url}#sha256=${wheel.sha256}" data-requires-python="&gt;=3.8,&lt;4">demo_pure-1.0.0-py3-none-any.whl</a>`)
        t.match(html, /data-yanked="broken on import">demo_pure-1\.2\.0-py3-none-any\.whl</)
        t.match(html, /data-yanked="">demo_pure-1\.3\.0-py3-none-any\.whl</)
        t.notMatch(html, /upload|metadata/i, 'no upload time, no .metadata announced')
      }
      const metadata = await httpGet(t, index, '/files/demo_pure-1.0.0-py3-none-any.whl.metadata')
      t.equal(metadata.status, 200)
      t.equal(sha256(metadata.body), wheel.metadataSha256)
      t.match(metadata.body.toString('utf8'), /^Metadata-Version: 2\.1\nName: demo-pure\nVersion: 1\.0\.0\n/)
      const file = await httpGet(t, index, '/files/demo_pure-1.0.0-py3-none-any.whl')
      t.equal(file.headers['content-type'], 'application/octet-stream')
      t.equal(sha256(file.body), wheel.sha256)
      const redirect = await httpGet(t, index, '/simple/Demo_Pure/')
      t.equal(redirect.status, 301)
      t.equal(redirect.headers['location'], '/simple/demo-pure/')
      t.equal((await httpGet(t, index, '/simple/nothing-here/')).status, 404)
    })

    t.test('pip download resolves the newest installable version and checks its sha256', async (t) => {
      const ws = await createPipWorkspace(t)
      const before = index.requests.length
      const run = await pipDownload(ws, target, ['Demo.Pure'], { noDeps: true })
      t.same(run.files, ['demo_pure-1.1.0-py3-none-any.whl'], 'not the yanked 1.2.0/1.3.0, not 2.0.0 (requires-python >=4)')
      const bytes = await readFile(join(ws.downloadDir, 'demo_pure-1.1.0-py3-none-any.whl'))
      t.equal(sha256(bytes), index.dist('demo_pure-1.1.0-py3-none-any.whl').sha256)
      const page = index.requests.slice(before).find((r) => r.path.startsWith('/simple/'))
      t.equal(page?.path, '/simple/demo-pure/', 'pip asks for the normal name itself: no redirect')
      t.equal(page?.accept, PIP_PAGE_ACCEPT)
      t.match(page?.userAgent, /^pip\//)
      t.equal(page?.authorization, undefined)
      t.notMatch(run.stderr, /not a trusted or secure host/, '127.0.0.1 over http needs no --trusted-host')
    })

    t.test('a file whose bytes do not match the advertised sha256 is refused', async (t) => {
      const ws = await createPipWorkspace(t)
      const run = await pipDownload(ws, target, ['bad-hash'], { noDeps: true, allowFailure: true })
      t.equal(run.exitCode, 1)
      t.match(run.stderr, /THESE PACKAGES DO NOT MATCH THE HASHES/)
      t.match(run.stderr, index.dist('bad_hash-1.0.0-py3-none-any.whl').sha256, 'pip names the digest it got')
      t.same(run.files, [])
    })

    t.test('pip install --target installs a wheel and its dependency', async (t) => {
      const ws = await createPipWorkspace(t)
      const run = await pipInstall(ws, target, ['with-dep'])
      t.same(run.installed, [{ name: 'demo_pure', version: '1.1.0' }, { name: 'with_dep', version: '1.0.0' }])
      t.ok(run.files.includes('demo_pure.py') && run.files.includes('with_dep.py'), 'the modules are in the target folder')
    })

    t.test('a yanked version is skipped unless pinned with ==', async (t) => {
      const ws = await createPipWorkspace(t)
      const ranged = await pipDownload(ws, target, ['demo-pure>=1.2'], { noDeps: true, allowFailure: true })
      t.equal(ranged.exitCode, 1, 'only yanked (and requires-python >=4) candidates: none selected')
      t.match(ranged.stderr, /No matching distribution found for demo-pure>=1\.2/)
      const pinned = await pipDownload(ws, target, ['demo-pure==1.2.0'], { noDeps: true })
      t.same(pinned.files, ['demo_pure-1.2.0-py3-none-any.whl'])
      t.match(pinned.stderr, /yanked version[\s\S]*Reason for being yanked: broken on import/)
    })

    t.test('an sdist is fetched and built when binaries are refused', async (t) => {
      const ws = await createPipWorkspace(t)
      // Offline build: the system setuptools (Debian's python3-pip depends on it), never one from the index.
      const run = await pipDownload(ws, target, ['demo-pure<1.1'], { noDeps: true, noBinary: ':all:', extraArgs: ['--no-build-isolation'] })
      t.same(run.files, ['demo_pure-1.0.0.tar.gz'])
      t.equal(sha256(await readFile(join(ws.downloadDir, 'demo_pure-1.0.0.tar.gz'))), index.dist('demo_pure-1.0.0.tar.gz').sha256)
    })

    if (variant.https) {
      t.test('the https index is refused without its CA', async (t) => {
        const ws = await createPipWorkspace(t)
        const run = await pipDownload(ws, { indexUrl: index.simpleUrl }, ['demo-pure'], { noDeps: true, allowFailure: true })
        t.equal(run.exitCode, 1)
        t.match(`${run.stdout}\n${run.stderr}`, /CERTIFICATE_VERIFY_FAILED/)
      })
    }
  })
}

t.test('PEP 658 metadata: pip fetches the .metadata file when the page names it the way pip reads it', async (t) => {
  const version = await pipVersion(t)
  const html = await startFixtureIndex(t, { mode: 'html', metadataKeys: 'core-and-legacy', projects: PROJECTS })
  const ws = await createPipWorkspace(t)
  const run = await pipInstall(ws, { indexUrl: html.simpleUrl }, ['with-dep'])
  t.same(run.installed, [{ name: 'demo_pure', version: '1.1.0' }, { name: 'with_dep', version: '1.0.0' }])
  t.ok(html.requests.some((r) => r.path === '/files/with_dep-1.0.0-py3-none-any.whl.metadata'), 'data-dist-info-metadata="sha256=..." is read')

  const json = await startFixtureIndex(t, { mode: 'json', metadataKeys: 'core', projects: PROJECTS })
  await pipInstall(ws, { indexUrl: json.simpleUrl }, ['with-dep'])
  if (/^23\.0\./.test(version)) {
    t.notOk(json.requests.some((r) => r.path.endsWith('.metadata')), `pip ${version} ignores the JSON core-metadata key (PEP 714 came in pip 23.1)`)
  }

  // pip 22.3 to 23.0 take a JSON `dist-info-metadata` for a string and crash
  // on PEP 691's object form (why PEP 714 renamed the key): an index that
  // serves Debian 12's pip MUST NOT put `dist-info-metadata` in JSON.
  const legacy = await startFixtureIndex(t, { mode: 'json', metadataKeys: 'core-and-legacy', projects: PROJECTS })
  const crashed = await pipInstall(ws, { indexUrl: legacy.simpleUrl }, ['with-dep'], { allowFailure: true })
  if (/^23\.0\./.test(version)) {
    t.equal(crashed.exitCode, 2, `pip ${version} crashes`)
    t.match(crashed.stderr, /TypeError: unhashable type: 'dict'/)
  } else {
    t.equal(crashed.exitCode, 0, `pip ${version} reads the object form`)
  }
})

t.test('real pages are served verbatim', async (t) => {
  const pages = {
    django: 'pep503-html/dependabot-core/pypi_simple_response_django.html',
    argset: 'pep691-json/pypi-simple/argset-700.json',
  }
  const index = await startFixtureIndex(t, { mode: 'html', pages })
  const django = await httpGet(t, index, '/simple/django/')
  t.equal(django.headers['content-type'], 'text/html')
  t.same(django.body, await readFile(sharedDataPath('pypi-simple', pages.django)))
  const argset = await httpGet(t, index, '/simple/argset/')
  t.equal(argset.headers['content-type'], PEP691_JSON)
  t.same(argset.body, await readFile(sharedDataPath('pypi-simple', pages.argset)))
  t.same(index.fileRequests(), [], 'nothing but pages')
})

t.test('stop closes the server and is idempotent', async (t) => {
  const index = await startFixtureIndex(t, { mode: 'json', projects: [{ name: 'one', releases: [{ version: '1.0' }] }] })
  t.equal((await httpGet(t, index, '/simple/one/')).status, 200)
  await index.stop()
  await index.stop()
  await t.rejects(httpGet(t, index, '/simple/one/'), { code: 'ECONNREFUSED' })
})
