/**
 * A throwaway project folder for one client run: a package.json with the
 * dependencies to install, and beside it the client's own HOME, cache and
 * config, so nothing is read from or written to the machine's.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface RegistryTarget {
  /** The registry URL the client is pointed at, e.g. the proxy's `http://127.0.0.1:PORT/js/`. */
  readonly registry: string
  /** A CA file to trust for an https registry. */
  readonly caFile?: string
  /** A bearer token for the registry (written as `_authToken`). */
  readonly authToken?: string
}

export interface ClientWorkspace {
  readonly root: string
  /** The project folder with package.json. */
  readonly dir: string
  readonly home: string
  readonly cacheDir: string
  /** The package.json of an installed dependency, read from node_modules. */
  installedManifest(name: string): Promise<{ name: string, version: string, [key: string]: unknown }>
  remove(): Promise<void>
}

export async function createClientWorkspace(dependencies: Readonly<Record<string, string>>): Promise<ClientWorkspace> {
  const root = await mkdtemp(join(tmpdir(), 'client-'))
  const dir = join(root, 'project')
  const home = join(root, 'home')
  const cacheDir = join(root, 'cache')
  await Promise.all([mkdir(dir), mkdir(home), mkdir(cacheDir)])
  await writeFile(join(dir, 'package.json'), JSON.stringify({
    name: 'client-workspace', version: '1.0.0', private: true, dependencies,
  }, null, 2))
  return {
    root, dir, home, cacheDir,
    async installedManifest(name) {
      return JSON.parse(await readFile(join(dir, 'node_modules', ...name.split('/'), 'package.json'), 'utf8')) as { name: string, version: string }
    },
    remove: () => rm(root, { recursive: true, force: true }),
  }
}

/**
 * The `.npmrc` lines for a registry: its URL, the CA, and the token keyed by
 * the registry's "nerf dart" (`//host:port/path/`), which npm, pnpm and yarn
 * classic all read.
 */
export function npmrcLines(target: RegistryTarget): string[] {
  const lines = [`registry=${target.registry}`]
  if (target.caFile !== undefined) lines.push(`cafile=${target.caFile}`, 'strict-ssl=true')
  if (target.authToken !== undefined) lines.push(`${nerfDart(target.registry)}:_authToken=${target.authToken}`)
  return lines
}

export function nerfDart(registry: string): string {
  const url = new URL(registry)
  const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`
  return `//${url.host}${path}`
}
