/**
 * Real npm, pnpm and yarn installs through the proxy while its upstream
 * connections leave through a real CONNECT forward proxy on 127.0.0.1
 * (issue 32 item 3; docs/security.md#forward-proxy). The forward proxy
 * demands a credential, given the conventional way: HTTPS_PROXY with
 * userinfo. The public Verdaccio (https) is reached through the tunnel, the
 * private one (plain http, no HTTP_PROXY) directly; NO_PROXY sends the
 * public one direct too; a public upstream the egress policy refuses is
 * refused before the forward proxy hears of it; a wrong credential is the
 * documented 502.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { npmInstall } from '../clients/npm-client.js'
import { pnpmInstall } from '../clients/pnpm-client.js'
import { yarnInstall } from '../clients/yarn-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { startTestProxy } from '../helpers/proxy.js'
import { startConnectProxy } from '../upstream/connect-proxy.js'
import { FORWARD_PROXY_LOG } from '../../server/roles/mount-clients.js'
import { METADATA_FETCH_FAILED } from '../../engine/upstream/upstream-client.js'

t.test('installs through a forward proxy; the egress policy still judges the target', async (t) => {
  const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
  t.teardown(() => Promise.all([priv.stop(), pub.stop()]))
  await publishFixture(priv, { name: '@acme/app-lib', version: '1.0.0', dependencies: { 'e2e-util': '^1.0.0' } })
  await publishFixture(pub, { name: 'e2e-util', version: '1.1.0', dependencies: { 'e2e-leaf': '~2.0.0' } })
  await publishFixture(pub, { name: 'e2e-leaf', version: '2.0.0' })

  const forward = await startConnectProxy(t, { credential: 'fleet:s3cret' })
  const publicAuthority = new URL(pub.url).host
  const mounts = (allowInternalRanges: string[]) => ({
    js: {
      upstreams: {
        private: { url: priv.url },
        public: { url: pub.url, caFile: pub.caFile, allowInternalRanges },
      },
      rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
    },
  })
  const viaForward = `http://fleet:s3cret@127.0.0.1:${forward.port}`
  const proxy = await startTestProxy(t, { document: { mounts: mounts(['127.0.0.0/8']) }, env: { HTTPS_PROXY: viaForward } })
  const target = { registry: `${proxy.url}/js/` }

  t.test('the boot line names the forward proxy without its credential', async (t) => {
    const line = proxy.logger.find(FORWARD_PROXY_LOG)[0]
    t.same(line?.data, { https: forward.url, noProxy: [] })
    t.equal(JSON.stringify(proxy.logger.records).includes('s3cret'), false, 'the credential is in no log line')
  })

  t.test('npm installs the tree: public packuments and tarballs come through the tunnel', async (t) => {
    const ws = await createClientWorkspace({ '@acme/app-lib': '1.0.0' })
    t.teardown(() => ws.remove())
    await npmInstall(ws, target)
    t.match(await ws.installedManifest('@acme/app-lib'), { version: '1.0.0' })
    t.match(await ws.installedManifest('e2e-util'), { version: '1.1.0' })
    t.match(await ws.installedManifest('e2e-leaf'), { version: '2.0.0' })
    // Documents (undici) and artifacts (the HTTP/1.1 pool) each open their own tunnels, all to the public upstream.
    t.ok(forward.targets.length >= 2, `tunnels opened: ${forward.targets.length}`)
    t.same([...new Set(forward.targets)], [publicAuthority], 'only the public upstream, at its judged address; the private one goes direct (no HTTP_PROXY)')
    t.equal(forward.authorizations.every((a) => a === `Basic ${Buffer.from('fleet:s3cret').toString('base64')}`), true)
  })

  t.test('pnpm installs the same tree', async (t) => {
    const ws = await createClientWorkspace({ '@acme/app-lib': '1.0.0' })
    t.teardown(() => ws.remove())
    await pnpmInstall(ws, target)
    const store = await readdir(join(ws.dir, 'node_modules', '.pnpm'))
    t.ok(store.includes('e2e-util@1.1.0'), 'e2e-util 1.1.0 installed')
  })

  t.test('yarn classic installs the same tree', async (t) => {
    const ws = await createClientWorkspace({ '@acme/app-lib': '1.0.0' })
    t.teardown(() => ws.remove())
    await yarnInstall(ws, target)
    t.match(await ws.installedManifest('e2e-util'), { version: '1.1.0' })
    t.match(await ws.installedManifest('e2e-leaf'), { version: '2.0.0' })
  })

  t.test('NO_PROXY sends the public upstream direct', async (t) => {
    const direct = await startTestProxy(t, { document: { mounts: mounts(['127.0.0.0/8']) }, env: { HTTPS_PROXY: viaForward, NO_PROXY: '127.0.0.1' } })
    const before = forward.targets.length
    const res = await direct.get('/js/e2e-util')
    t.equal(res.status, 200)
    const tarball = await direct.get('/js/e2e-leaf/-/e2e-leaf-2.0.0.tgz')
    t.equal(tarball.status, 200)
    t.equal(forward.targets.length, before, 'the forward proxy heard nothing')
  })

  t.test('an upstream the egress policy refuses is refused before the forward proxy hears of it', async (t) => {
    const strict = await startTestProxy(t, { document: { mounts: mounts([]) }, env: { HTTPS_PROXY: viaForward } })
    const before = forward.targets.length
    const res = await strict.get('/js/e2e-util')
    t.equal(res.status, 502)
    t.match(res.json(), { error: /resolves to 127\.0\.0\.1, in the internal range 127\.0\.0\.0\/8/ })
    t.equal(forward.targets.length, before, 'no CONNECT was asked for')
  })

  t.test('a wrong proxy credential is a 502 naming the proxy, never the credential', async (t) => {
    const wrong = await startTestProxy(t, { document: { mounts: mounts(['127.0.0.0/8']) }, env: { HTTPS_PROXY: `http://fleet:wrong@127.0.0.1:${forward.port}` } })
    const res = await wrong.get('/js/e2e-util')
    t.equal(res.status, 502)
    t.match(res.json(), { error: 'the forward proxy refused the tunnel to the upstream' })
    const tarball = await wrong.get('/js/e2e-leaf/-/e2e-leaf-2.0.0.tgz')
    t.equal(tarball.status, 502)
    const logged = JSON.stringify(wrong.logger.records)
    // The upstream read's line names the proxy (the tarball's request fails at its packument read, before any artifact connection).
    const failures = wrong.logger.find(METADATA_FETCH_FAILED).filter((r) => r.data?.['code'] === 'EGRESS_PROXY_REFUSED')
    t.equal(failures.length, 2, 'logged for e2e-util and e2e-leaf')
    t.ok(failures.every((r) => r.data?.['proxy'] === forward.url && r.data['proxyStatus'] === 407), 'each line names the proxy and its answer')
    t.equal(logged.includes('wrong'), false, 'the credential is in no log line')
  })
})
