#!/usr/bin/env node
/**
 * `service`, the launcher (package.json `bin`).
 *
 * Why a launcher: V8's heap limits are fixed when Node starts, and the memory
 * plan (SPEC.md 8.2) is only known once the configuration and the cgroup are
 * read. So the launcher reads both, computes the plan, and starts the service
 * process (server/cli/run-role.ts) with the matching `--max-old-space-size`
 * and `--max-semi-space-size` (DESIGN.md "Memory and sizing"), and holds the
 * C allocator's mmap threshold fixed (engine/memory/malloc-tunables.ts). It also gives
 * SPEC.md 7.2 its exit codes when the service dies in a way it cannot report
 * itself: a V8 heap overflow aborts the process without running any
 * JavaScript, so the launcher watches its stderr and writes the
 * `service: service exited: <detail>` line, exit 1; a kill from outside that
 * bypassed the graceful path is exit 3.
 *
 * Signals: the service process runs in a session (and process group) of its
 * own, so only the launcher's forward ever reaches it. A signal sent to the
 * launcher's whole group (`kill -TERM -<pgid>`, GNU timeout, systemd's
 * default KillMode, Ctrl-C on a terminal) would otherwise reach the service
 * twice, directly and forwarded, and the second would count as a second
 * signal: exit 3 with no drain (SPEC.md 3.1). SIGTERM and SIGINT are
 * forwarded as they come; SIGHUP is passed on as SIGHUP, which re-reads the
 * policy document (server/roles/policy-reloader.ts) instead of stopping. The service
 * still stops when the launcher is lost: it exits on the loss of the IPC
 * channel (server/cli/run-role.ts).
 *
 * `check-config` and `--help` run in this process: they start no role.
 */
import { spawn } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { loadConfig } from '../../engine/config/load.js'
import { formatProblems } from '../../engine/config/problems.js'
import { mallocTunables } from '../../engine/memory/malloc-tunables.js'
import { v8Limits } from '../../engine/memory/v8-limits.js'
import { EXIT, SERVICE_EXITED } from '../lifecycle/exit-codes.js'
import { planFor } from '../roles/runtime-plan.js'
import { parseArgs } from './args.js'
import { main, roleRefusal } from './main.js'

const TAIL_BYTES = 8192
const CRASH_SIGNALS = new Set(['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGTRAP'])

async function launch(argv: readonly string[]): Promise<void> {
  const command = parseArgs(argv)
  if (command.kind !== 'role') return main(argv)

  const loaded = loadConfig({ configPath: command.configPath, env: process.env })
  const refusal = loaded.ok ? roleRefusal(command) : formatProblems(loaded.problems)
  if (!loaded.ok || refusal !== undefined) {
    process.stderr.write(`${refusal}\n`)
    process.exitCode = EXIT.BOOT_ABORTED
    return
  }
  const flags = v8Limits(await planFor(loaded.config)).mainExecArgv
  const entry = fileURLToPath(new URL('./run-role.js', import.meta.url))
  const child = spawn(process.execPath, [...flags, entry, ...argv], {
    stdio: ['inherit', 'inherit', 'pipe', 'ipc'],
    // A session of its own: a signal to the launcher's process group reaches the service once, through `forward`.
    detached: true,
    env: { ...process.env, GLIBC_TUNABLES: mallocTunables(process.env['GLIBC_TUNABLES']) },
  })

  let tail = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk)
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES)
  })

  const forward = (signal: NodeJS.Signals): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
  process.on('SIGTERM', () => forward('SIGTERM'))
  process.on('SIGINT', () => forward('SIGINT'))
  process.on('SIGHUP', () => forward('SIGHUP'))

  child.on('exit', (code, signal) => {
    const outcome = childOutcome(code, signal, tail)
    if (outcome.detail !== undefined) process.stderr.write(`${SERVICE_EXITED} ${outcome.detail}\n`)
    process.exitCode = outcome.exitCode
  })
}

/** SPEC.md 7.2's code for how the service process ended, with the detail line when it could not write one itself. */
export function childOutcome(code: number | null, signal: string | null, stderrTail: string): { exitCode: number; detail?: string } {
  if (code !== null) return { exitCode: code }
  if (signal !== null && CRASH_SIGNALS.has(signal)) {
    const detail = /heap out of memory|Reached heap limit/i.test(stderrTail)
      ? 'heap overflow (JavaScript heap out of memory; raise the memory limit or SERVICE_RUNTIME__MAX_HEAP_BYTES)'
      : `crashed with ${signal}`
    return { exitCode: EXIT.ABNORMAL, detail }
  }
  return { exitCode: EXIT.CANCELLED, detail: `stopped from outside by ${signal ?? 'an unknown cause'}, bypassing the graceful drain` }
}

// Run only as the entry point, so tests can import childOutcome.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  await launch(process.argv.slice(2))
}
