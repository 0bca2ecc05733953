import t from 'tap'
import { Agent, request } from 'undici'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'

t.test('the public-role Verdaccio serves https with its own CA', async (t) => {
  const registry = await startVerdaccio({ role: 'public' })
  t.teardown(() => registry.stop())
  t.match(registry.url, /^https:\/\/127\.0\.0\.1:\d+\/$/)
  t.ok(registry.caFile, 'the helper made a CA')

  t.test('reachable when the CA is trusted', async (t) => {
    const response = await request(`${registry.origin}/-/ping`, { dispatcher: registry.dispatcher })
    t.equal(response.statusCode, 200)
    t.same(await response.body.json(), {})
  })

  t.test('refused without the CA', async (t) => {
    const untrusting = new Agent()
    t.teardown(() => untrusting.close())
    await t.rejects(request(`${registry.origin}/-/ping`, { dispatcher: untrusting }), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
  })

  t.test('npm publishes and installs over https with cafile', async (t) => {
    await publishFixture(registry, { name: 'public-fixture', version: '3.0.0' })
    const workspace = await createClientWorkspace({ 'public-fixture': '^3.0.0' })
    t.teardown(() => workspace.remove())
    await npmInstall(workspace, { registry: registry.url, caFile: registry.caFile! })
    t.equal((await workspace.installedManifest('public-fixture')).version, '3.0.0')
  })

  t.test('npm without the CA fails fast instead of retrying', async (t) => {
    const workspace = await createClientWorkspace({ 'public-fixture': '^3.0.0' })
    t.teardown(() => workspace.remove())
    const run = await npmInstall(workspace, { registry: registry.url }, { allowFailure: true, timeoutMs: 60_000 })
    t.not(run.exitCode, 0)
    t.match(run.stderr, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i)
  })
})
