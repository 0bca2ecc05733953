/**
 * `service dredger` as the built binary (dist/; `npm run build` first), with
 * real Verdaccio registries as the mirror target and the private upstream
 * (the private cache), each holding packages of three versions
 * (dredger-rig.ts; the other cases are in dredger-service-cycles.test.ts).
 *
 * - `--dry-run` (table and `--json`) lists the revoked version from each
 *   inventory, deletes nothing and exits 0.
 * - A cycle removes that version (document entry and tarball) from both; the
 *   others stay and `npm install` still installs them; a proxy in front
 *   serves neither the packument entry nor the artifact.
 * - The start line names the inventories.
 */
import t from 'tap'
import { DREDGER_CYCLE_FINISHED, DREDGER_REMOVED } from '../../engine/dredger/dredger.js'
import { DREDGER_STARTED } from '../../server/roles/dredger.js'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { DredgerRig, held, logLines, readyz, stop, tarball, VERSIONS } from './dredger-rig.js'

const rig = await DredgerRig.start(t)

t.test('dry run lists the revoked version in each inventory and deletes nothing; a cycle removes it', async (t) => {
  await rig.seed('three')
  const rules = [{ rule: 'DenyIdentity', package: 'three', versions: '1.0.1' }, { rule: 'AllowIfOlderThan', seconds: 0 }]

  const table = (await rig.dredger(t, { rules }, ['--dry-run'])).run
  t.equal((await table.exited).code, 0, table.stderr())
  const rows = table.stdout().trim().split('\n')
  t.match(rows[0], /^PACKAGE\s+VERSION\s+INVENTORY\s+RULE$/)
  t.equal(rows.length, 3, table.stdout())
  t.match(rows[1], /^three\s+1\.0\.1\s+mirror_target\s+mounts\.js\.rules\[0\] DenyIdentity three@1\.0\.1$/)
  t.match(rows[2], /^three\s+1\.0\.1\s+private_cache\s+mounts\.js\.rules\[0\] DenyIdentity three@1\.0\.1$/)

  const json = (await rig.dredger(t, { rules }, ['--dry-run', '--json'])).run
  t.equal((await json.exited).code, 0, json.stderr())
  const lines = json.stdout().trim().split('\n').map((line) => JSON.parse(line) as unknown)
  t.same(lines, [
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'mirror_target', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'private_cache', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
  ])
  for (const peer of [rig.mirror, rig.priv]) {
    t.same(await held(peer, 'three'), VERSIONS, 'the dry run deleted nothing')
    t.equal(await tarball(peer, 'three', '1.0.1'), 200)
  }

  const { run, port } = await rig.dredger(t, { rules })
  await run.waitForOutput(DREDGER_CYCLE_FINISHED, 60_000)
  const removed = logLines(run, DREDGER_REMOVED)
  t.same(removed.map((line) => line.status), ['info', 'info'])
  t.same(removed.map((line) => line.data).sort((a, b) => String(a['inventory']).localeCompare(String(b['inventory']))), [
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'mirror_target', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
    { mount: 'js', package: 'three', version: '1.0.1', inventory: 'private_cache', rule: 'mounts.js.rules[0] DenyIdentity three@1.0.1' },
  ])
  for (const peer of [rig.mirror, rig.priv]) {
    t.same(await held(peer, 'three'), ['1.0.0', '1.0.2'], 'the document no longer names it, the others stay')
    t.equal(await tarball(peer, 'three', '1.0.1'), 404, 'its tarball is gone')
    t.equal(await tarball(peer, 'three', '1.0.0'), 200)
    t.equal(await tarball(peer, 'three', '1.0.2'), 200)
  }
  t.equal((await readyz(port)).status, 200)
  await stop(run)

  // The others still install from the private registry with the real npm CLI.
  for (const spec of ['1.0.0', '^1.0.0']) {
    const workspace = await createClientWorkspace({ three: spec })
    t.teardown(() => workspace.remove())
    await npmInstall(workspace, { registry: rig.priv.url })
    t.match(await workspace.installedManifest('three'), { version: spec === '1.0.0' ? '1.0.0' : '1.0.2' })
  }

  // A proxy in front (the private registry as its private upstream) serves neither the entry nor the artifact.
  const proxy = await startTestProxy(t, { document: { mounts: { js: { upstreams: { private: { url: rig.priv.url }, public: { url: 'https://upstream.invalid/' } }, rules } } } })
  const packument = await proxy.get('/js/three')
  t.equal(packument.status, 200)
  t.same(Object.keys((packument.json() as { versions: object }).versions).sort(), ['1.0.0', '1.0.2'])
  const artifact = await proxy.get('/js/three/-/three-1.0.1.tgz')
  t.not(artifact.status, 200, `the artifact is not served (${artifact.status})`)
})
t.test('the dredger logs its start with the inventories', async (t) => {
  const { run } = await rig.dredger(t, { rules: [] })
  await run.waitForOutput(DREDGER_STARTED)
  t.match(logLines(run, DREDGER_STARTED)[0]?.data, { mounts: { js: [`mirror_target 127.0.0.1:${rig.mirror.port}`, `private_cache 127.0.0.1:${rig.priv.port}`] }, cycleSeconds: 3600, maxRemovalsPerCycle: 100, fullWalk: false })
  await stop(run)
})

