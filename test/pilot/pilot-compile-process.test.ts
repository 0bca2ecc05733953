/**
 * `service pilot compile` as a real child process of the built binary
 * (dist/; `npm run build` first): it compiles every mounted ecosystem from a
 * local OSV export and EPSS feed, publishes into the embedded store folder
 * and exits 0; a failed compile exits 1 with the `service: service exited:`
 * line; no `advisories.osvExportBaseUrl` is a boot abort (exit 2) naming the
 * setting, for `pilot compile` and for the long-running `pilot` alike.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { loadAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { runService } from '../helpers/service-process.js'
import { epssFeedGz, exportZip, npmSamples, pysecSamples, serve } from '../advisory/fixtures.js'

const BASE_ENV = {
  SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
  SERVICE_MOUNTS__PY__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
  SERVICE_SERVER__PORT: '0',
}

t.test('pilot compile publishes each mounted ecosystem into the embedded store and exits 0', async (t) => {
  const peer = await serve({
    '/osv/npm/all.zip': exportZip(npmSamples()),
    '/osv/PyPI/all.zip': exportZip(pysecSamples()),
    '/epss/feed.csv.gz': epssFeedGz(new Map([['CVE-2020-28500', '0.0123'], ['CVE-2021-23337', '0.0456']])),
  })
  t.teardown(() => new Promise<void>((resolve) => peer.server.close(() => resolve())))
  const root = await mkdtemp(join(tmpdir(), 'pilot-compile-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const storePath = join(root, 'store')

  const run = runService(t, ['pilot', 'compile'], {
    ...BASE_ENV,
    SERVICE_ADVISORIES__OSV_EXPORT_BASE_URL: `${peer.base}/osv`,
    SERVICE_ADVISORIES__EPSS_FEED_URL: `${peer.base}/epss/feed.csv.gz`,
    SERVICE_STORE__PATH: storePath,
  })
  const { code } = await run.exited
  t.equal(code, 0, run.stderr())
  t.match(run.stdout(), /advisory artifact published/)

  const store = await FilesystemObjectStore.open({ root: storePath })
  for (const ecosystem of ['js', 'py'] as const) {
    const body = await store.get(advisoryObjectKey(ecosystem))
    if (body === undefined) { t.fail(`${ecosystem} missing`); continue }
    const chunks: Buffer[] = []
    for await (const c of body.stream) chunks.push(c as Buffer)
    const db = loadAdvisoryArtifact(new Uint8Array(Buffer.concat(chunks)), body.publishedAt)
    t.equal(db.ecosystem, ecosystem)
    t.equal(db.metadata.epssStatus, 'available')
    t.ok(body.publishedAt instanceof Date)
  }
})

t.test('a failed compile exits 1 with the detail; no OSV export URL exits 2 naming the setting', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'pilot-compile-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const failed = runService(t, ['pilot', 'compile'], {
    ...BASE_ENV,
    SERVICE_ADVISORIES__OSV_EXPORT_BASE_URL: 'http://127.0.0.1:1/osv',
    SERVICE_STORE__PATH: join(root, 'store'),
  })
  t.equal((await failed.exited).code, 1)
  t.match(failed.stderr(), /service: service exited: pilot compile failed: js: UPSTREAM_UNAVAILABLE/)

  for (const args of [['pilot', 'compile'], ['pilot']]) {
    const refused = runService(t, args, { ...BASE_ENV, SERVICE_STORE__PATH: join(root, 'store') })
    t.equal((await refused.exited).code, 2, args.join(' '))
    t.match(refused.stderr(), /advisories\.osvExportBaseUrl is not set/)
  }
})

t.test('service pilot runs at start, serves its probes, and drains on SIGTERM', async (t) => {
  const peer = await serve({
    '/osv/npm/all.zip': exportZip(npmSamples()),
    '/epss/feed.csv.gz': epssFeedGz(new Map([['CVE-2020-28500', '0.0123']])),
  })
  t.teardown(() => new Promise<void>((resolve) => peer.server.close(() => resolve())))
  const root = await mkdtemp(join(tmpdir(), 'pilot-role-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const run = runService(t, ['pilot'], {
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
    SERVICE_SERVER__PORT: '0',
    SERVICE_ADVISORIES__OSV_EXPORT_BASE_URL: `${peer.base}/osv`,
    SERVICE_ADVISORIES__EPSS_FEED_URL: `${peer.base}/epss/feed.csv.gz`,
    SERVICE_STORE__PATH: join(root, 'store'),
  })
  await run.waitForOutput('advisory artifact published', 60_000)
  const listening = run.stdout().split('\n').find((l) => l.includes('pilot listening'))
  const port = (JSON.parse(listening ?? '{}') as { data?: { port?: number } }).data?.port
  t.type(port, 'number')
  const live = await fetch(`http://127.0.0.1:${port}/livez`)
  t.equal(live.status, 200)
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
  t.equal(ready.status, 200)
  t.equal((await fetch(`http://127.0.0.1:${port}/js/lodash`)).status, 404, 'Pilot serves no package route')
  run.child.kill('SIGTERM')
  t.equal((await run.exited).code, 0)
})
