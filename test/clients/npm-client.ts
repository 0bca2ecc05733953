/**
 * The machine's npm 11 (PEERS.md "Clients") run in a throwaway workspace with
 * its own user config, an empty global config, its own cache, and
 * `fetch-retries=0` so that a broken test fails at once instead of sitting
 * silent for over a minute on retries.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cleanEnv, runCli, runCliOrThrow, type CliRun } from './run-cli.js'
import { npmrcLines, type ClientWorkspace, type RegistryTarget } from './workspace.js'

/** npm is not a devDependency: it is the machine's own npm 11. */
export const NPM_COMMAND = 'npm'

export interface NpmRunOptions {
  readonly timeoutMs?: number
  /** Exit status other than 0 throws CliFailure unless this is true. */
  readonly allowFailure?: boolean
}

/** Writes the workspace's npm config files and returns the environment that selects them. */
export async function npmEnv(workspace: ClientWorkspace, target: RegistryTarget): Promise<NodeJS.ProcessEnv> {
  const userconfig = join(workspace.root, 'npmrc')
  const globalconfig = join(workspace.root, 'npmrc-global')
  await writeFile(userconfig, [
    ...npmrcLines(target),
    `cache=${workspace.cacheDir}`,
    'fetch-retries=0',
    'fetch-timeout=60000',
    'audit=false',
    'fund=false',
    'update-notifier=false',
    'progress=false',
    '',
  ].join('\n'))
  await writeFile(globalconfig, '')
  return cleanEnv({
    HOME: workspace.home,
    npm_config_userconfig: userconfig,
    npm_config_globalconfig: globalconfig,
  })
}

export async function runNpm(workspace: ClientWorkspace, target: RegistryTarget, args: readonly string[], options: NpmRunOptions = {}): Promise<CliRun> {
  const env = await npmEnv(workspace, target)
  const argv = [...args, '--userconfig', join(workspace.root, 'npmrc'), '--registry', target.registry, '--fetch-retries=0']
  const runOptions = { cwd: workspace.dir, env, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) }
  return options.allowFailure === true ? runCli(NPM_COMMAND, argv, runOptions) : runCliOrThrow(NPM_COMMAND, argv, runOptions)
}

/** `npm install` of the workspace's package.json dependencies. */
export function npmInstall(workspace: ClientWorkspace, target: RegistryTarget, options: NpmRunOptions = {}): Promise<CliRun> {
  return runNpm(workspace, target, ['install', '--no-audit', '--no-fund'], options)
}
