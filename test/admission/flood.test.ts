/**
 * A flood of concurrent cold requests for a large real packument against a
 * proxy with a small memory budget (SPEC.md 8.1): some requests are shed with
 * 503 `Retry-After: 1`, the rest complete with the right document, the
 * process does not crash, and every charged byte returns afterwards.
 */
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { request } from 'undici'
import { readPackumentBytes } from '../../bench/peers/shared-data.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startTestProxy } from '../helpers/proxy.js'
import { RenamablePackument } from '../../bench/fixtures/renamable-packument.js'

const CONCURRENCY = 24

t.test('flood of cold requests for a large packument under a small budget', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  // One real ~10 MB packument, served under many names so no request can join another's fetch.
  const base = new RenamablePackument(JSON.parse((await readPackumentBytes('typescript')).toString('utf8')) as Record<string, unknown>, 'typescript')
  const server = createServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    base.send(res, decodeURIComponent((req.url ?? '/').slice(1)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`

  const proxy = await startTestProxy(t, {
    document: {
      // A 512 MiB heap pin and two requests in flight give a budget of a few tens of MiB.
      runtime: { cores: 1, maxHeapBytes: 512 * 1024 * 1024, serveMaxInFlight: 2 },
      mounts: { js: { upstreams: { public: { url: `${origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } },
    },
  })
  const results = await Promise.all(Array.from({ length: CONCURRENCY }, async (_, i) => {
    const res = await request(`${proxy.url}/js/flood-${i}`, { headers: { accept: 'application/vnd.npm.install-v1+json' } })
    const body = Buffer.from(await res.body.arrayBuffer())
    return { i, status: res.statusCode, retryAfter: res.headers['retry-after'], body }
  }))
  const shed = results.filter((r) => r.status === 503)
  const served = results.filter((r) => r.status === 200)
  t.equal(shed.length + served.length, CONCURRENCY, `every request was served or shed (${served.length} served, ${shed.length} shed)`)
  t.ok(shed.length > 0, 'some requests were shed')
  t.ok(served.length > 0, 'some requests completed')
  for (const r of shed) t.equal(r.retryAfter, '1', 'shed with Retry-After: 1')
  for (const r of served) {
    const doc = JSON.parse(r.body.toString('utf8')) as { name: string; versions: Record<string, { dist: { tarball: string } }> }
    t.equal(doc.name, `flood-${r.i}`)
    t.ok(Object.keys(doc.versions).length > 100, 'a complete document')
  }
  const ping = await proxy.get('/js/-/ping')
  t.equal(ping.status, 200, 'still serving')
  const gate = proxy.role.metrics()['service.serve.admission.memory'] as { chargedBytes: number; shed: number; inFlight: number }
  t.equal(gate.chargedBytes, 0, 'every charge returned')
  t.equal(gate.inFlight, 0)
  t.equal(gate.shed, shed.length, 'the shed counter agrees')
})
