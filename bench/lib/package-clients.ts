/**
 * The package-manager clients the install scenarios run (npm on the machine,
 * pnpm and yarn classic from the devDependencies), each in a workspace of its
 * own: HOME, XDG folders, cache and store inside it, none of the launching
 * npm's configuration, and `fetch-retries=0` where the client has it
 * (PEERS.md: with retries an untrusted certificate can sit silent for over a
 * minute). bench/ never imports from test/, so this is a small copy of
 * test/clients.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { peerEnv } from '../peers/peer-env.js'
import { localBin } from '../peers/repo-root.js'

export type ClientName = 'npm' | 'pnpm' | 'yarn'
export const CLIENT_NAMES: readonly ClientName[] = ['npm', 'pnpm', 'yarn']

export interface ClientRun { readonly exitCode: number | null, readonly signal: NodeJS.Signals | null, readonly output: string, readonly seconds: number }

export interface InstallOptions {
  /** Install exactly the lockfile in the project (`npm ci`, `--frozen-lockfile`), as CI runs; default: resolve and write one. */
  readonly frozenLockfile?: boolean
  /** A CA file the client trusts for an https registry (written as its `cafile` setting). */
  readonly caFile?: string
}

/** The environment a client runs with: none of the launching npm's configuration, HOME and XDG folders in the workspace. */
export function clientEnv(root: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = peerEnv()
  for (const key of Object.keys(env)) if (/^(npm_|yarn_|pnpm_|berry_|corepack_)/i.test(key) || key === 'INIT_CWD') delete env[key]
  return {
    ...env,
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'home', '.config'),
    XDG_CACHE_HOME: join(root, 'cache', 'xdg'),
    XDG_DATA_HOME: join(root, 'home', '.local', 'share'),
    XDG_STATE_HOME: join(root, 'home', '.local', 'state'),
    ...extra,
  }
}

/** The command a client runs as, or why it cannot run here. */
export function clientCommand(client: ClientName): string | { unavailable: string } {
  if (client === 'npm') return 'npm'
  const bin = localBin(client)
  return existsSync(bin) ? bin : { unavailable: `${bin} is missing (npm ci installs it)` }
}

/**
 * The arguments and environment of one install in `project`, with the
 * client's configuration written into the workspace `root` (its `home` and
 * `cache` folders must exist).
 */
export async function installCommand(client: ClientName, root: string, project: string, registry: string, options: InstallOptions = {}): Promise<{ args: string[], env: NodeJS.ProcessEnv }> {
  const cache = join(root, 'cache')
  const frozen = options.frozenLockfile === true
  const ca = options.caFile === undefined ? [] : [`cafile=${options.caFile}`]
  switch (client) {
    case 'npm': {
      const userconfig = join(root, 'npmrc')
      await writeFile(userconfig, [`registry=${registry}`, `cache=${join(cache, 'npm')}`, 'fetch-retries=0', 'audit=false', 'fund=false', 'update-notifier=false', 'progress=false', ...ca, ''].join('\n'))
      await writeFile(join(root, 'npmrc-global'), '')
      return {
        args: [frozen ? 'ci' : 'install', '--no-audit', '--no-fund', '--registry', registry, '--userconfig', userconfig],
        env: clientEnv(root, { npm_config_userconfig: userconfig, npm_config_globalconfig: join(root, 'npmrc-global') }),
      }
    }
    case 'pnpm':
      await writeFile(join(project, '.npmrc'), [`registry=${registry}`, 'fetch-retries=0', 'update-notifier=false', ...ca, ''].join('\n'))
      return {
        args: ['install', frozen ? '--frozen-lockfile' : '--no-frozen-lockfile', '--registry', registry, '--store-dir', join(cache, 'pnpm-store'), '--cache-dir', join(cache, 'pnpm-cache'), '--reporter', 'append-only'],
        env: clientEnv(root),
      }
    case 'yarn':
      await writeFile(join(project, '.npmrc'), [`registry=${registry}`, ''].join('\n'))
      await writeFile(join(project, '.yarnrc'), [`registry ${JSON.stringify(registry)}`, 'disable-self-update-check true', ...(options.caFile === undefined ? [] : [`cafile ${JSON.stringify(options.caFile)}`]), ''].join('\n'))
      return {
        args: ['install', ...(frozen ? ['--frozen-lockfile'] : []), '--non-interactive', '--no-progress', '--cache-folder', join(cache, 'yarn'), '--registry', registry, '--network-timeout', '60000'],
        env: clientEnv(root),
      }
  }
}

/** Runs one command to its end (killed at `timeoutMs`), keeping the last 8 KiB of its output. */
export function runCommand(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<ClientRun> {
  const started = process.hrtime.bigint()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const keep = (chunk: Buffer): void => { output = (output + chunk.toString('utf8')).slice(-8192) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer)
      resolve({ exitCode, signal, output, seconds: Number(process.hrtime.bigint() - started) / 1e9 })
    })
  })
}
