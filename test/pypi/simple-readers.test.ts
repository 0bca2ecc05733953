/**
 * The PEP 503 HTML and PEP 691 JSON readers against the real fixture pages
 * and against hand-made pages for the bounds and faults.
 */
import t from 'tap'

import { isServiceError } from '../../engine/errors.js'
import { readSimpleHtml } from '../../engine/pypi/simple-html-reader.js'
import { readSimpleJson } from '../../engine/pypi/simple-json-reader.js'
import { FIXTURE_PAGES, fixtureBytes } from './fixture-pages.js'

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const html = (path: string, project: string) => readSimpleHtml(fixtureBytes(path), project, `https://index.example/simple/${project}/`)
const json = (path: string, project: string) => readSimpleJson(fixtureBytes(path), project, `https://index.example/simple/${project}/`)

t.test('every fixture page reads', async (t) => {
  for (const page of FIXTURE_PAGES) {
    const read = page.format === 'json' ? readSimpleJson : readSimpleHtml
    const { project } = read(fixtureBytes(page.path), page.project, page.pageUrl)
    t.ok(project.files.length > 0, page.path)
    for (const f of project.files) t.match(f.url, /^https?:\/\/[^#]+$/, `${page.path}: absolute URL without fragment`)
  }
})

t.test('PEP 503: the Django page', async (t) => {
  const { project, droppedFiles } = html('pep503-html/dependabot-core/pypi_simple_response_django.html', 'django')
  t.equal(project.files.length, 469)
  t.equal(droppedFiles, 0)
  t.equal(project.apiVersion, '1.0')
  t.equal(project.name, 'django')
  t.equal(project.files.filter((f) => f.requiresPython !== undefined).length, 202)
  t.ok(project.files.some((f) => f.requiresPython === '>=3.6'), 'entity-decoded')
  const first = project.files[0]
  // The page's absolute link is kept as written; its host is the fixture's, not named here (upstreams are configuration).
  t.same(Object.keys(first ?? {}).sort(), ['filename', 'hashes', 'url'])
  t.equal(first?.filename, 'Django-1.1.3.tar.gz')
  t.match(first?.url, /^https:\/\/[a-z0-9.-]+\/packages\/8f\/1f\/74aa91b56dea5847b62e11ce6737db82c6446561bddc20ca80fa5df025cc\/Django-1\.1\.3\.tar\.gz$/)
  t.not(new URL(first?.url ?? 'https://x/').host, 'index.example', 'absolute: not resolved against the page')
  t.same(first?.hashes, { sha256: '0e5034cf8046ba77c62e95a45d776d2c59998b26f181ceaf5cec516115e3f85a' })
  t.notOk(project.files.some((f) => f.size !== undefined || f.uploadTime !== undefined), 'HTML carries no PEP 700 data')
})

t.test('PEP 503: yanked, relative links, multi-line anchors, md5 fragments', async (t) => {
  const yanked = html('pep503-html/dependabot-core/pypi_simple_response_yanked.html', 'luigi').project
  const y = yanked.files.filter((f) => f.yanked !== undefined)
  t.same(y.map((f) => [f.filename, f.yanked]), [['luigi-2.1.1.tar.gz', true], ['luigi-2.5.0.tar.gz', true], ['luigi-2.6.0.tar.gz', 'Some reason']])
  t.equal(y[0]?.url, 'https://index.example/packages/47/ef/50c8d8b71b6613bb17088cf7b02319dd907d8bd05f6280e27a4199c68402/luigi-2.1.1.tar.gz', '../../ resolved against the page')
  t.same(y[0]?.hashes, { md5: 'f05aab98f4212d807b5ab348239058ec' })
  const multi = html('pep503-html/dependabot-core/pypi_simple_response_multiline.html', 'luigi').project
  t.equal(multi.files[0]?.filename, 'luigi-1.0.9.tar.gz', 'text trimmed')
  const futures = html('pep503-html/poetry/futures-partial-yank.html', 'futures').project
  t.same(futures.files.map((f) => [f.yanked, f.requiresPython]), [[true, '>=2.6, <3'], [undefined, '>=2.6, <3']])
})

t.test('PEP 503: meta tags (PEP 629, 708, 792) and a devpi web page', async (t) => {
  const qypi = html('pep503-html/pypi-simple/qypi-708.html', 'qypi').project
  t.equal(qypi.apiVersion, '1.2')
  t.same(qypi.projectStatus, { status: 'deprecated', reason: 'Dev is tired of project' })
  t.same(qypi.tracks, ['https://tracks.package/pypi/qypi/', 'https://test.tracks.package/pypi/qypi/'])
  t.same(qypi.alternateLocations, ['https://alt.package/pypi/qypi/', 'https://test.alt.package/pypi/qypi/'])
  const devpi = html('pep503-html/dependabot-core/pypi_simple_response_devpi.html', 'luigi')
  t.equal(devpi.project.files.length, 55, 'anchors with a usable name; the caller drops those without a version')
  t.ok(devpi.droppedFiles > 0, 'fragment-only and path-like anchors dropped')
})

t.test('PEP 503: hand-made page (base, metadata, provenance, entities, comments, scripts)', async (t) => {
  const page = `<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.1"><base href="https://files.example/root/">
  <SCRIPT>var x = "<a href='evil-1.0.tar.gz'>evil-1.0.tar.gz</a>"</Script></head><body>
  <!-- <a href="commented-1.0.tar.gz">commented-1.0.tar.gz</a> -->
  <a href="p/pkg-1.0-py3-none-any.whl#sha256=AABBCCDDEEFF0011" data-core-metadata="sha256=0011223344556677" data-provenance="/prov/pkg-1.0" data-requires-python='&gt;=3.8,&#x3c;4'>pkg-1.0-py3-none-any.whl</a>
  <a href=p/pkg-1.0.tar.gz data-dist-info-metadata=true data-yanked="">pkg-1.0.tar.gz</a>
  <A HREF="javascript:alert(1)">pkg-2.0.tar.gz</A>
  <a href="p/pkg-3.0.tar.gz" data-core-metadata="false"><span>pkg-3.0.tar.gz</span></a>
  <a href="p/pkg%2D4.0.tar.gz"></a>
  </body></html>`
  const { project, droppedFiles } = readSimpleHtml(enc(page), 'pkg', 'https://index.example/simple/pkg/')
  t.equal(project.apiVersion, '1.1')
  t.equal(droppedFiles, 1, 'the javascript: link')
  t.same(project.files.map((f) => f.filename), ['pkg-1.0-py3-none-any.whl', 'pkg-1.0.tar.gz', 'pkg-3.0.tar.gz', 'pkg-4.0.tar.gz'])
  const [wheel, sdist, third] = project.files
  t.same(wheel, {
    filename: 'pkg-1.0-py3-none-any.whl',
    url: 'https://files.example/root/p/pkg-1.0-py3-none-any.whl',
    hashes: { sha256: 'aabbccddeeff0011' },
    requiresPython: '>=3.8,<4',
    coreMetadata: { sha256: '0011223344556677' },
    provenance: 'https://files.example/prov/pkg-1.0',
  })
  t.same(sdist?.coreMetadata, {}, 'true: offered without a digest')
  t.equal(sdist?.yanked, true)
  t.equal(third?.coreMetadata, undefined, '"false": not offered')
})

t.test('PEP 691: PEP 700 fields, yanked, metadata aliases, relative URLs, PEP 708', async (t) => {
  const argset = json('pep691-json/pypi-simple/argset-700.json', 'argset').project
  t.equal(argset.files[0]?.size, 5219)
  t.equal(argset.files[0]?.uploadTime, '2021-06-05T00:15:37.534150Z', 'verbatim')
  t.equal(argset.files[0]?.uploadMs, Date.UTC(2021, 5, 5, 0, 15, 37, 534))
  t.same(argset.versions, ['0.1.0'])
  t.equal(argset.files[0]?.yanked, undefined, 'yanked: false is not yanked')
  const yanked = json('pep691-json/pypi-simple/yanked.json', 'yanked').project
  t.same(yanked.files.map((f) => [f.yanked, f.requiresPython]), [[true, undefined], ['not good', undefined]])
  const isort = json('pep691-json/poetry/isort-metadata.json', 'isort-metadata').project
  t.same(isort.files[0]?.coreMetadata, { sha256: 'e360bf0ed8a06390513d50dd5b7e9d635c789853a93b84163f9de4ae0647580c' }, 'dist-info-metadata alias')
  const relative = readSimpleJson(fixtureBytes('pep691-json/poetry/relative.json'), 'poetry', 'https://index.example/simple/poetry/').project
  t.equal(relative.files[0]?.url, 'https://index.example/simple/poetry/poetry-0.1.0-py3-none-any.whl')
  t.equal(relative.files[0]?.coreMetadata, undefined)
  const a708 = json('pep691-json/pypi-simple/argset-708.json', 'argset').project
  t.equal(a708.apiVersion, '1.2')
  t.same(a708.tracks, ['https://tracks.package/pypi/argset/', 'https://test.tracks.package/pypi/argset'])
  const demo = json('pep691-json/poetry/demo.json', 'demo').project
  t.same(demo.files[0]?.hashes, {}, 'a file without hashes is read with none')
  t.same(demo.projectStatus, { status: 'active' })
})

t.test('faults are typed errors', async (t) => {
  const url = 'https://index.example/simple/pkg/'
  const code = (f: () => unknown): string | undefined => {
    try {
      f()
    } catch (e) {
      return isServiceError(e) ? e.code : 'not a ServiceError'
    }
    return undefined
  }
  const limits = { maxBytes: 100, maxFiles: 2 }
  t.equal(code(() => readSimpleJson(enc(' '.repeat(101)), 'pkg', url, limits)), 'RESPONSE_TOO_LARGE')
  t.equal(code(() => readSimpleHtml(enc(' '.repeat(101)), 'pkg', url, limits)), 'RESPONSE_TOO_LARGE')
  t.equal(code(() => readSimpleJson(enc('{"meta":{"api-version":"1.0"},"files":[{},{},{}]}'), 'pkg', url, limits)), 'STRUCTURE_LIMIT')
  t.equal(code(() => readSimpleHtml(enc('<a href=a>a</a><a href=b>b</a><a href=c>c</a>'), 'pkg', url, limits)), 'STRUCTURE_LIMIT')
  t.equal(code(() => readSimpleJson(enc('{"files":'), 'pkg', url)), 'UPSTREAM_DECODE')
  t.equal(code(() => readSimpleJson(enc('[]'), 'pkg', url)), 'UPSTREAM_DECODE')
  t.equal(code(() => readSimpleJson(enc('{"meta":{"api-version":"1.0"},"files":{}}'), 'pkg', url)), 'UPSTREAM_DECODE')
  t.equal(code(() => readSimpleJson(enc('{"meta":{"api-version":"2.0"},"files":[]}'), 'pkg', url)), 'UPSTREAM_DECODE', 'PEP 629 major')
  t.equal(code(() => readSimpleHtml(enc('<meta name="pypi:repository-version" content="2.0">'), 'pkg', url)), 'UPSTREAM_DECODE')
  t.equal(code(() => readSimpleJson(new Uint8Array([0x7b, 0xff, 0x7d]), 'pkg', url)), 'UPSTREAM_DECODE', 'not UTF-8')
  t.equal(code(() => readSimpleJson(enc('{"name":"other","meta":{"api-version":"1.0"},"files":[]}'), 'pkg', url)), 'UPSTREAM_WRONG_PACKAGE')
  t.equal(code(() => readSimpleJson(enc('{"name":"Pkg","meta":{"api-version":"1.9"},"files":[]}'), 'PKG', url)), undefined, 'same project, newer minor')
  const odd = readSimpleJson(enc(JSON.stringify({
    meta: { 'api-version': '1.1' },
    files: [
      { filename: '../x-1.0.tar.gz', url: 'x', hashes: {} },
      { filename: 'x-1.0.tar.gz', url: 'ftp://h/x-1.0.tar.gz', hashes: {} },
      { filename: 'x-1.0.tar.gz', url: 'x-1.0.tar.gz', hashes: { SHA256: 'ABCDEF0123456789', bad: 'zz', 'no way': 'abcdef01' }, size: -1, 'upload-time': 'yesterday' },
      'nonsense',
    ],
  })), 'x', url)
  t.equal(odd.droppedFiles, 3)
  t.same(odd.project.files, [{ filename: 'x-1.0.tar.gz', url: 'https://index.example/simple/pkg/x-1.0.tar.gz', hashes: { sha256: 'abcdef0123456789' } }],
    'bad size and upload time dropped, digests normalised')
})
