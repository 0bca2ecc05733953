/**
 * Debian's pip (`/usr/bin/python3 -m pip`, python3-pip from test/setup)
 * run hermetically in a throwaway folder: its own HOME and XDG folders, no
 * configuration file at all, no cache, no inherited `PIP_*` or CA-bundle
 * variables, and one index only, so a test cannot quietly resolve from the
 * machine's extra wheel sources (PEERS.md "Clients", and the pip traps under
 * "Peers for the mirror, publish, Dredger, telemetry and py work").
 *
 * - `PIP_CONFIG_FILE=/dev/null` MUST be set: `--isolated` alone still reads
 *   the global `/etc/pip.conf`; pip skips every configuration file only when
 *   that variable names the null device (pip reads it even when isolated).
 * - `REQUESTS_CA_BUNDLE` and `CURL_CA_BUNDLE` override `--cert` in pip's
 *   requests session, so they are removed.
 * - Never a pyenv shim or another python3 on PATH: CI is a fresh Debian 12.
 *
 * A run is killed (SIGKILL) at its timeout, and at the workspace's teardown
 * if it is still running then.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CliFailure, cleanEnv, runCli, type CliRun } from './run-cli.js'

export const PIP_PYTHON = '/usr/bin/python3'

/** Environment variables that would reconfigure pip or its TLS behind the arguments' back. */
const INHERITED_PIP = /^(PIP_|PYTHON|VIRTUAL_ENV$|CONDA_|PYENV|REQUESTS_CA_BUNDLE$|CURL_CA_BUNDLE$|SSL_CERT_FILE$|SSL_CERT_DIR$|XDG_)/

export interface PipTarget {
  /** The Simple index, e.g. the proxy's `http://127.0.0.1:PORT/py/simple/`. */
  readonly indexUrl: string
  /** A CA file to trust for an https index (`--cert`). */
  readonly caFile?: string
}

export interface PipRunOptions {
  /** Kills pip (SIGKILL) after this long; default 90 s. */
  readonly timeoutMs?: number
  /** Exit status other than 0 throws CliFailure unless this is true. */
  readonly allowFailure?: boolean
  readonly noDeps?: boolean
  /** `--only-binary`, e.g. `:all:`. */
  readonly onlyBinary?: string
  /** `--no-binary`, e.g. `:all:`. */
  readonly noBinary?: string
  /** Further arguments, placed before the requirements. */
  readonly extraArgs?: readonly string[]
}

export interface InstalledDist {
  readonly name: string
  readonly version: string
}

export interface PipRun extends CliRun {
  /** `download`: the files in the download folder. `install`: the entries of the target folder. Sorted. */
  readonly files: readonly string[]
  /** `install`: the distributions in the target folder, from their `.dist-info` names. Sorted by name. */
  readonly installed: readonly InstalledDist[]
}

interface Teardown { teardown(fn: () => unknown): void }

/** A fresh folder for one or more pip runs; see `createPipWorkspace`. */
export class PipWorkspace {
  readonly root: string
  readonly home: string
  /** Where `pipDownload` puts files. */
  readonly downloadDir: string
  /** Where `pipInstall` installs (`--target`); never the system site-packages. */
  readonly targetDir: string
  readonly #children = new Set<ChildProcess>()

  constructor(root: string) {
    this.root = root
    this.home = join(root, 'home')
    this.downloadDir = join(root, 'download')
    this.targetDir = join(root, 'target')
  }

  /** Tracks a running pip so that `remove` can kill it. */
  track(child: ChildProcess): void {
    this.#children.add(child)
    child.once('close', () => this.#children.delete(child))
    child.once('error', () => this.#children.delete(child))
  }

  /** Kills any pip still running, then deletes the folder. */
  async remove(): Promise<void> {
    for (const child of this.#children) child.kill('SIGKILL')
    await rm(this.root, { recursive: true, force: true })
  }
}

/** A fresh workspace; removed, and any pip still running in it killed, at teardown (even when the test fails). */
export async function createPipWorkspace(t: Teardown): Promise<PipWorkspace> {
  const workspace = new PipWorkspace(await mkdtemp(join(tmpdir(), 'pip-client-')))
  t.teardown(() => workspace.remove())
  await Promise.all([mkdir(workspace.home), mkdir(workspace.downloadDir), mkdir(workspace.targetDir)])
  return workspace
}

/** The clean environment pip runs with (module comment). */
export function pipEnv(workspace: PipWorkspace): NodeJS.ProcessEnv {
  const env = cleanEnv({})
  for (const key of Object.keys(env)) if (INHERITED_PIP.test(key)) delete env[key]
  return {
    ...env,
    HOME: workspace.home,
    XDG_CONFIG_HOME: join(workspace.home, '.config'),
    XDG_CACHE_HOME: join(workspace.home, '.cache'),
    XDG_DATA_HOME: join(workspace.home, '.local', 'share'),
    PIP_CONFIG_FILE: '/dev/null',
    PYTHONNOUSERSITE: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  }
}

/** The arguments every run gets, after the subcommand. */
export function pipCommonArgs(target: PipTarget, options: PipRunOptions): string[] {
  const args = [
    '--isolated', '--no-input', '--disable-pip-version-check', '--no-cache-dir', '--progress-bar', 'off',
    '--timeout', '20', '--retries', '1',
    '--index-url', target.indexUrl,
  ]
  if (target.caFile !== undefined) args.push('--cert', target.caFile)
  if (options.noDeps === true) args.push('--no-deps')
  if (options.onlyBinary !== undefined) args.push('--only-binary', options.onlyBinary)
  if (options.noBinary !== undefined) args.push('--no-binary', options.noBinary)
  args.push(...(options.extraArgs ?? []))
  return args
}

function spawnPip(workspace: PipWorkspace, args: readonly string[], timeoutMs: number): Promise<CliRun> {
  return runCli(PIP_PYTHON, ['-m', 'pip', ...args], { cwd: workspace.root, env: pipEnv(workspace), timeoutMs, onSpawn: (child) => workspace.track(child) })
}

const DIST_INFO = /^(.+)-([^-]+)\.dist-info$/

async function finish(run: CliRun, listDir: string, options: PipRunOptions): Promise<PipRun> {
  const files = (await readdir(listDir)).sort()
  const installed = files
    .map((f) => DIST_INFO.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ name: m[1] ?? '', version: m[2] ?? '' }))
    .sort((a, b) => a.name.localeCompare(b.name))
  const result: PipRun = { ...run, files, installed }
  if (run.exitCode !== 0 && options.allowFailure !== true) throw new CliFailure(run)
  return result
}

/** `pip download -d {downloadDir} ...requirements`. */
export async function pipDownload(workspace: PipWorkspace, target: PipTarget, requirements: readonly string[], options: PipRunOptions = {}): Promise<PipRun> {
  const run = await spawnPip(workspace, ['download', '--dest', workspace.downloadDir, ...pipCommonArgs(target, options), ...requirements], options.timeoutMs ?? 90_000)
  return finish(run, workspace.downloadDir, options)
}

/** `pip install --target {targetDir} ...requirements`: nothing touches the system site-packages. */
export async function pipInstall(workspace: PipWorkspace, target: PipTarget, requirements: readonly string[], options: PipRunOptions = {}): Promise<PipRun> {
  const run = await spawnPip(workspace, ['install', '--target', workspace.targetDir, '--no-compile', '--no-warn-script-location', '--root-user-action', 'ignore', ...pipCommonArgs(target, options), ...requirements], options.timeoutMs ?? 90_000)
  return finish(run, workspace.targetDir, options)
}

/** The version of Debian's pip, e.g. `23.0.1` (Debian 12). */
export async function pipVersion(t: Teardown): Promise<string> {
  const workspace = await createPipWorkspace(t)
  const run = await spawnPip(workspace, ['--version'], 30_000)
  const match = /^pip (\S+) /.exec(run.stdout)
  if (run.exitCode !== 0 || match === null) throw new CliFailure(run)
  return match[1] ?? ''
}
