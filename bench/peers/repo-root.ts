/**
 * Where the repository is, found from this file's own location so that the
 * helpers work both as sources (tap runs `.ts`) and compiled under `dist/`
 * (the bench imports them). The root is the nearest folder above whose
 * package.json names this project.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const PROJECT_NAME = 'registry-proxy-service'

export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }
      if (parsed.name === PROJECT_NAME) return dir
    }
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json named ${PROJECT_NAME} above ${fileURLToPath(import.meta.url)}`)
    dir = parent
  }
}

/** A command installed by the project's own devDependencies; never a global install. */
export function localBin(name: string): string {
  return join(repoRoot(), 'node_modules', '.bin', name)
}
