/**
 * Artifact URLs follow the request's origin when `server.baseUrl` is unset
 * (issue 32 item 5). Before, they always said `http://localhost:{port}`: a
 * client that used `127.0.0.1` sent its edge token to one origin and its
 * tarball requests to another, and npm answered `E401 ... npm login`. Now
 * npm installs through either name with the token it keeps for that name
 * alone; a forged Host is refused with 400, a trusted reverse proxy's
 * X-Forwarded-Host is read, and answers are retained per origin.
 */
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { scriptRegistry } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'

const EDGE_TOKEN = 'origin-edge-token'

t.test('tarball URLs follow the request origin', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const pub = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => pub.stop())
  await scriptRegistry(pub, [
    { name: 'origin-leaf', version: '1.0.0' },
    { name: 'origin-app', version: '2.0.0', dependencies: { 'origin-leaf': '^1.0.0' } },
  ])
  // A py public index of one JSON page (PEP 691), for the py mount's file URLs.
  const pyIndex = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    const self = `https://127.0.0.1:${(pyIndex.address() as AddressInfo).port}`
    if (req.url !== '/simple/demo/') { res.writeHead(404).end(); return }
    res.writeHead(200, { 'content-type': 'application/vnd.pypi.simple.v1+json' }).end(JSON.stringify({
      meta: { 'api-version': '1.1' }, name: 'demo', versions: ['1.0'],
      files: [{ filename: 'demo-1.0.tar.gz', url: `${self}/files/demo-1.0.tar.gz`, hashes: { sha256: '00'.repeat(32) }, 'upload-time': '2020-01-01T00:00:00Z' }],
    }))
  })
  await new Promise<void>((resolve) => pyIndex.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => pyIndex.close(() => resolve())))
  const pyPort = (pyIndex.address() as AddressInfo).port
  const proxy = await startTestProxy(t, {
    unsetBaseUrl: true,
    document: {
      server: { edgeTokens: [EDGE_TOKEN], allowedHosts: ['registry.example'], trustedProxies: ['127.0.0.0/8'] },
      mounts: {
        js: {
          upstreams: { public: { url: `${pub.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
        py: {
          upstreams: { public: { url: `https://127.0.0.1:${pyPort}/simple/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
  })
  const port = proxy.port
  const auth = { authorization: `Bearer ${EDGE_TOKEN}` }
  /** A GET to the proxy on 127.0.0.1 carrying the given Host (undici sends the field as given). */
  const getAs = async (host: string, path: string, headers: Record<string, string> = {}) => {
    const res = await request(`${proxy.url}${path}`, { headers: { ...auth, ...headers, host } })
    const body = await res.body.text()
    return { status: res.statusCode, headers: res.headers, body }
  }
  const tarballOf = (body: string): string => (JSON.parse(body) as { versions: Record<string, { dist: { tarball: string } }> }).versions['1.0.0']!.dist.tarball

  for (const name of ['127.0.0.1', 'localhost']) {
    t.test(`npm through ${name}: the token it keeps for that origin reaches the tarballs`, async (t) => {
      const ws = await createClientWorkspace({ 'origin-app': '2.0.0' })
      t.teardown(() => ws.remove())
      const registry = `http://${name}:${port}/js/`
      await npmInstall(ws, { registry, authToken: EDGE_TOKEN })
      t.match(await ws.installedManifest('origin-leaf'), { version: '1.0.0' })
      const lock = JSON.parse(await readFile(join(ws.dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string }> }
      t.equal(lock.packages['node_modules/origin-leaf']?.resolved, `${registry}origin-leaf/-/origin-leaf-1.0.0.tgz`)
      t.equal(lock.packages['node_modules/origin-app']?.resolved, `${registry}origin-app/-/origin-app-2.0.0.tgz`)
    })
  }

  t.test('each origin its own answer: rendered and retained apart', async (t) => {
    const a = await getAs(`127.0.0.1:${port}`, '/js/origin-leaf')
    const b = await getAs(`localhost:${port}`, '/js/origin-leaf')
    const c = await getAs(`127.0.0.1:${port}`, '/js/origin-leaf')
    t.equal(tarballOf(a.body), `http://127.0.0.1:${port}/js/origin-leaf/-/origin-leaf-1.0.0.tgz`)
    t.equal(tarballOf(b.body), `http://localhost:${port}/js/origin-leaf/-/origin-leaf-1.0.0.tgz`)
    t.equal(c.body, a.body, 'the retained answer of the first origin, not the second\'s')
    t.not(a.headers['etag'], b.headers['etag'], 'distinct bodies, distinct tags')
    t.equal(tarballOf((await getAs('registry.example', '/js/origin-leaf')).body), 'http://registry.example/js/origin-leaf/-/origin-leaf-1.0.0.tgz', 'a name listed in server.allowedHosts')
  })

  t.test('the py mount\'s file URLs follow the same rule', async (t) => {
    const json = { accept: 'application/vnd.pypi.simple.v1+json' }
    const fileUrl = (body: string): string => (JSON.parse(body) as { files: { url: string }[] }).files[0]!.url
    t.match(fileUrl((await getAs(`localhost:${port}`, '/py/simple/demo/', json)).body), new RegExp(`^http://localhost:${port}/py/files/demo/`))
    t.match(fileUrl((await getAs(`127.0.0.1:${port}`, '/py/simple/demo/', json)).body), new RegExp(`^http://127\\.0\\.0\\.1:${port}/py/files/demo/`))
    t.equal((await getAs('evil.example', '/py/simple/demo/', json)).status, 400)
  })

  t.test('a forged Host is refused with 400 in the envelope, and nothing is rendered for it', async (t) => {
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1:${port + 1}`]) {
      const res = await getAs(host, '/js/origin-leaf')
      t.equal(res.status, 400, host)
      t.match(JSON.parse(res.body), { error: /does not answer as .*server\.allowedHosts/ }, host)
      t.notOk(res.body.includes('tarball'))
    }
  })

  t.test('a trusted reverse proxy: X-Forwarded-Proto and -Host name the origin, still held to the list', async (t) => {
    // The test's connection comes from 127.0.0.1, inside server.trustedProxies.
    const res = await getAs(`127.0.0.1:${port}`, '/js/origin-leaf', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'registry.example' })
    t.equal(tarballOf(res.body), 'https://registry.example/js/origin-leaf/-/origin-leaf-1.0.0.tgz')
    const forged = await getAs(`127.0.0.1:${port}`, '/js/origin-leaf', { 'x-forwarded-host': 'evil.example' })
    t.equal(forged.status, 400)
  })
})
