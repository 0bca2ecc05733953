import t from 'tap'
import { request } from 'undici'
import { npmInstall } from '../clients/npm-client.js'
import { createClientWorkspace } from '../clients/workspace.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'

t.test('npm publishes a fixture to a private Verdaccio and npm installs it back', async (t) => {
  const registry = await startVerdaccio({ role: 'private' })
  t.teardown(() => registry.stop())
  t.match(registry.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)

  await publishFixture(registry, { name: 'fixture-dep', version: '1.0.0' })
  await publishFixture(registry, {
    name: '@fixture/app',
    version: '2.1.0',
    dependencies: { 'fixture-dep': '^1.0.0' },
    files: { 'index.js': 'module.exports = require("fixture-dep")\n', 'lib/extra.txt': 'extra\n' },
  })

  const response = await request(`${registry.origin}/@fixture%2fapp`, { dispatcher: registry.dispatcher })
  t.equal(response.statusCode, 200)
  const packument = await response.body.json() as { name: string, versions: Record<string, { dependencies: Record<string, string>, dist: { tarball: string, integrity: string } }> }
  t.equal(packument.name, '@fixture/app')
  const published = packument.versions['2.1.0']
  t.same(published?.dependencies, { 'fixture-dep': '^1.0.0' })
  t.match(published?.dist.integrity, /^sha512-/)
  t.match(published?.dist.tarball, `${registry.origin}/@fixture/app/-/app-2.1.0.tgz`)

  const workspace = await createClientWorkspace({ '@fixture/app': '2.1.0' })
  t.teardown(() => workspace.remove())
  await npmInstall(workspace, { registry: registry.url })
  t.equal((await workspace.installedManifest('@fixture/app')).version, '2.1.0')
  t.equal((await workspace.installedManifest('fixture-dep')).version, '1.0.0')
})

t.test('a packument placed in storage is served as it was placed', async (t) => {
  const registry = await startVerdaccio({
    packuments: [{
      name: 'placed-doc',
      'dist-tags': { latest: '0.1.0' },
      versions: { '0.1.0': { name: 'placed-doc', version: '0.1.0', dist: { tarball: 'https://public-registry.example/placed-doc/-/placed-doc-0.1.0.tgz', shasum: '0'.repeat(40) } } },
      time: { '0.1.0': '2024-01-01T00:00:00.000Z' },
    }],
  })
  t.teardown(() => registry.stop())
  const response = await request(`${registry.origin}/placed-doc`, { dispatcher: registry.dispatcher })
  t.equal(response.statusCode, 200)
  const body = await response.body.json() as { 'dist-tags': Record<string, string>, versions: Record<string, unknown> }
  t.same(body['dist-tags'], { latest: '0.1.0' })
  t.same(Object.keys(body.versions), ['0.1.0'])
})

t.test('stop ends the child by its pid and is idempotent', async (t) => {
  const registry = await startVerdaccio()
  t.teardown(() => registry.stop())
  t.ok(registry.process.running)
  await Promise.all([registry.stop(), registry.stop()])
  t.notOk(registry.process.running)
  t.throws(() => process.kill(registry.pid, 0), { code: 'ESRCH' })
})

t.test('restart keeps the port, the storage and the access rules; the old child is gone', async (t) => {
  const authenticated = { access: '$authenticated', publish: '$authenticated' }
  const registry = await startVerdaccio({
    packages: { '@*/*': authenticated, '**': authenticated },
    packuments: [{ name: 'kept-doc', 'dist-tags': { latest: '0.1.0' }, versions: { '0.1.0': { name: 'kept-doc', version: '0.1.0', dist: { tarball: 'http://127.0.0.1/kept-doc/-/kept-doc-0.1.0.tgz', shasum: '0'.repeat(40) } } } }],
  })
  t.teardown(() => registry.stop())
  const token = await registry.addUser('reader', 'reader-password')
  const read = async (authorization?: string): Promise<number> => {
    const response = await request(`${registry.origin}/kept-doc`, { dispatcher: registry.dispatcher, headers: authorization === undefined ? {} : { authorization } })
    await response.body.dump()
    return response.statusCode
  }
  t.not(await read(), 200, 'anonymous reads are refused')
  t.equal(await read(`Bearer ${token}`), 200)
  const before = registry.pid
  await registry.restart()
  t.not(registry.pid, before)
  t.throws(() => process.kill(before, 0), { code: 'ESRCH' })
  t.equal(await read(`Bearer ${token}`), 200, 'the same port, storage and users')
})
