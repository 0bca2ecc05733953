/**
 * The service process proper: parse the command, load and check the
 * configuration, start the role, and own the process-level exits of SPEC.md
 * 7.2. It runs under the launcher (server/cli/service.ts) for long-running
 * roles, and in-process for `check-config`.
 */
import { readBuildInfo } from '../../engine/build-info.js'
import { systemClock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { loadConfig } from '../../engine/config/load.js'
import { ERROR_TABLE, isServiceError } from '../../engine/errors.js'
import { formatProblems } from '../../engine/config/problems.js'
import { resolveIdentity } from '../../engine/log/identity.js'
import { createProcessLogger, type ProcessLogger } from '../../engine/log/pino-logger.js'
import { TELEMETRY_OFF, type Telemetry } from '../../engine/telemetry/instruments.js'
import { privateOrigins } from '../../engine/telemetry/private-origins.js'
import { TraceContext } from '../../engine/telemetry/trace-context.js'
import { forwardProxyOf } from '../../engine/upstream/forward-proxy.js'
import { proxiedAgents } from '../../engine/upstream/proxied-agents.js'
import { EXIT, SERVICE_EXITED } from '../lifecycle/exit-codes.js'
import { Shutdown } from '../lifecycle/shutdown.js'
import type { RoleContext, RunningRole } from '../roles/role-context.js'
import { parseArgs, USAGE, type Command, type Role } from './args.js'

export const ROLE_UNAVAILABLE = ERROR_TABLE.ROLE_UNAVAILABLE.message
/** info: SIGHUP reached a role that reads no policy document (neither `policy.file` nor `policy.store`). */
export const POLICY_RELOAD_NOTHING = 'policy reload: this role reads no policy document'

/**
 * Roles this build can run; the others refuse at boot with exit 2 (SPEC.md 7.2).
 * Each role's modules load when it starts, not with this file: the launcher
 * (service.ts) imports this file only to refuse, and a process runs one role,
 * so neither pays for the others' trees (the AWS SDK, OpenTelemetry, Piscina).
 */
const STARTERS: Partial<Record<Role, (ctx: RoleContext) => Promise<RunningRole>>> = {
  proxy: async (ctx) => (await import('../roles/proxy.js')).startProxy(ctx),
  mirror: async (ctx) => (await import('../roles/mirror.js')).startMirror(ctx),
  pilot: async (ctx) => (await import('../roles/pilot.js')).startPilot(ctx),
  dredger: async (ctx) => (await import('../roles/dredger.js')).startDredger(ctx),
}

/**
 * Roles a load balancer sends client traffic to: their drain opens with the lame-duck period
 * (`server.drainDelaySeconds`, server/lifecycle/shutdown.ts). The mirror, Pilot and Dredger serve only their
 * own probes, which the kubelet reads and no Service routes (deploy/): nobody would be refused while their
 * listener closes, so the period would only hold their pods, and they close it at once.
 */
const SERVES_TRAFFIC: ReadonlySet<Role> = new Set<Role>(['proxy'])

/**
 * One-shot commands (`service pilot compile`): they resolve on success (exit
 * 0) and throw on failure: CONFIG_INVALID is a boot abort (exit 2), anything
 * else exit 1 with the `service: service exited:` line (SPEC.md 7.2).
 */
const ONE_SHOTS: Partial<Record<Role, (ctx: RoleContext) => Promise<void>>> = {
  pilot: async (ctx) => (await import('../roles/pilot.js')).runPilotCompile(ctx),
}

/** `--dry-run` one-shots (`service dredger --dry-run [--json]`): print, delete nothing, exit 0 (1 when a read failed and the listing is partial). */
const DRY_RUNS: Partial<Record<Role, (ctx: RoleContext, json: boolean) => Promise<void>>> = {
  dredger: async (ctx, json) => { await (await import('../roles/dredger.js')).runDredgerDryRun(ctx, { json, out: process.stdout }) },
}

/** Why this build cannot run the command's role, or undefined when it can. */
export function roleRefusal(command: Extract<Command, { kind: 'role' }>): string | undefined {
  const runnable = command.dryRun
    ? DRY_RUNS[command.role] !== undefined
    : command.oneShot ? ONE_SHOTS[command.role] !== undefined : STARTERS[command.role] !== undefined
  if (runnable) return undefined
  const what = command.oneShot ? `${command.role} compile` : command.dryRun ? `${command.role} --dry-run` : command.role
  return `service: the ${what} role is ${ROLE_UNAVAILABLE}`
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const command = parseArgs(argv)
  if (command.kind === 'help') {
    process.stdout.write(USAGE)
    return
  }
  if (command.kind === 'usage-error') {
    return bootAbort(`${command.message}\n${USAGE}`)
  }

  if (command.kind === 'policy-check') {
    const { runPolicyCheck } = await import('./policy-check.js')
    process.exitCode = await runPolicyCheck(command.file, command.json, { out: process.stdout, err: process.stderr, now: systemClock.now() })
    return
  }
  if (command.kind === 'policy-push' || command.kind === 'policy-waive' || command.kind === 'policy-freeze' || command.kind === 'policy-show') {
    const { runPolicyCommand } = await import('./policy-commands.js')
    process.exitCode = await runPolicyCommand(command, { out: process.stdout, err: process.stderr, env, now: () => systemClock.now() })
    return
  }

  const loaded = loadConfig({ configPath: command.configPath, env })
  if (command.kind === 'check-config') {
    const { runCheckConfig } = await import('../roles/check-config.js')
    process.exitCode = await runCheckConfig(loaded, { json: command.json, out: process.stdout, err: process.stderr, env })
    return
  }
  if (!loaded.ok) return bootAbort(formatProblems(loaded.problems))

  const start = command.oneShot || command.dryRun ? undefined : STARTERS[command.role]
  const dryRun = command.dryRun ? DRY_RUNS[command.role] : undefined
  const once = command.oneShot
    ? ONE_SHOTS[command.role]
    : dryRun === undefined ? undefined : (ctx: RoleContext) => dryRun(ctx, command.json === true)
  const refusal = roleRefusal(command)
  if ((start === undefined && once === undefined) || refusal !== undefined) return bootAbort(refusal ?? ROLE_UNAVAILABLE)

  const config = loaded.config
  const build = readBuildInfo()
  const identity = resolveIdentity(env, build.version)
  const trace = new TraceContext()
  const processLogger = createProcessLogger({
    identity,
    trace,
    role: command.role,
    format: config.observability.logFormat,
    level: config.observability.logLevel,
    // A dry run's stdout is its listing alone (a table or JSON lines): its log lines go to stderr.
    ...(command.dryRun ? { destination: process.stderr } : {}),
  })
  // Telemetry (SPEC.md 6.3) starts before the role so its logs and spans are exported from the first line.
  const telemetry: Telemetry = config.observability.telemetry === 'on'
    // The OpenTelemetry SDK loads only when telemetry is on.
    ? await import('../../engine/telemetry/otel-telemetry.js')
      .then(({ startTelemetry }) => startTelemetry({ identity, env, logger: processLogger, role: command.role, privateOrigins: privateOrigins(config), egressAgents: egressAgentsFor(config, env) }))
      .catch((error: unknown) => {
        // Telemetry never stops the service: without it the role still serves (SPEC.md 6.3 makes it opt-in).
        processLogger.error('telemetry: could not start', { error: String((error as Error)?.message ?? error) })
        return TELEMETRY_OFF
      })
    : TELEMETRY_OFF
  const logger = telemetry.teeLogger(processLogger)
  const exit = exitWith(logger)
  process.on('uncaughtException', (error) => exit(EXIT.ABNORMAL, `uncaught exception: ${error.stack ?? String(error)}`))
  process.on('unhandledRejection', (error) => exit(EXIT.ABNORMAL, `unhandled rejection: ${(error as Error)?.stack ?? String(error)}`))
  // The launcher holds the IPC channel; if it dies, nothing supervises us: stop (run-role.ts wired the same before the log existed).
  process.removeAllListeners('disconnect')
  process.on('disconnect', () => exit(EXIT.CANCELLED))
  if (process.send !== undefined && !process.connected) exit(EXIT.CANCELLED)

  const ctx: RoleContext = { config, logger, clock: systemClock, identity, build, trace, env }
  if (once !== undefined) {
    try {
      await once(ctx)
      await telemetry.shutdown()
    } catch (error) {
      await telemetry.shutdown()
      logger.flush()
      if (isServiceError(error, 'CONFIG_INVALID') || isServiceError(error, 'BOOT_UNBUILDABLE')) {
        bootAbort(`service: ${command.role} ${command.dryRun ? '--dry-run' : 'compile'}: ${error.message}`)
        return exit(EXIT.BOOT_ABORTED)
      }
      return exit(EXIT.ABNORMAL, error instanceof Error ? error.message : String(error))
    }
    return exit(EXIT.OK)
  }

  let running: RunningRole
  try {
    running = await (start as (ctx: RoleContext) => Promise<RunningRole>)(ctx)
  } catch (error) {
    bootAbort(`service: the ${command.role} role could not start: ${(error as Error).message}`)
    // Exit now: the launcher's IPC channel (and anything the start opened) would keep the process alive.
    return exit(EXIT.BOOT_ABORTED)
  }
  telemetry.observeRole(() => running.metrics())
  running.door.observeRequests(telemetry.serverRequests, telemetry.serverSpans)
  const shutdown = new Shutdown({
    door: running.door,
    readiness: running.readiness,
    drainTimeoutMs: config.server.shutdownDrainTimeout * 1000,
    drainDelayMs: SERVES_TRAFFIC.has(command.role) ? config.server.drainDelaySeconds * 1000 : 0,
    logger,
    quiesce: () => running.quiesce?.(),
    release: async () => {
      await running.release()
      await telemetry.shutdown()
    },
    exit,
  })
  shutdown.install()
  // SIGHUP, passed on by the launcher: the role re-reads its policy source; a role without one says so and carries on.
  process.on('SIGHUP', () => {
    if (running.reloadPolicy === undefined) logger.info(POLICY_RELOAD_NOTHING, { signal: 'SIGHUP' })
    else void running.reloadPolicy('sighup')
  })
  armLocalHalt(exit)
}

function bootAbort(report: string): void {
  process.stderr.write(`${report}\n`)
  process.exitCode = EXIT.BOOT_ABORTED
}

function exitWith(logger: ProcessLogger): (code: number, detail?: string) => void {
  let exiting = false
  return (code, detail) => {
    if (exiting) return
    exiting = true
    logger.flush()
    if (detail !== undefined) process.stderr.write(`${SERVICE_EXITED} ${detail}\n`)
    process.exit(code)
  }
}

/** Ctrl-D on an interactive terminal halts a local run (exit 130); armed only on a TTY. */
function armLocalHalt(exit: (code: number) => void): void {
  if (process.stdin.isTTY !== true) return
  process.stdin.on('end', () => exit(EXIT.LOCAL_HALT))
  process.stdin.resume()
}

/** The Agents of the OTLP exports when `egress.proxy` (or the environment) names a forward proxy; undefined: direct. */
function egressAgentsFor(config: Config, env: NodeJS.ProcessEnv): ReturnType<typeof proxiedAgents> | undefined {
  const forwardProxy = forwardProxyOf(config.egress.proxy, env)
  return forwardProxy === undefined ? undefined : proxiedAgents(forwardProxy)
}
