/**
 * The proxy reading Pilot's artifact from the store (SPEC.md 3.1, 3.3): a
 * mount with DenyIfCve awaits the advisory database (503 on /readyz, and its
 * packument reads refused with a retryable 503 while no database is loaded),
 * becomes ready once the artifact is published, and then withholds the
 * versions the advisories name while admitting the fixed ones.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { systemClock } from '../../engine/clock.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { artifact } from '../advisory-consumer/artifacts.js'
import { publishFixture } from '../peers/publish-fixture.js'
import { startVerdaccio } from '../../bench/peers/verdaccio.js'
import { startTestProxy } from '../helpers/proxy.js'

t.test('DenyIfCve over the artifact Pilot publishes', async (t) => {
  const pub = await startVerdaccio({ role: 'public' })
  t.teardown(() => pub.stop())
  for (const version of ['4.17.20', '4.17.21']) await publishFixture(pub, { name: 'lodash', version })
  const storeDir = await mkdtemp(join(tmpdir(), 'proxy-store-'))
  t.teardown(() => rm(storeDir, { recursive: true, force: true }))

  const proxy = await startTestProxy(t, {
    document: {
      store: { path: storeDir },
      advisories: { pollIntervalSeconds: 0.2 },
      mounts: {
        js: {
          upstreams: { public: { url: pub.url, caFile: pub.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 0 }],
        },
      },
    },
  })

  const awaiting = await proxy.get('/readyz')
  t.equal(awaiting.status, 503)
  t.match(awaiting.json(), { mounts: { js: 'awaiting_advisory_database' } })
  const refused = await proxy.get('/js/lodash')
  t.equal(refused.status, 503, 'no database yet: the unset onUnavailable refuses, retryably')
  t.ok(refused.headers['retry-after'] !== undefined)
  t.equal(proxy.logger.find('advisory source outage began').length, 1, 'the outage began, once')

  const store = await FilesystemObjectStore.open({ root: storeDir, clock: systemClock })
  await store.put(advisoryObjectKey('js'), artifact(), {})
  let ready = await proxy.get('/readyz')
  for (let i = 0; i < 100 && ready.status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    ready = await proxy.get('/readyz')
  }
  t.equal(ready.status, 200, 'ready once the artifact is loaded')

  const res = await proxy.get('/js/lodash')
  t.equal(res.status, 200)
  const doc = res.json() as { versions: Record<string, unknown>; 'dist-tags': Record<string, string> }
  t.same(Object.keys(doc.versions), ['4.17.21'], 'the vulnerable 4.17.20 is withheld, the fixed one admitted')
  t.equal(doc['dist-tags']['latest'], '4.17.21')
  t.equal(proxy.logger.find('advisory source outage recovered').length, 1, 'the outage recovered')

  const tarball = await proxy.get('/js/lodash/-/lodash-4.17.20.tgz')
  t.equal(tarball.status, 403, 'its tarball is refused too')
})
