/**
 * The real `npm install` of a small dependency tree through the proxy
 * (SPEC.md 4.1, 4.4): metadata and tarballs both come through it, from a
 * private Verdaccio (trusted) and a public one over https (gated). A version
 * denied by `DenyIdentity` cannot be installed: a range that would pick it
 * resolves to the next survivor, and asking for it exactly fails.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { npmInstall, runNpm } from '../clients/npm-client.js'
import { pnpmInstall } from '../clients/pnpm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { startTestProxy } from '../helpers/proxy.js'

t.test('npm and pnpm install through the proxy; a denied version is never installed', async (t) => {
  const [priv, pub] = await Promise.all([startVerdaccio({ role: 'private' }), startVerdaccio({ role: 'public' })])
  t.teardown(() => Promise.all([priv.stop(), pub.stop()]))

  await publishFixture(priv, { name: '@acme/app-lib', version: '1.0.0', dependencies: { 'e2e-util': '^1.0.0' } })
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
    await publishFixture(pub, { name: 'e2e-util', version, dependencies: { 'e2e-leaf': '~2.0.0' } })
  }
  await publishFixture(pub, { name: 'e2e-leaf', version: '2.0.0' })

  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        js: {
          upstreams: {
            private: { url: priv.url },
            public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] },
          },
          rules: [
            { rule: 'DenyIdentity', package: 'e2e-util', versions: '1.2.0' },
            { rule: 'AllowIfOlderThan', seconds: 0 },
          ],
        },
      },
    },
  })
  const target = { registry: `${proxy.url}/js/` }

  t.test('npm installs the tree; ^1.0.0 resolves to the survivor 1.1.0', async (t) => {
    const ws = await createClientWorkspace({ '@acme/app-lib': '1.0.0' })
    t.teardown(() => ws.remove())
    await npmInstall(ws, target)
    t.match(await ws.installedManifest('@acme/app-lib'), { version: '1.0.0' })
    t.match(await ws.installedManifest('e2e-util'), { version: '1.1.0' }, 'not the denied 1.2.0')
    t.match(await ws.installedManifest('e2e-leaf'), { version: '2.0.0' })
  })

  t.test('asking npm for the denied version exactly fails', async (t) => {
    const ws = await createClientWorkspace({ 'e2e-util': '1.2.0' })
    t.teardown(() => ws.remove())
    const run = await npmInstall(ws, target, { allowFailure: true })
    t.not(run.exitCode, 0)
    t.not(run.exitCode, null, 'npm exited by itself, not by a signal')
    t.match(`${run.stdout}\n${run.stderr}`, /ETARGET|No matching version|notarget/i)
  })

  t.test('/-/why answers the decision for a version, as JSON', async (t) => {
    const denied = await proxy.get('/js/-/why/e2e-util/1.2.0')
    t.equal(denied.status, 200)
    t.match(denied.json(), { package: 'e2e-util', version: '1.2.0', phase: 'admission', verdict: 'deny', rule: 'DenyIdentity', ruleNumber: 1, reason: 'identity', message: 'e2e-util@1.2.0 is denied by name and version: DenyIdentity (rule 1) lists it' })
    const admitted = await proxy.get('/js/-/why/e2e-util/1.1.0')
    t.match(admitted.json(), { verdict: 'admit', rule: 'AllowIfOlderThan', ruleNumber: 2, reason: 'quarantine', admittedFrom: null, message: /^e2e-util@1\.1\.0 is admitted by AllowIfOlderThan \(rule 2\)/ })
    t.match((admitted.json() as { publishedAt: string }).publishedAt, /^\d{4}-\d\d-\d\dT/)
    const unknown = await proxy.get('/js/-/why/e2e-util/9.9.9')
    t.equal(unknown.status, 404)
    t.match(unknown.json(), { error: /is in no public document this proxy can see/ })
    t.equal((await proxy.get('/js/-/why/e2e-util/1.0.0%0d%0a')).status, 404, 'a version that is no version: 404 before any lookup')
  })

  t.test('the denied tarball is refused even when asked for directly', async (t) => {
    const res = await proxy.get('/js/e2e-util/-/e2e-util-1.2.0.tgz')
    t.equal(res.status, 403)
    t.same(res.json(), { error: 'e2e-util@1.2.0 is denied by name and version: DenyIdentity (rule 1) lists it' }, 'the envelope names the rule (issue 17 item 5)')
    const head = await proxy.fetch('HEAD', '/js/e2e-util/-/e2e-util-1.2.0.tgz')
    t.equal(head.status, 403)
  })

  t.test('pnpm installs the same tree', async (t) => {
    const ws = await createClientWorkspace({ '@acme/app-lib': '1.0.0' })
    t.teardown(() => ws.remove())
    await pnpmInstall(ws, target)
    t.match(await ws.installedManifest('@acme/app-lib'), { version: '1.0.0' })
    // pnpm keeps transitive dependencies in its virtual store, not at the top of node_modules.
    const store = await readdir(join(ws.dir, 'node_modules', '.pnpm'))
    t.ok(store.includes('e2e-util@1.1.0'), 'e2e-util 1.1.0 installed')
    t.notOk(store.includes('e2e-util@1.2.0'), 'never the denied 1.2.0')
  })

  t.test('npm view sees the gated document', async (t) => {
    const ws = await createClientWorkspace({})
    t.teardown(() => ws.remove())
    const run = await runNpm(ws, target, ['view', 'e2e-util', 'versions', '--json'])
    t.same(JSON.parse(run.stdout), ['1.0.0', '1.1.0'])
  })
})
