/**
 * Runs a package-manager CLI to completion with a clean environment: nothing
 * inherited from the npm, pnpm or yarn that launched the test run (those
 * `npm_config_*` variables would silently override the throwaway folder's
 * own configuration), HOME set to the throwaway folder, and none of tap's
 * process tracking and coverage hooks (a peer is not code under test).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { peerEnv } from '../../bench/peers/peer-env.js'

export interface CliRun {
  readonly command: string
  readonly args: readonly string[]
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export class CliFailure extends Error {
  readonly run: CliRun

  constructor(run: CliRun) {
    const ended = run.signal === null ? `exited ${run.exitCode}` : `was killed by ${run.signal}`
    super(`${run.command} ${run.args.join(' ')} ${ended}\n--- stdout\n${run.stdout.slice(-4000)}\n--- stderr\n${run.stderr.slice(-4000)}`)
    this.name = 'CliFailure'
    this.run = run
  }
}

const INHERITED_CONFIG = /^(npm_|yarn_|pnpm_|berry_|corepack_)/i

/** peerEnv without any package-manager configuration either. */
export function cleanEnv(extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env = peerEnv()
  for (const key of Object.keys(env)) if (INHERITED_CONFIG.test(key) || key === 'INIT_CWD') delete env[key]
  return { ...env, ...extra }
}

export interface RunCliOptions {
  readonly cwd: string
  readonly env: NodeJS.ProcessEnv
  /** Kills the CLI (SIGKILL) after this long; default 120 s. */
  readonly timeoutMs?: number
  /** Sees the child once spawned (a workspace that kills its children at teardown). */
  readonly onSpawn?: (child: ChildProcess) => void
}

/** Resolves with the run whatever its exit status; see `runCliOrThrow`. */
export function runCli(command: string, args: readonly string[], options: RunCliOptions): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
    options.onSpawn?.(child)
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer)
      resolve({
        command, args, exitCode, signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      })
    })
  })
}

export async function runCliOrThrow(command: string, args: readonly string[], options: RunCliOptions): Promise<CliRun> {
  const run = await runCli(command, args, options)
  if (run.exitCode !== 0) throw new CliFailure(run)
  return run
}
