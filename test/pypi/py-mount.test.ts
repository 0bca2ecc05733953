/**
 * The `/py` mount's routes on the real proxy role (issue 16): a public
 * upstream over https speaking PEP 691 JSON, a private one over http
 * speaking PEP 503 HTML (the real django page of ../shared/data), the page
 * negotiation, ETag/304, the redirect of non-normal names, the gate per
 * file, and the file, metadata and refusal answers of the file routes.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { fileUrl } from '../../engine/pypi/file-url.js'
import { startTestProxy } from '../helpers/proxy.js'
import { FIXTURE_ROOT } from './fixture-pages.js'

interface Served { readonly status: number; readonly type: string; readonly body: Buffer }

type Routes = Map<string, Served>

function handler(routes: Routes, seen: string[]) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    seen.push(`${req.url} ${req.headers.accept ?? ''}`)
    const hit = routes.get(req.url ?? '')
    if (hit === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no')
      return
    }
    res.writeHead(hit.status, { 'content-type': hit.type, 'content-length': String(hit.body.byteLength) }).end(hit.body)
  }
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

t.test('the py mount over a JSON public index and an HTML private index', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const publicRoutes: Routes = new Map()
  const publicSeen: string[] = []
  const pub = createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, handler(publicRoutes, publicSeen))
  const pubPort = await listen(pub)
  t.teardown(() => new Promise<void>((resolve) => pub.close(() => resolve())))
  const privateRoutes: Routes = new Map()
  const privateSeen: string[] = []
  const priv = createServer(handler(privateRoutes, privateSeen))
  const privPort = await listen(priv)
  t.teardown(() => new Promise<void>((resolve) => priv.close(() => resolve())))

  const pubBase = `https://127.0.0.1:${pubPort}`
  const oldSdist = Buffer.from('an old sdist, byte for byte')
  const oldMetadata = Buffer.from('Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n')
  const newWheel = Buffer.from('a wheel uploaded just now')
  const unhashed = Buffer.from('a wheel without a digest')
  const old = '2020-01-01T00:00:00.000000Z'
  const now = new Date().toISOString()
  publicRoutes.set('/simple/demo/', {
    status: 200,
    type: 'application/vnd.pypi.simple.v1+json',
    body: Buffer.from(JSON.stringify({
      meta: { 'api-version': '1.1' },
      name: 'demo',
      versions: ['0.9', '1.0', '2.0'],
      files: [
        { filename: 'demo-1.0.tar.gz', url: `${pubBase}/files/demo-1.0.tar.gz`, hashes: { sha256: sha256(oldSdist) }, size: oldSdist.byteLength, 'upload-time': old, 'core-metadata': { sha256: sha256(oldMetadata) }, 'requires-python': '>=3.8' },
        { filename: 'demo-2.0-py3-none-any.whl', url: `${pubBase}/files/demo-2.0-py3-none-any.whl`, hashes: { sha256: sha256(newWheel) }, size: newWheel.byteLength, 'upload-time': now },
        { filename: 'demo-0.9-py3-none-any.whl', url: `${pubBase}/files/demo-0.9-py3-none-any.whl`, hashes: {}, size: unhashed.byteLength, 'upload-time': old, yanked: 'broken' },
      ],
    })),
  })
  publicRoutes.set('/files/demo-1.0.tar.gz', { status: 200, type: 'application/octet-stream', body: oldSdist })
  publicRoutes.set('/files/demo-1.0.tar.gz.metadata', { status: 200, type: 'application/octet-stream', body: oldMetadata })
  publicRoutes.set('/files/demo-2.0-py3-none-any.whl', { status: 200, type: 'application/octet-stream', body: newWheel })
  publicRoutes.set('/files/demo-0.9-py3-none-any.whl', { status: 200, type: 'application/octet-stream', body: unhashed })
  const django = readFileSync(join(FIXTURE_ROOT, 'pep503-html/dependabot-core/pypi_simple_response_django.html'))
  privateRoutes.set('/simple/django/', { status: 200, type: 'text/html', body: django })
  publicRoutes.set('/simple/django/', { status: 200, type: 'application/vnd.pypi.simple.v1+json', body: Buffer.from(JSON.stringify({ meta: { 'api-version': '1.1' }, name: 'django', files: [{ filename: 'Django-99.0.tar.gz', url: `${pubBase}/files/Django-99.0.tar.gz`, hashes: { sha256: '00' }, 'upload-time': old }] })) })

  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        py: {
          upstreams: {
            public: { url: `${pubBase}/simple/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] },
            private: { url: `http://127.0.0.1:${privPort}/simple/` },
          },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 604800 }],
        },
      },
    },
  })
  const JSON_TYPE = 'application/vnd.pypi.simple.v1+json'

  t.test('no project listing; non-normal names redirect to the normal one', async (t) => {
    const index = await proxy.get('/py/simple/')
    t.equal(index.status, 404)
    t.match(index.json(), { error: /lists no projects/ })
    const redirect = await proxy.get('/py/simple/Demo_Pkg/?format=application/vnd.pypi.simple.v1+json')
    t.equal(redirect.status, 301)
    t.equal(redirect.headers['location'], '/py/simple/demo-pkg/?format=application/vnd.pypi.simple.v1+json')
    const slashless = await proxy.get('/py/simple/demo')
    t.equal(slashless.status, 301)
    t.equal(slashless.headers['location'], '/py/simple/demo/')
    t.equal((await proxy.get('/py/simple/not%20a%20name/')).status, 404)
    t.equal((await proxy.get('/py/elsewhere')).status, 404)
    const upload = await proxy.fetch('POST', '/py/', { body: 'x' })
    t.equal(upload.status, 405, 'no uploads')
  })

  t.test('the JSON page: gated per file, every URL under the proxy, Vary, ETag and 304', async (t) => {
    const res = await proxy.get('/py/simple/demo/', { accept: JSON_TYPE })
    t.equal(res.status, 200)
    t.equal(res.headers['content-type'], JSON_TYPE)
    t.equal(res.headers['vary'], 'Accept')
    t.match(res.headers['etag'], /^"/)
    const page = res.json() as { meta: Record<string, string>, files: { filename: string, url: string, hashes: Record<string, string>, yanked?: unknown, 'upload-time'?: string, 'core-metadata'?: unknown, 'requires-python'?: string }[], versions: string[] }
    t.same(page.files.map((f) => f.filename).sort(), ['demo-0.9-py3-none-any.whl', 'demo-1.0.tar.gz'], 'the wheel uploaded now waits in quarantine')
    t.same(page.versions, ['0.9', '1.0'], 'versions lists only what is offered')
    t.equal(page.meta['api-version'], '1.4', 'size and upload-time on every file')
    for (const f of page.files) t.ok(f.url.startsWith(`${proxy.url}/py/files/demo/`), f.url)
    const sdist = page.files.find((f) => f.filename === 'demo-1.0.tar.gz')
    t.equal(sdist?.['upload-time'], old, 'upload-time verbatim')
    t.equal(sdist?.['requires-python'], '>=3.8')
    t.same(sdist?.['core-metadata'], { sha256: sha256(oldMetadata) })
    t.notOk(res.body.toString().includes('dist-info-metadata'), 'no legacy key in JSON: its object form crashes pip 22.3 to 23.0')
    t.equal(page.files.find((f) => f.filename.startsWith('demo-0.9'))?.yanked, 'broken', 'the yank and its reason')
    t.ok(publicSeen.some((line) => line.startsWith('/simple/demo/ application/vnd.pypi.simple.v1+json')), 'JSON asked of the upstream first')

    const again = await proxy.get('/py/simple/demo/', { accept: JSON_TYPE, 'if-none-match': String(res.headers['etag']) })
    t.equal(again.status, 304)
    const html = await proxy.get('/py/simple/demo/', { accept: 'text/html' })
    t.equal(html.status, 200)
    t.match(html.headers['content-type'], /^text\/html/)
    t.not(html.headers['etag'], res.headers['etag'], 'each format its own ETag')
    t.match(html.body.toString(), /<a href="http:\/\/127\.0\.0\.1:\d+\/py\/files\/demo\/[A-Za-z0-9_-]+\/demo-1\.0\.tar\.gz#sha256=/)
    t.equal((await proxy.get('/py/simple/demo/', { accept: 'image/png' })).status, 406)
    t.equal((await proxy.get('/py/simple/no-such-project/', { accept: JSON_TYPE })).status, 404)
  })

  t.test('files stream through the gate; refusals explain; metadata streams', async (t) => {
    const page = (await proxy.get('/py/simple/demo/', { accept: JSON_TYPE })).json() as { files: { filename: string, url: string }[] }
    const sdistUrl = page.files.find((f) => f.filename === 'demo-1.0.tar.gz')?.url ?? ''
    const path = new URL(sdistUrl).pathname
    const file = await proxy.get(path)
    t.equal(file.status, 200)
    t.same(file.body, oldSdist, 'byte for byte')
    const metadata = await proxy.get(`${path}.metadata`)
    t.equal(metadata.status, 200)
    t.same(metadata.body, oldMetadata)

    const quarantined = new URL(fileUrl(proxy.url, 'demo', `${pubBase}/files/demo-2.0-py3-none-any.whl`, 'demo-2.0-py3-none-any.whl')).pathname
    const refused = await proxy.get(quarantined)
    t.equal(refused.status, 403)
    t.match(refused.json(), { error: /2\.0/ }, 'the refusal names the version')
    const noDigest = await proxy.get(new URL(page.files.find((f) => f.filename.startsWith('demo-0.9'))?.url ?? '').pathname)
    t.equal(noDigest.status, 403, 'no usable digest: refused by the integrity floor')
    const forged = new URL(fileUrl(proxy.url, 'demo', `${pubBase}/files/evil.whl`, 'demo-1.0-py3-none-any.whl')).pathname
    t.equal((await proxy.get(forged)).status, 404, 'a file the page does not name')
    const head = await proxy.fetch('HEAD', path)
    t.equal(head.status, 200)
    t.equal(head.body.byteLength, 0)
    // No mirror target here: a clean relay (a file or its .metadata) makes no job, so none fails and warns.
    await new Promise((resolve) => setImmediate(resolve))
    t.same(proxy.logger.records.filter((r) => r.message === 'mirror job enqueue failed'), [], 'no false enqueue warning')
  })

  t.test('a private project hides the public one; the real HTML page is read and rewritten', async (t) => {
    const res = await proxy.get('/py/simple/django/', { accept: JSON_TYPE })
    t.equal(res.status, 200)
    const page = res.json() as { files: { filename: string, url: string }[], meta: Record<string, string> }
    t.ok(page.files.length > 100, `${page.files.length} private files`)
    t.notOk(page.files.some((f) => f.filename === 'Django-99.0.tar.gz'), 'no public file')
    t.equal(page.meta['api-version'], '1.0', 'an HTML upstream states no size or upload-time: 1.4 is not claimed')
    t.ok(page.files.every((f) => f.url.startsWith(`${proxy.url}/py/files/django/`)))
    t.ok(privateSeen.some((line) => line.startsWith('/simple/django/')))
  })

  t.test('readiness reports py on its own', async (t) => {
    const ready = await proxy.get('/readyz')
    t.equal(ready.status, 200)
    t.match(ready.body.toString(), /py/)
  })
})
