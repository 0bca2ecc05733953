/**
 * Renderers and the file URL scheme: a page rendered and read back (both
 * formats) is the page read from the upstream, with every URL under the
 * proxy and decoding back to the upstream's.
 */
import t from 'tap'

import { fileUrl, metadataUrl, parseFileRequestPath, provenanceUrl } from '../../engine/pypi/file-url.js'
import { readSimpleHtml } from '../../engine/pypi/simple-html-reader.js'
import { readSimpleJson } from '../../engine/pypi/simple-json-reader.js'
import type { SimpleFile, SimpleProject } from '../../engine/pypi/simple-model.js'
import { claimableApiVersion, renderSimpleHtml, renderSimpleJson } from '../../engine/pypi/simple-render.js'
import { FIXTURE_PAGES, fixtureBytes } from './fixture-pages.js'

const BASE = 'http://127.0.0.1:8080'
const enc = (s: string): Uint8Array => new TextEncoder().encode(s)

function pathOf(url: string): string {
  const u = new URL(url)
  t.equal(u.origin, BASE)
  return u.pathname
}

/** The file as the proxy serves it, with its URLs replaced by the upstream ones they decode to. */
function unwrap(file: SimpleFile): SimpleFile {
  const req = parseFileRequestPath(pathOf(file.url))
  if (req === undefined || req.kind !== 'file') throw new Error(`not a proxy file URL: ${file.url}`)
  const out: Record<string, unknown> = { ...file, url: req.upstreamUrl }
  if (file.provenance !== undefined) {
    const p = parseFileRequestPath(pathOf(file.provenance))
    if (p === undefined || p.kind !== 'provenance') throw new Error('not a provenance URL')
    out.provenance = p.upstreamUrl
  }
  return out as unknown as SimpleFile
}

/** HTML carries one digest; PEP 700 fields are JSON-only. */
function htmlView(f: SimpleFile): SimpleFile {
  const { size: _s, uploadTime: _u, uploadMs: _m, ...rest } = f
  const pick = (h: Readonly<Record<string, string>>) => {
    const k = ['sha256', 'sha512', 'sha384', 'sha3_512', 'sha3_384', 'sha3_256', 'blake2b', 'sha224', 'sha1', 'md5'].find((x) => h[x] !== undefined) ?? Object.keys(h)[0]
    return k === undefined ? {} : { [k]: h[k] as string }
  }
  const out: Record<string, unknown> = { ...rest, hashes: pick(f.hashes) }
  if (f.coreMetadata !== undefined) out.coreMetadata = pick(f.coreMetadata)
  return out as unknown as SimpleFile
}

t.test('every fixture page: render JSON and HTML, read back, same files', async (t) => {
  for (const page of FIXTURE_PAGES) {
    const read = page.format === 'json' ? readSimpleJson : readSimpleHtml
    const { project } = read(fixtureBytes(page.path), page.project, page.pageUrl)
    const json = renderSimpleJson(project, { baseUrl: BASE })
    const backJson = readSimpleJson(enc(json), page.project, `${BASE}/py/simple/${page.project}/`)
    t.equal(backJson.droppedFiles, 0)
    t.same(backJson.project.files.map(unwrap), project.files, `${page.path} via JSON`)
    t.same(backJson.project.projectStatus, project.projectStatus)
    t.equal(backJson.project.apiVersion, claimableApiVersion(project.files))
    const html = renderSimpleHtml(project, { baseUrl: `${BASE}/` })
    const backHtml = readSimpleHtml(enc(html), page.project, `${BASE}/py/simple/${page.project}/`)
    t.equal(backHtml.droppedFiles, 0)
    t.same(backHtml.project.files.map(unwrap), project.files.map(htmlView), `${page.path} via HTML`)
    t.same(backHtml.project.projectStatus, project.projectStatus)
    t.notOk(json.includes('tracks.package') || html.includes('tracks.package'), 'PEP 708 locations are not relayed')
  }
})

t.test('api-version: 1.4 only when every file has size and upload-time', async (t) => {
  const argset = readSimpleJson(fixtureBytes('pep691-json/pypi-simple/argset-700.json'), 'argset', 'https://index.example/simple/argset/').project
  const full = JSON.parse(renderSimpleJson(argset, { baseUrl: BASE })) as { meta: { 'api-version': string }; versions: string[]; name: string }
  t.equal(full.meta['api-version'], '1.4')
  t.same(full.versions, ['0.1.0'])
  const [first, second] = argset.files as [SimpleFile, SimpleFile]
  const { uploadTime: _u, uploadMs: _m, ...noTime } = second
  const partial: SimpleProject = { ...argset, files: [first, noTime] }
  t.equal(JSON.parse(renderSimpleJson(partial, { baseUrl: BASE })).meta['api-version'], '1.0')
  t.match(renderSimpleHtml(partial, { baseUrl: BASE }), '<meta name="pypi:repository-version" content="1.0">')
  const django = readSimpleHtml(fixtureBytes('pep503-html/dependabot-core/pypi_simple_response_django.html'), 'django', 'https://index.example/simple/django/').project
  const out = JSON.parse(renderSimpleJson(django, { baseUrl: BASE })) as { meta: { 'api-version': string }; versions: string[]; name: string }
  t.equal(out.meta['api-version'], '1.0', 'HTML upstream: no PEP 700 data, no 1.4 claim')
  t.equal(out.name, 'django', 'the normalised name')
  t.ok(out.versions.includes('1.1.3') && out.versions.includes('3.2'), 'versions derived from file names')
})

t.test('HTML escaping', async (t) => {
  const project: SimpleProject = {
    name: 'evil',
    apiVersion: '1.0',
    projectStatus: { status: 'deprecated', reason: '"><script>alert(1)</script>' },
    files: [{
      filename: 'evil-1.0&<b>.tar.gz',
      url: 'https://files.example/evil-1.0.tar.gz?a=1&b="2"',
      hashes: { sha256: 'abcdef0123456789' },
      requiresPython: '>=3.8,<4"\' onmouseover=x',
      yanked: '<reason> & "quotes"',
      coreMetadata: {},
    }],
  }
  const html = renderSimpleHtml(project, { baseUrl: BASE })
  t.notMatch(html, /<script>|<b>|["'] onmouseover/)
  const back = readSimpleHtml(enc(html), 'evil', `${BASE}/py/simple/evil/`).project
  const file = back.files[0] as SimpleFile
  t.equal(file.filename, project.files[0]?.filename)
  t.equal(file.requiresPython, project.files[0]?.requiresPython)
  t.equal(file.yanked, project.files[0]?.yanked)
  t.same(file.coreMetadata, {})
  t.same(back.projectStatus, project.projectStatus)
  t.equal(parseFileRequestPath(pathOf(file.url))?.upstreamUrl, 'https://files.example/evil-1.0.tar.gz?a=1&b=%222%22')
})

t.test('file URL scheme: reversible, strict', async (t) => {
  const upstream = 'https://files.example/packages/ab/cd/Django-4.2.tar.gz'
  const url = fileUrl(BASE, 'django', upstream, 'Django-4.2.tar.gz')
  const path = pathOf(url)
  t.match(path, /^\/py\/files\/django\/[A-Za-z0-9_-]+\/Django-4\.2\.tar\.gz$/, 'file name is the last segment')
  t.same(parseFileRequestPath(path), { kind: 'file', project: 'django', filename: 'Django-4.2.tar.gz', upstreamUrl: upstream })
  t.same(parseFileRequestPath(`${path}.metadata`), {
    kind: 'metadata', project: 'django', filename: 'Django-4.2.tar.gz', upstreamUrl: `${upstream}.metadata`,
  })
  t.equal(metadataUrl('https://h/a/x-1.whl?sig=1'), 'https://h/a/x-1.whl.metadata?sig=1', 'PEP 658 appends to the path')
  const prov = pathOf(provenanceUrl(BASE, 'django', 'https://index.example/integrity/django/4.2/Django-4.2.tar.gz/provenance', 'Django-4.2.tar.gz'))
  t.equal(parseFileRequestPath(prov)?.kind, 'provenance')
  const token = path.split('/')[4] as string
  for (const bad of [
    '/py/files/Django/' + token + '/Django-4.2.tar.gz', // not the normal name
    '/py/files/django/' + token + '=/Django-4.2.tar.gz', // padding: not canonical
    '/py/files/django/' + Buffer.from('file:///etc/passwd').toString('base64url') + '/passwd',
    '/py/files/django/' + Buffer.from('https://h/x#frag').toString('base64url') + '/x',
    '/py/files/django/' + token + '/..',
    '/py/files/django/' + token + '/a%2Fb',
    '/py/files/django/' + token + '/%E0%A4%A',
    '/py/files/django/' + token,
    '/py/files/django/' + token + '/x/y',
    '/js/files/django/' + token + '/x',
  ]) t.equal(parseFileRequestPath(bad), undefined, bad)
})
