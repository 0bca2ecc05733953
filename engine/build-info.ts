/**
 * The running binary's own version (SPEC.md 9: stamped on traces and logs
 * when no version setting is given). Read from the package's package.json,
 * found by walking up from this module, so it holds both for the sources
 * under test and for the build in dist/.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface BuildInfo {
  readonly name: string
  readonly version: string
  /** The package's root folder. */
  readonly root: string
}

export function readBuildInfo(from: string = import.meta.url): BuildInfo {
  let dir = dirname(fileURLToPath(from))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string; bin?: unknown }
      if (typeof pkg.version === 'string' && pkg.bin !== undefined) return Object.freeze({ name: pkg.name ?? 'service', version: pkg.version, root: dir })
    } catch { /* keep walking */ }
    const parent = dirname(dir)
    if (parent === dir) return Object.freeze({ name: 'service', version: '0.0.0', root: dir })
    dir = parent
  }
}
