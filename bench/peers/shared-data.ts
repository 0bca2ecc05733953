/**
 * The real fixtures in `../shared/data` beside the repository (its README says
 * what each file is). Tests read them from there, never from a public
 * registry. `SHARED_DATA_DIR` names the data folder itself when it lives
 * elsewhere (CI clones the repository with `shared/` beside it).
 */
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { repoRoot } from './repo-root.js'

export function sharedDataDir(): string {
  const override = process.env.SHARED_DATA_DIR
  if (override !== undefined && override !== '') return resolve(override)
  return join(repoRoot(), '..', 'shared', 'data')
}

export function sharedDataPath(...segments: string[]): string {
  return join(sharedDataDir(), ...segments)
}

/** The packuments the data README lists under npm-packuments/raw. */
export const FIXTURE_PACKUMENTS = ['left-pad', 'lodash', 'express', 'react', '@types/node', 'typescript'] as const
export type FixturePackumentName = (typeof FIXTURE_PACKUMENTS)[number]

/** `@types/node` is stored as `types__node` (the README's naming). */
function fileStem(name: string): string {
  return name.startsWith('@') ? name.slice(1).replace('/', '__') : name
}

/**
 * The raw packument bytes as the mirror served them (uncompressed). Their
 * `dist.tarball` hosts read `public-registry.example` (README, section 3).
 */
export async function readPackumentBytes(name: FixturePackumentName): Promise<Buffer> {
  const stem = join(sharedDataDir(), 'npm-packuments', 'raw', fileStem(name))
  try {
    return await readFile(`${stem}.json`)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return gunzipSync(await readFile(`${stem}.json.gz`))
  }
}

export interface FixturePackument {
  readonly _id?: string
  readonly name: string
  readonly 'dist-tags': Record<string, string>
  readonly versions: Record<string, { readonly version: string, readonly dist: { readonly tarball: string, readonly integrity?: string, readonly shasum?: string }, readonly [key: string]: unknown }>
  readonly time?: Record<string, string>
  readonly [key: string]: unknown
}

export async function readPackument(name: FixturePackumentName): Promise<FixturePackument> {
  return JSON.parse((await readPackumentBytes(name)).toString('utf8')) as FixturePackument
}
