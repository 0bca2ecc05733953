/**
 * pnpm 10 from the project's devDependencies, run in a throwaway workspace
 * with its store, cache and state inside it (PEERS.md: give it `--store-dir`).
 * `--no-frozen-lockfile` because pnpm freezes the lockfile when it sees CI,
 * and a throwaway workspace has none.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { localBin } from '../../bench/peers/repo-root.js'
import { cleanEnv, runCli, runCliOrThrow, type CliRun } from './run-cli.js'
import { npmrcLines, type ClientWorkspace, type RegistryTarget } from './workspace.js'
import type { NpmRunOptions } from './npm-client.js'

export async function pnpmEnv(workspace: ClientWorkspace, target: RegistryTarget): Promise<NodeJS.ProcessEnv> {
  await writeFile(join(workspace.dir, '.npmrc'), [...npmrcLines(target), 'fetch-retries=0', ''].join('\n'))
  return cleanEnv({
    HOME: workspace.home,
    XDG_CONFIG_HOME: join(workspace.home, '.config'),
    XDG_CACHE_HOME: join(workspace.cacheDir, 'xdg'),
    XDG_DATA_HOME: join(workspace.home, '.local', 'share'),
    XDG_STATE_HOME: join(workspace.home, '.local', 'state'),
  })
}

export async function runPnpm(workspace: ClientWorkspace, target: RegistryTarget, args: readonly string[], options: NpmRunOptions = {}): Promise<CliRun> {
  const env = await pnpmEnv(workspace, target)
  const argv = [
    ...args,
    '--registry', target.registry,
    '--store-dir', join(workspace.cacheDir, 'pnpm-store'),
    '--cache-dir', join(workspace.cacheDir, 'pnpm-cache'),
    '--reporter', 'append-only',
  ]
  const runOptions = { cwd: workspace.dir, env, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) }
  return options.allowFailure === true ? runCli(localBin('pnpm'), argv, runOptions) : runCliOrThrow(localBin('pnpm'), argv, runOptions)
}

export function pnpmInstall(workspace: ClientWorkspace, target: RegistryTarget, options: NpmRunOptions = {}): Promise<CliRun> {
  return runPnpm(workspace, target, ['install', '--no-frozen-lockfile'], options)
}
