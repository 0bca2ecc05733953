/**
 * The service on Node 22 and Node 24 (issue 18), each on the binary published
 * on the npm registry (fetched once by test/helpers/node-runtime.ts). Where no
 * uWS build loads (this machine: glibc 2.36, the Node 22 and 24 build needs
 * 2.38), the proxy exits 2 with one line naming the Node version, the libc
 * and what to install, and no stack trace. Where one loads, it serves its
 * probes. A release that cannot be fetched skips its tests with the reason.
 */
import t from 'tap'
import { buildRefusal, UWS_BUILDS, type UwsRuntime } from '../../server/http/uws-loader.js'
import { runService } from '../helpers/service-process.js'
import { freePort } from '../helpers/ports.js'
import { NODE_RELEASE_LINES, nodeRelease } from '../helpers/node-runtime.js'

const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime

for (const line of NODE_RELEASE_LINES) {
  const release = await nodeRelease(line.version)
  const node = 'path' in release ? release.path : ''
  const absent = 'unavailable' in release ? release.unavailable : undefined
  const runtime: UwsRuntime = { node: `v${line.major}`, abi: line.abi, platform: process.platform, arch: process.arch, glibc }
  const loadable = UWS_BUILDS.some((b) => buildRefusal(b, runtime) === undefined)

  t.test(`Node ${line.major} without a loadable uWS build: exit 2 with the reason, no stack trace`, { skip: absent ?? (loadable ? `a uWS build loads here on Node ${line.major}` : false) }, async (t) => {
    const run = runService(t, ['proxy'], { SERVICE_SERVER__PORT: String(await freePort()) }, node)
    t.same(await run.exited, { code: 2, signal: null })
    const refusal = run.stderr().split('\n').find((l) => l.includes('no uWebSockets.js build loads'))
    t.match(refusal, new RegExp(`^service: the proxy role could not start: no uWebSockets\\.js build loads on Node v${line.major}\\.\\d+\\.\\d+ \\(ABI ${line.abi}, linux-x64, glibc [\\d.]+\\)`))
    t.match(refusal, /needs glibc 2\.38 or newer; found [\d.]+\. Run on Node 20 \(glibc 2\.27 or newer\), or on Node 22 or 24 with glibc 2\.38 or newer/)
    t.notMatch(run.stderr(), /^\s+at /m, 'no stack trace')
  })

  t.test(`Node ${line.major} with a loadable uWS build serves its probes`, { skip: absent ?? (!loadable ? `no uWS build loads on Node ${line.major} with glibc ${glibc ?? 'none'}` : false) }, async (t) => {
    const port = await freePort()
    const run = runService(t, ['proxy'], { SERVICE_SERVER__PORT: String(port) }, node)
    await run.waitForOutput('listening', 30_000)
    const res = await fetch(`http://127.0.0.1:${port}/livez`)
    t.equal(res.status, 200)
    run.child.kill('SIGTERM')
    t.same(await run.exited, { code: 0, signal: null })
  })
}
