/**
 * The service on Node 22 and Node 24 (issue 18), each on the binary published
 * on the npm registry (fetched once by test/helpers/node-runtime.ts). Where no
 * uWS build loads (this machine: glibc 2.36, the Node 22 and 24 build needs
 * 2.38), the proxy exits 2 with one line naming the Node version, the libc
 * and what to install, and no stack trace. Where one loads, it serves its
 * probes and stops cleanly on SIGTERM: on this machine's own glibc when that
 * is new enough, otherwise in a Debian 13 root (test/helpers/trixie-root.ts,
 * glibc 2.41, the container image's base) as the image runs it: the `node`
 * user, /app with /app/var writable, NODE_ENV=production. A release that
 * cannot be fetched, or a root that cannot be made here (not root, no
 * debootstrap, no mirror), skips its test with the reason.
 */
import t from 'tap'
import { buildRefusal, UWS_BUILDS, type UwsRuntime } from '../../server/http/uws-loader.js'
import { runService } from '../helpers/service-process.js'
import { freePort } from '../helpers/ports.js'
import { NODE_RELEASE_LINES, nodeRelease } from '../helpers/node-runtime.js'
import { IMAGE_USER, nodeInRoot, processUid, trixieRoot } from '../helpers/trixie-root.js'

const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime

// Made (or found) on first need only: on a machine whose glibc loads the builds, never.
let root: ReturnType<typeof trixieRoot> | undefined
const debianRoot = (): ReturnType<typeof trixieRoot> => (root ??= trixieRoot())

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

  // The machine's glibc when a build loads on it; else the Debian 13 root.
  const where = absent !== undefined || loadable ? undefined : await debianRoot()
  const noRoot = where !== undefined && 'unavailable' in where ? `no uWS build loads on Node ${line.major} with glibc ${glibc ?? 'none'}, and ${where.unavailable}` : false
  t.test(`Node ${line.major} with a loadable uWS build serves its probes`, { skip: absent ?? noRoot }, async (t) => {
    const inRoot = where !== undefined && 'path' in where ? where : undefined
    if (inRoot !== undefined) t.ok(UWS_BUILDS.some((b) => buildRefusal(b, { ...runtime, glibc: inRoot.glibc }) === undefined), `a uWS build loads with the Debian 13 root's glibc ${inRoot.glibc}`)
    const port = await freePort()
    // The public upstream is named: the root has no npm client to default to (the image does), and /livez needs no upstream.
    const env = { SERVICE_SERVER__PORT: String(port), SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/' }
    const run = runService(t, ['proxy'], env, inRoot === undefined ? node : await nodeInRoot(t, inRoot.path, node))
    await run.waitForOutput('listening', 30_000)
    if (inRoot !== undefined) t.equal(processUid(run.child.pid!), IMAGE_USER.uid, `runs as the image's ${IMAGE_USER.name} user, not root`)
    const res = await fetch(`http://127.0.0.1:${port}/livez`)
    t.equal(res.status, 200)
    await res.body?.cancel()
    run.child.kill('SIGTERM')
    t.same(await run.exited, { code: 0, signal: null })
  })
}
