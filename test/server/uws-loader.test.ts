/**
 * The uWS loader (issue 18): the build that matches the running Node ABI
 * and libc is opened; when none can be, the refusal names the Node version,
 * the libc found and what to install, instead of a loader stack trace or a
 * silent fallback to a slow implementation.
 */
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { buildRefusal, currentRuntime, loadUws, openUws, UWS_BUILDS, type UwsBuild, type UwsRuntime } from '../../server/http/uws-loader.js'

const [older, newer] = UWS_BUILDS as [UwsBuild, UwsBuild]
const runtime = (over: Partial<UwsRuntime>): UwsRuntime => ({ node: 'v24.21.0', abi: 137, platform: 'linux', arch: 'x64', glibc: '2.36', ...over })

t.test('each build is judged by ABI and glibc', async (t) => {
  t.equal(buildRefusal(older, runtime({ abi: 115 })), undefined, 'Node 20 on glibc 2.36: the older build')
  t.match(buildRefusal(newer, runtime({ abi: 115 })), /needs glibc 2\.38 or newer; found 2\.36/)
  t.match(buildRefusal(older, runtime({ abi: 137 })), /no binary for Node ABI 137/)
  t.equal(buildRefusal(newer, runtime({ abi: 137, glibc: '2.41' })), undefined, 'Node 24 on Debian 13')
  t.equal(buildRefusal(newer, runtime({ abi: 137, glibc: '2.38' })), undefined, 'exactly 2.38')
  t.match(buildRefusal(newer, runtime({ abi: 137, glibc: undefined })), /no glibc was found \(musl\?\)/)
  t.equal(buildRefusal(newer, runtime({ abi: 137, platform: 'darwin', glibc: undefined })), undefined, 'no glibc needed off Linux')
})

t.test('this machine loads a build whose App answers', async (t) => {
  const uws = loadUws()
  t.type(uws.App, 'function')
  t.equal(loadUws(), uws, 'loaded once')
})

t.test('no build for Node 24 on glibc 2.36: BOOT_UNBUILDABLE naming Node, libc and what to install', async (t) => {
  try {
    openUws(UWS_BUILDS, runtime({}))
    t.fail('must refuse')
  } catch (error) {
    t.ok(isServiceError(error, 'BOOT_UNBUILDABLE'))
    const message = (error as Error).message
    t.match(message, /no uWebSockets\.js build loads on Node v24\.21\.0 \(ABI 137, linux-x64, glibc 2\.36\)/)
    t.match(message, /@trufflesuite\/uws-js-unofficial@20\.30\.0-unofficial\.0 has no binary for Node ABI 137/)
    t.match(message, /@btc-vision\/uwebsockets\.js@20\.57\.0 needs glibc 2\.38 or newer; found 2\.36/)
    t.match(message, /Node 22 or 24 with glibc 2\.38 or newer \(Debian 13, Ubuntu 24\.04/)
  }
})

t.test('a build that is missing or whose binary fails to load is passed over with its reason', async (t) => {
  const here = currentRuntime()
  const missing: UwsBuild = { ...older, name: 'no-such-uws-package', published: 'no-such-uws-package@1.0.0', abis: [here.abi], minGlibc: [2, 0] }
  const broken: UwsBuild = { ...older, published: 'broken@1.0.0', abis: [here.abi], minGlibc: [2, 0], binary: () => new URL(import.meta.url).pathname }
  try {
    openUws([missing, broken], here)
    t.fail('must refuse')
  } catch (error) {
    const message = (error as Error).message
    t.match(message, /no-such-uws-package@1\.0\.0 is not installed \(dependency no-such-uws-package\)/)
    t.match(message, /broken@1\.0\.0 did not load: /)
  }
})
