import t from 'tap'
import { pnpmInstall } from '../clients/pnpm-client.js'
import { createClientWorkspace, nerfDart, npmrcLines } from '../clients/workspace.js'
import { yarnInstall } from '../clients/yarn-client.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'

t.test('npmrc lines key the token by the registry path', async (t) => {
  t.equal(nerfDart('http://127.0.0.1:4873/js/'), '//127.0.0.1:4873/js/')
  t.equal(nerfDart('http://127.0.0.1:4873/js'), '//127.0.0.1:4873/js/')
  t.same(npmrcLines({ registry: 'https://127.0.0.1:1/', caFile: '/ca.pem', authToken: 'tok' }), [
    'registry=https://127.0.0.1:1/', 'cafile=/ca.pem', 'strict-ssl=true', '//127.0.0.1:1/:_authToken=tok',
  ])
})

t.test('pnpm and yarn classic install through a Verdaccio', async (t) => {
  const registry = await startVerdaccio({ role: 'public' })
  t.teardown(() => registry.stop())
  await publishFixture(registry, { name: 'leaf-fixture', version: '1.2.3' })
  await publishFixture(registry, { name: 'root-fixture', version: '0.4.0', dependencies: { 'leaf-fixture': '~1.2.0' } })
  const target = { registry: registry.url, caFile: registry.caFile! }

  t.test('pnpm', async (t) => {
    const workspace = await createClientWorkspace({ 'root-fixture': '0.4.0' })
    t.teardown(() => workspace.remove())
    await pnpmInstall(workspace, target)
    t.equal((await workspace.installedManifest('root-fixture')).version, '0.4.0')
  })

  t.test('yarn classic', async (t) => {
    const workspace = await createClientWorkspace({ 'root-fixture': '0.4.0' })
    t.teardown(() => workspace.remove())
    await yarnInstall(workspace, target)
    t.equal((await workspace.installedManifest('root-fixture')).version, '0.4.0')
    t.equal((await workspace.installedManifest('leaf-fixture')).version, '1.2.3')
  })
})
