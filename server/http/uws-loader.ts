/**
 * Loads the uWebSockets.js build that matches the running Node ABI, platform
 * and libc (DESIGN.md "Node 20 is what the machines run"; issue 18).
 *
 * Why not `import 'uWebSockets.js'`: the package's own entry falls back to a
 * slow pure-Node implementation (with a console warning) when its binary
 * does not load, and the newer build throws a loader stack trace. Neither is
 * what an operator should get: this module opens the native binary itself,
 * from the first build that can load here, and otherwise fails with a
 * `BOOT_UNBUILDABLE` error (exit 2) naming the Node version, the libc found,
 * and what to install.
 *
 * Builds, in order of preference:
 * - `uWebSockets.js` (`@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0`):
 *   Node 16, 18 and 20 (ABI 93, 108, 115), glibc 2.27 and newer (its binaries' newest GLIBC symbol); the build
 *   the tests run on, so it is preferred where it loads.
 * - `uWebSockets.js-next` (`@btc-vision/uwebsockets.js@20.57.0`): Node 20,
 *   22, 24 and 25 (ABI 115, 127, 137, 141), linked against glibc 2.38
 *   (Debian 13, Ubuntu 24.04).
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type * as Uws from 'uWebSockets.js'
import { ServiceError } from '../../engine/errors.js'

export type UwsModule = typeof Uws

export interface UwsBuild {
  /** The dependency name in package.json. */
  readonly name: string
  /** The published package and version, for messages. */
  readonly published: string
  /** Node ABIs (`process.versions.modules`) it ships binaries for. */
  readonly abis: readonly number[]
  /** The oldest glibc its Linux binaries load on. */
  readonly minGlibc: readonly [number, number]
  /** The binary's path for this runtime, from the package's resolved entry. */
  binary(entry: string, file: string): string
}

export const UWS_BUILDS: readonly UwsBuild[] = [
  {
    name: 'uWebSockets.js',
    published: '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0',
    abis: [93, 108, 115],
    minGlibc: [2, 27],
    // The entry is src/uws.js; the binaries sit beside src/.
    binary: (entry, file) => join(dirname(entry), '..', 'binaries', file),
  },
  {
    name: 'uWebSockets.js-next',
    published: '@btc-vision/uwebsockets.js@20.57.0',
    abis: [115, 127, 137, 141],
    minGlibc: [2, 38],
    binary: (entry, file) => join(dirname(entry), file),
  },
]

/** What the loader knows of the running process. */
export interface UwsRuntime {
  readonly node: string
  readonly abi: number
  readonly platform: string
  readonly arch: string
  /** glibc's runtime version; undefined off Linux or on another libc (musl). */
  readonly glibc: string | undefined
}

export function currentRuntime(): UwsRuntime {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
  return {
    node: process.version,
    abi: Number(process.versions.modules),
    platform: process.platform,
    arch: process.arch,
    glibc: header?.glibcVersionRuntime,
  }
}

/** Why one build cannot serve this runtime, or undefined when it may be tried. */
export function buildRefusal(build: UwsBuild, runtime: UwsRuntime): string | undefined {
  if (!build.abis.includes(runtime.abi)) return `${build.published} has no binary for Node ABI ${runtime.abi}`
  if (runtime.platform !== 'linux') return undefined
  if (runtime.glibc === undefined) return `${build.published} needs glibc; no glibc was found (musl?)`
  const [major, minor] = runtime.glibc.split('.').map(Number)
  const [needMajor, needMinor] = build.minGlibc
  if ((major ?? 0) < needMajor || ((major ?? 0) === needMajor && (minor ?? 0) < needMinor)) {
    return `${build.published} needs glibc ${needMajor}.${needMinor} or newer; found ${runtime.glibc}`
  }
  return undefined
}

let loaded: UwsModule | undefined

/** The uWS module for this process (loaded once). Throws BOOT_UNBUILDABLE when no build loads. */
export function loadUws(): UwsModule {
  loaded ??= openUws(UWS_BUILDS, currentRuntime())
  return loaded
}

/** Opens the first of `builds` that can load on `runtime`; BOOT_UNBUILDABLE with every reason otherwise. */
export function openUws(builds: readonly UwsBuild[], runtime: UwsRuntime): UwsModule {
  const require = createRequire(import.meta.url)
  const file = `uws_${runtime.platform}_${runtime.arch}_${runtime.abi}.node`
  const reasons: string[] = []
  for (const build of builds) {
    const refusal = buildRefusal(build, runtime)
    if (refusal !== undefined) {
      reasons.push(refusal)
      continue
    }
    let entry: string
    try {
      entry = require.resolve(build.name)
    } catch {
      reasons.push(`${build.published} is not installed (dependency ${build.name})`)
      continue
    }
    const path = build.binary(entry, file)
    if (!existsSync(path)) {
      reasons.push(`${build.published} has no ${file}`)
      continue
    }
    try {
      return require(path) as UwsModule
    } catch (error) {
      reasons.push(`${build.published} did not load: ${firstLine(error)}`)
    }
  }
  throw new ServiceError('BOOT_UNBUILDABLE', {
    message: `no uWebSockets.js build loads on Node ${runtime.node} (ABI ${runtime.abi}, ${runtime.platform}-${runtime.arch}, `
      + `${runtime.glibc === undefined ? 'no glibc found' : `glibc ${runtime.glibc}`}): ${reasons.join('; ')}. `
      + 'Run on Node 20 (glibc 2.27 or newer), or on Node 22 or 24 with glibc 2.38 or newer (Debian 13, Ubuntu 24.04; the project\'s container image)',
    data: { node: runtime.node, abi: runtime.abi, glibc: runtime.glibc ?? null },
  })
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
}
