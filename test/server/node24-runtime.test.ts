/**
 * The service on Node 24 (issue 18), on the Node 24 binary published on the
 * npm registry (fetched once by test/helpers/node-runtime.ts). Where no uWS build loads
 * (this machine: glibc 2.36, the Node 24 build needs 2.38), the proxy exits 2
 * with one line naming the Node version, the libc and what to install, and
 * no stack trace. Where one loads, it serves its probes.
 */
import t from 'tap'
import { buildRefusal, UWS_BUILDS, type UwsRuntime } from '../../server/http/uws-loader.js'
import { runService } from '../helpers/service-process.js'
import { freePort } from '../helpers/ports.js'
import { nodeRelease } from '../helpers/node-runtime.js'

const release = await nodeRelease('24.21.0')
const NODE_24 = 'path' in release ? release.path : ''
const absent = 'unavailable' in release ? release.unavailable : undefined
const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime
const node24: UwsRuntime = { node: 'v24', abi: 137, platform: process.platform, arch: process.arch, glibc }
const loadable = UWS_BUILDS.some((b) => buildRefusal(b, node24) === undefined)

t.test('Node 24 without a loadable uWS build: exit 2 with the reason, no stack trace', { skip: absent ?? (loadable ? 'a uWS build loads here on Node 24' : false) }, async (t) => {
  const run = runService(t, ['proxy'], { SERVICE_SERVER__PORT: String(await freePort()) }, NODE_24)
  t.same(await run.exited, { code: 2, signal: null })
  const line = run.stderr().split('\n').find((l) => l.includes('no uWebSockets.js build loads'))
  t.match(line, /^service: the proxy role could not start: no uWebSockets\.js build loads on Node v24\.\d+\.\d+ \(ABI 137, linux-x64, glibc [\d.]+\)/)
  t.match(line, /needs glibc 2\.38 or newer; found [\d.]+\. Run on Node 20 \(glibc 2\.27 or newer\), or on Node 22 or 24 with glibc 2\.38 or newer/)
  t.notMatch(run.stderr(), /^\s+at /m, 'no stack trace')
})

t.test('Node 24 with a loadable uWS build serves its probes', { skip: absent ?? (!loadable ? `no uWS build loads on Node 24 with glibc ${glibc ?? 'none'}` : false) }, async (t) => {
  const port = await freePort()
  const run = runService(t, ['proxy'], { SERVICE_SERVER__PORT: String(port) }, NODE_24)
  await run.waitForOutput('listening', 30_000)
  const res = await fetch(`http://127.0.0.1:${port}/livez`)
  t.equal(res.status, 200)
  run.child.kill('SIGTERM')
  t.same(await run.exited, { code: 0, signal: null })
})
