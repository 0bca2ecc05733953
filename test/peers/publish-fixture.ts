/**
 * Publishes a fixture package to a Verdaccio peer with the real npm CLI
 * (`npm publish --userconfig`, PEERS.md), from a throwaway folder that is
 * removed afterwards. The publishing user is made without prompts.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { runNpm } from '../clients/npm-client.js'
import type { CliRun } from '../clients/run-cli.js'
import { createClientWorkspace } from '../clients/workspace.js'
import type { VerdaccioPeer } from '../../bench/peers/verdaccio.js'

export interface FixturePackage {
  readonly name: string
  readonly version: string
  /** Paths relative to the package root; default one `index.js` naming the package. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>
  readonly dependencies?: Readonly<Record<string, string>>
  /** Publish under this dist-tag; npm requires one for a prerelease. Default `latest`. */
  readonly tag?: string
  /** More package.json fields (e.g. `license`, `scripts`). */
  readonly manifest?: Readonly<Record<string, unknown>>
}

export async function publishFixture(registry: VerdaccioPeer, pkg: FixturePackage): Promise<CliRun> {
  const token = await registry.publisherToken()
  const workspace = await createClientWorkspace({})
  try {
    const manifest = {
      license: 'MIT',
      description: `fixture ${pkg.name}@${pkg.version}`,
      ...pkg.manifest,
      name: pkg.name,
      version: pkg.version,
      ...(pkg.dependencies === undefined ? {} : { dependencies: pkg.dependencies }),
    }
    await writeFile(join(workspace.dir, 'package.json'), JSON.stringify(manifest, null, 2))
    const files = pkg.files ?? { 'index.js': `module.exports = ${JSON.stringify(`${pkg.name}@${pkg.version}`)}\n` }
    for (const [path, content] of Object.entries(files)) {
      const target = join(workspace.dir, path)
      await mkdir(dirname(target), { recursive: true })
      await writeFile(target, content)
    }
    const target = { registry: registry.url, authToken: token, ...(registry.caFile === undefined ? {} : { caFile: registry.caFile }) }
    return await runNpm(workspace, target, ['publish', '--tag', pkg.tag ?? 'latest', '--access', 'public'])
  } finally {
    await workspace.remove()
  }
}
