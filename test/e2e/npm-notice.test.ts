/**
 * A withheld version explains itself to npm (issue 32 item 2): a packument
 * from which the gate withheld versions carries an `npm-notice` line, which
 * npm prints as `npm notice ...`, and is `no-store` for npm so that it
 * prints on every resolution (npm skips the notice of any answer it
 * stored). pnpm and yarn send no `npm-command`, get neither, and install as
 * before. The cost is measured here: npm fetches such a packument whole on
 * each resolution where it would otherwise revalidate it to a 304.
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { npmInstall, runNpm } from '../clients/npm-client.js'
import { pnpmInstall } from '../clients/pnpm-client.js'
import { yarnInstall } from '../clients/yarn-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { scriptRegistry } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'

t.test('npm notice for withheld versions', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const pub = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => pub.stop())
  await scriptRegistry(pub, [
    { name: 'notice-dep', version: '4.4.1' },
    { name: 'notice-dep', version: '4.4.2' },
    { name: 'notice-dep', version: '4.4.3' },
    { name: 'notice-dep', version: '4.4.4' },
    { name: 'notice-other', version: '1.0.0' },
  ])
  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        js: {
          upstreams: { public: { url: `${pub.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [
            { rule: 'DenyIdentity', package: 'notice-dep', versions: '>=4.4.3' },
            { rule: 'AllowIfOlderThan', seconds: 0 },
          ],
        },
      },
    },
  })
  const target = { registry: `${proxy.url}/js/` }
  const why = `${proxy.url}/js/-/why/notice-dep/4.4.4`
  const noticeLine = new RegExp(`npm notice notice-dep: 2 versions withheld by policy; newest 4\\.4\\.4: .*DenyIdentity \\(rule 1\\).*; why \\(any version\\): ${why.replace(/[.]/g, '\\.')}`)

  t.test('the headers: npm alone gets the notice, no-store; never on a 304', async (t) => {
    const npm = await proxy.get('/js/notice-dep', { 'npm-command': 'install' })
    t.equal(npm.status, 200)
    t.match(npm.headers['npm-notice'], /^notice-dep: 2 versions withheld by policy; newest 4\.4\.4: /)
    t.ok(String(npm.headers['npm-notice']).length <= 400)
    t.equal(npm.headers['cache-control'], 'no-store')
    t.match(npm.headers['vary'], /npm-command/)
    const other = await proxy.get('/js/notice-dep')
    t.equal(other.headers['npm-notice'], undefined, 'no npm-command (pnpm, yarn): no notice')
    t.equal(other.headers['cache-control'], 'no-cache')
    t.equal(other.body.toString('utf8'), npm.body.toString('utf8'), 'the same document')
    const cached = await proxy.get('/js/notice-dep', { 'npm-command': 'install', 'if-none-match': String(npm.headers['etag']) })
    t.equal(cached.status, 304)
    t.equal(cached.headers['npm-notice'], undefined, 'a 304 carries no notice')
    const clean = await proxy.get('/js/notice-other', { 'npm-command': 'install' })
    t.equal(clean.headers['npm-notice'], undefined, 'nothing withheld: no notice')
    t.equal(clean.headers['cache-control'], 'no-cache')
    const audit = await proxy.get('/js/notice-dep', { 'npm-command': 'audit' })
    t.equal(audit.headers['npm-notice'], undefined, 'the audit view lists the withheld versions: nothing to notice')
  })

  t.test('a range only a withheld version satisfies: npm prints the notice before ETARGET', async (t) => {
    const ws = await createClientWorkspace({ 'notice-dep': '^4.4.3' })
    t.teardown(() => ws.remove())
    const run = await npmInstall(ws, target, { allowFailure: true })
    t.not(run.exitCode, 0)
    t.match(run.stderr, /ETARGET/)
    t.match(run.stderr, noticeLine)
    t.comment(run.stderr.split('\n').find((line) => line.includes('npm notice notice-dep')) ?? '')
  })

  t.test('a range a kept version satisfies: installed, the notice printed on every resolution; the cost', async (t) => {
    const ws = await createClientWorkspace({ 'notice-dep': '^4.4.0', 'notice-other': '^1.0.0' })
    t.teardown(() => ws.remove())
    const first = await runNpm(ws, target, ['install', '--no-audit', '--no-fund', '--loglevel', 'http'])
    t.match(await ws.installedManifest('notice-dep'), { version: '4.4.2' })
    t.match(first.stderr, noticeLine)
    // A second resolution with npm's cache warm: the notice again, since npm stored nothing of that answer.
    await rm(join(ws.dir, 'package-lock.json'))
    await rm(join(ws.dir, 'node_modules'), { recursive: true })
    const second = await runNpm(ws, target, ['install', '--no-audit', '--no-fund', '--loglevel', 'http'])
    t.match(second.stderr, noticeLine)
    const fetchOf = (name: string): string => second.stderr.split('\n').find((line) => line.includes(`/js/${name} `) && line.includes('GET')) ?? ''
    // The cost: npm revalidates a stored packument to a 304; one with a notice comes whole each time.
    // npm logs a revalidated answer with its stored status: `GET 200 ... (cache revalidated)` is a 304 on the wire.
    t.match(fetchOf('notice-other'), /GET 200 .*\(cache revalidated\)/)
    t.match(fetchOf('notice-dep'), /GET 200 .*\(cache skip\)/)
    const body = await proxy.get('/js/notice-dep', { 'npm-command': 'install', accept: 'application/vnd.npm.install-v1+json' })
    t.comment(`cost per resolution of notice-dep (4 versions, 2 withheld): ${body.body.byteLength} bytes of abbreviated packument instead of a 304`)
    t.comment(fetchOf('notice-dep'))
    t.comment(fetchOf('notice-other'))
  })

  t.test('pnpm and yarn are unaffected', async (t) => {
    const p = await createClientWorkspace({ 'notice-dep': '^4.4.0' })
    t.teardown(() => p.remove())
    await pnpmInstall(p, target)
    t.match(await p.installedManifest('notice-dep'), { version: '4.4.2' })
    const y = await createClientWorkspace({ 'notice-dep': '^4.4.0' })
    t.teardown(() => y.remove())
    await yarnInstall(y, target)
    t.match(await y.installedManifest('notice-dep'), { version: '4.4.2' })
  })
})
