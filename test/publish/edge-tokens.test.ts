/**
 * Edge tokens on the mount (SPEC.md 5.1): 401 with the envelope and
 * `WWW-Authenticate: Bearer` without one of the configured tokens, both
 * rotated tokens valid, the probes open; npm, pnpm and yarn work unchanged
 * with the token in `.npmrc`. The edge token is never sent upstream.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { npmInstall } from '../clients/npm-client.js'
import { pnpmInstall } from '../clients/pnpm-client.js'
import { yarnInstall } from '../clients/yarn-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { OFFLINE_JS_MOUNT, startTestProxy } from '../helpers/proxy.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'

const OLD = 'edge-token-old-0123456789'
const NEW = 'edge-token-new-9876543210'

t.test('edge tokens with raw requests and with npm, pnpm and yarn', async (t) => {
  const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
  t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
  await publishFixture(priv, { name: '@acme/edge-app', version: '1.0.0', dependencies: { 'edge-util': '^1.0.0' } })
  await publishFixture(pub, { name: 'edge-util', version: '1.0.0' })

  const proxy = await startTestProxy(t, {
    document: {
      server: { edgeTokens: [OLD, NEW] },
      mounts: {
        js: {
          upstreams: {
            private: { url: priv.url },
            public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
          },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
  })
  const registry = `${proxy.url}/js/`

  await t.test('no token or a wrong one: 401 with the envelope and the challenge; the probes stay open', async (t) => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer not-an-edge-token' }, { authorization: `Basic ${Buffer.from(`x:${NEW}`).toString('base64')}` }]
    for (const headers of attempts) {
      const res = await proxy.get('/js/@acme%2fedge-app', headers)
      t.equal(res.status, 401)
      t.match(res.headers['www-authenticate'], /^Bearer\b/)
      t.match(res.json(), { error: /edge token/ })
    }
    t.equal((await proxy.get('/js/-/ping')).status, 401, 'nothing under the mount answers without a token')
    t.equal((await proxy.fetch('PUT', '/js/@acme%2fx', { body: '{}', headers: { 'content-type': 'application/json' } })).status, 401)
    t.equal((await proxy.get('/livez')).status, 200)
    t.equal((await proxy.get('/readyz')).status, 200)
    t.notMatch(JSON.stringify(proxy.logger.records), new RegExp(`${OLD}|${NEW}`), 'no token in any log line')
  })

  await t.test('both rotated tokens are valid', async (t) => {
    for (const token of [OLD, NEW]) {
      const res = await proxy.get('/js/@acme%2fedge-app', { authorization: `Bearer ${token}` })
      t.equal(res.status, 200)
      t.match(res.json(), { name: '@acme/edge-app' })
    }
  })

  await t.test('npm with the token in .npmrc installs; without it, E401', async (t) => {
    const ws = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => ws.remove())
    await npmInstall(ws, { registry, authToken: NEW })
    t.match(await ws.installedManifest('@acme/edge-app'), { version: '1.0.0' })
    t.match(await ws.installedManifest('edge-util'), { version: '1.0.0' })
    const bare = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => bare.remove())
    const refused = await npmInstall(bare, { registry }, { allowFailure: true })
    t.not(refused.exitCode, 0)
    t.match(`${refused.stdout}\n${refused.stderr}`, /E401|401/)
  })

  await t.test('pnpm with the token in .npmrc installs; without it, 401', async (t) => {
    const ws = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => ws.remove())
    await pnpmInstall(ws, { registry, authToken: OLD })
    t.match(await ws.installedManifest('@acme/edge-app'), { version: '1.0.0' })
    t.ok((await readdir(join(ws.dir, 'node_modules', '.pnpm'))).includes('edge-util@1.0.0'))
    const bare = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => bare.remove())
    const refused = await pnpmInstall(bare, { registry }, { allowFailure: true, timeoutMs: 120_000 })
    t.not(refused.exitCode, 0)
    t.match(`${refused.stdout}\n${refused.stderr}`, /401/)
  })

  await t.test('yarn with the token in .npmrc installs (yarn 1 needs always-auth for unscoped packages); without it, 401', async (t) => {
    const ws = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => ws.remove())
    // Yarn 1 sends the registry token only for scoped packages unless always-auth is set; the user's ~/.npmrc is where it goes.
    await writeFile(join(ws.home, '.npmrc'), 'always-auth=true\n')
    await yarnInstall(ws, { registry, authToken: NEW })
    t.match(await ws.installedManifest('@acme/edge-app'), { version: '1.0.0' })
    t.match(await ws.installedManifest('edge-util'), { version: '1.0.0' })
    const bare = await createClientWorkspace({ '@acme/edge-app': '1.0.0' })
    t.teardown(() => bare.remove())
    const refused = await yarnInstall(bare, { registry }, { allowFailure: true, timeoutMs: 120_000 })
    t.not(refused.exitCode, 0)
    // yarn 1 prints the envelope's own sentence rather than the status.
    t.match(`${refused.stdout}\n${refused.stderr}`, /401|a valid edge token is required/)
  })
})

t.test('the private leg never receives the edge token: it sends the private upstream\'s own', async (t) => {
  const seen: IncomingHttpHeaders[] = []
  const upstream = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())))
  const port = (upstream.address() as AddressInfo).port
  const proxy = await startTestProxy(t, {
    document: {
      server: { edgeTokens: [NEW] },
      mounts: { js: { ...OFFLINE_JS_MOUNT.js, upstreams: { ...OFFLINE_JS_MOUNT.js.upstreams, private: { url: `http://127.0.0.1:${port}/`, token: 'private-own-token' } } } },
    },
  })
  await proxy.get('/js/@acme%2flib/-/lib-1.0.0.tgz', { authorization: `Bearer ${NEW}` })
  await proxy.get('/js/@acme%2flib', { authorization: `Bearer ${NEW}` })
  t.ok(seen.length >= 2, 'the private upstream was asked for the artifact and the document')
  for (const headers of seen) t.equal(headers.authorization, 'Bearer private-own-token')
})
