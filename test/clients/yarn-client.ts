/**
 * Yarn classic 1.22 from the project's devDependencies, run in a throwaway
 * workspace with its own cache folder. It reads the registry from the
 * project's `.yarnrc` and the token and CA from the project's `.npmrc`; HOME
 * is the workspace's, so the machine's own rc files are never read.
 * (Yarn berry's traps are in PEERS.md; it is not used here.)
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { localBin } from '../../bench/peers/repo-root.js'
import { cleanEnv, runCli, runCliOrThrow, type CliRun } from './run-cli.js'
import { npmrcLines, type ClientWorkspace, type RegistryTarget } from './workspace.js'
import type { NpmRunOptions } from './npm-client.js'

export async function yarnEnv(workspace: ClientWorkspace, target: RegistryTarget): Promise<NodeJS.ProcessEnv> {
  await writeFile(join(workspace.dir, '.npmrc'), [...npmrcLines(target), ''].join('\n'))
  const yarnrc = [
    `registry ${JSON.stringify(target.registry)}`,
    'disable-self-update-check true',
    ...(target.caFile === undefined ? [] : [`cafile ${JSON.stringify(target.caFile)}`, 'strict-ssl true']),
    '',
  ]
  await writeFile(join(workspace.dir, '.yarnrc'), yarnrc.join('\n'))
  return cleanEnv({
    HOME: workspace.home,
    XDG_CONFIG_HOME: join(workspace.home, '.config'),
    XDG_CACHE_HOME: join(workspace.cacheDir, 'xdg'),
  })
}

export async function runYarn(workspace: ClientWorkspace, target: RegistryTarget, args: readonly string[], options: NpmRunOptions = {}): Promise<CliRun> {
  const env = await yarnEnv(workspace, target)
  const argv = [
    ...args,
    '--non-interactive',
    '--no-progress',
    '--cache-folder', join(workspace.cacheDir, 'yarn'),
    '--registry', target.registry,
    '--network-timeout', '60000',
  ]
  const runOptions = { cwd: workspace.dir, env, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) }
  return options.allowFailure === true ? runCli(localBin('yarn'), argv, runOptions) : runCliOrThrow(localBin('yarn'), argv, runOptions)
}

export function yarnInstall(workspace: ClientWorkspace, target: RegistryTarget, options: NpmRunOptions = {}): Promise<CliRun> {
  return runYarn(workspace, target, ['install'], options)
}
