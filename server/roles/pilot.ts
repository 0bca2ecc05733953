/**
 * The Pilot role's composition root (SPEC.md 1.6, 2.9, 6.2): for each
 * mounted ecosystem it compiles the OSV export and the EPSS feed into one
 * artifact and publishes it to the object store (engine/advisory/
 * pilot-publish.ts), at start and then on the schedule of
 * engine/advisory/pilot/pilot-schedule.ts, and serves `/livez` and `/readyz` on
 * `SERVICE_SERVER__PORT` (SPEC.md 4.5). `service pilot compile` is the same
 * run, once (runPilotCompile).
 *
 * Without `advisories.osvExportBaseUrl` there is nothing to compile: the
 * role refuses at boot with CONFIG_INVALID (exit 2) naming the setting.
 *
 * Readiness: Pilot has no mount to serve, so `/readyz` answers 200 once the
 * listener is up; whether an artifact exists is the alarm's business
 * (SPEC.md 6.2), not rotation's.
 */
import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import { compileAndPublish, type PublishedArtifact } from '../../engine/advisory/pilot/pilot-publish.js'
import { PilotSchedule } from '../../engine/advisory/pilot/pilot-schedule.js'
import { RefreshAges } from '../../engine/advisory/pilot/refresh-ages.js'
import type { Config } from '../../engine/config/config.js'
import { MOUNT_KEYS } from '../../engine/config/schema.js'
import { ServiceError, toServiceError } from '../../engine/errors.js'
import type { ObjectStore } from '../../engine/store/object-store.js'
import { FrontDoor } from '../http/front-door.js'
import { Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { mountFallback } from '../routes/js-mount.js'
import { mountProbes } from '../routes/probes.js'
import { describeObjectStore, openObjectStore } from './object-store.js'
import type { RoleContext, RunningRole } from './role-context.js'
import { inRootSpan } from '../../engine/telemetry/work-span.js'
import { Agent } from 'undici'
import { forwardProxyOf } from '../../engine/upstream/forward-proxy.js'
import { trustedTargetConnector } from '../../engine/upstream/proxied-connector.js'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'

export const PILOT_LISTENING = 'pilot listening'
/** error: one ecosystem's compile or publish failed; the next run retries it. */
export const PILOT_RUN_FAILED = 'advisory compile failed'

export interface PilotRunReport {
  readonly published: readonly PublishedArtifact[]
  readonly failed: readonly { readonly ecosystem: Ecosystem; readonly error: ServiceError }[]
}

/** The ecosystems Pilot compiles: every mounted one. */
export function pilotEcosystems(config: Pick<Config, 'mounts'>): Ecosystem[] {
  return MOUNT_KEYS.filter((key) => config.mounts[key] !== undefined)
}

/** Throws CONFIG_INVALID (exit 2) when the configuration gives Pilot nothing to compile. */
export function checkPilotConfig(config: Pick<Config, 'advisories' | 'mounts'>): string {
  const base = config.advisories.osvExportBaseUrl
  if (base === undefined) {
    throw new ServiceError('CONFIG_INVALID', {
      message: 'advisories.osvExportBaseUrl is not set (SERVICE_ADVISORIES__OSV_EXPORT_BASE_URL): Pilot has no OSV export to compile',
    })
  }
  if (pilotEcosystems(config).length === 0) {
    throw new ServiceError('CONFIG_INVALID', { message: 'no mount is configured (mounts.js, mounts.py): Pilot has no ecosystem to compile' })
  }
  return base
}

export interface PilotRunOptions {
  readonly ctx: Pick<RoleContext, 'config' | 'logger' | 'clock'> & { readonly env?: NodeJS.ProcessEnv | undefined }
  readonly store: ObjectStore
  /** Folder for downloaded archives; default the system temp folder. */
  readonly tmpDir?: string
}

/** One run: compile and publish every mounted ecosystem, one after another (one archive in memory at a time). */
export async function runPilot(options: PilotRunOptions): Promise<PilotRunReport> {
  const { config } = options.ctx
  const osvExportBaseUrl = checkPilotConfig(config)
  const tmpDir = options.tmpDir ?? join(tmpdir(), 'service-pilot')
  await mkdir(tmpDir, { recursive: true })
  // The feeds are read through the forward proxy when one routes them (docs/security.md#forward-proxy); one agent per run.
  const forwardProxy = forwardProxyOf(config.egress.proxy, options.ctx.env ?? process.env)
  const dispatcher = forwardProxy === undefined ? undefined : new Agent({ ...trustedTargetConnector(forwardProxy) })
  try {
    return await compileEach(options, osvExportBaseUrl, tmpDir, dispatcher)
  } finally {
    await dispatcher?.close()
  }
}

async function compileEach(options: PilotRunOptions, osvExportBaseUrl: string, tmpDir: string, dispatcher: Agent | undefined): Promise<PilotRunReport> {
  const { config, logger, clock } = options.ctx
  const published: PublishedArtifact[] = []
  const failed: { ecosystem: Ecosystem; error: ServiceError }[] = []
  for (const ecosystem of pilotEcosystems(config)) {
    try {
      published.push(await inRootSpan('pilot compile', { ecosystem }, () => compileAndPublish({
        ecosystem,
        osvExportBaseUrl,
        epssFeedUrl: config.advisories.epssFeedUrl,
        store: options.store,
        quietTime: config.advisories.quietTime[ecosystem],
        epssQuietTime: config.advisories.epssQuietTime,
        tmpDir,
        clock,
        logger,
        ...(dispatcher === undefined ? {} : { dispatcher }),
      })))
    } catch (err) {
      const error = toServiceError(err)
      const cause = error.cause instanceof Error ? error.cause.message : undefined
      logger.error(PILOT_RUN_FAILED, { ecosystem, code: error.code, reason: error.message, ...(cause === undefined ? {} : { cause }) })
      failed.push({ ecosystem, error })
    }
  }
  return { published, failed }
}

/**
 * `service pilot compile`: one run. Resolves when every mounted ecosystem was
 * published; otherwise throws: CONFIG_INVALID when the configuration gives
 * nothing to compile (exit 2), else a ServiceError naming each failed
 * ecosystem (exit 1 with the `service: service exited:` line).
 */
export async function runPilotCompile(ctx: RoleContext): Promise<void> {
  checkPilotConfig(ctx.config)
  const store = await openObjectStore(ctx.config.store, ctx.clock, ctx.env, forwardProxyOf(ctx.config.egress.proxy, ctx.env ?? process.env))
  const report = await runPilot({ ctx, store })
  if (report.failed.length > 0) {
    const detail = report.failed.map((f) => `${f.ecosystem}: ${f.error.code} ${f.error.message}`).join('; ')
    throw new ServiceError(report.failed[0]!.error.code, { message: `pilot compile failed: ${detail}`, cause: report.failed[0]!.error })
  }
}

export async function startPilot(ctx: RoleContext): Promise<RunningRole> {
  const { config, logger, clock } = ctx
  checkPilotConfig(config)
  const store = await openObjectStore(config.store, clock, ctx.env, forwardProxyOf(config.egress.proxy, ctx.env ?? process.env))
  const ecosystems = pilotEcosystems(config)
  const schedule = new PilotSchedule({ ecosystems, store: describeObjectStore(config.store), clock, logger, intervalMs: config.advisories.pilotIntervalSeconds * 1000 })

  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger, ...(config.server.compatPort === undefined ? {} : { compatPort: config.server.compatPort }) })
  const readiness = new Readiness()
  const liveness = new Liveness()
  mountProbes(door, liveness, readiness)
  mountFallback(door)
  const port = await door.listen()
  readiness.markStarted()
  logger.info(PILOT_LISTENING, { port, ecosystems, store: describeObjectStore(config.store) })

  const refreshes = new RefreshAges(clock)
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let lastRunAt: string | undefined
  let running = true
  const cycle = async (): Promise<void> => {
    running = true
    let report: PilotRunReport | undefined
    try {
      report = await runPilot({ ctx, store })
    } catch (err) {
      // runPilot logs each ecosystem's failure itself; this is a failure around them (the temp folder).
      logger.error(PILOT_RUN_FAILED, { code: toServiceError(err).code, reason: (err as Error).message })
    }
    running = false
    for (const published of report?.published ?? []) refreshes.published(published.summary)
    lastRunAt = new Date(clock.now()).toISOString()
    if (stopped) return
    const delay = schedule.afterRun(report?.published.map((p) => p.ecosystem) ?? [])
    timer = setTimeout(() => { void cycle() }, delay)
  }
  void cycle()

  return {
    door,
    readiness,
    liveness,
    // A compile in flight is not awaited: it can outlast the drain bound, and its put is atomic (engine/store).
    release: async () => {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
    },
    metrics: () => ({
      [SNAPSHOT_KEYS.pilot]: { runs: schedule.runs, running, lastRunAt: lastRunAt ?? null, unpublished: schedule.missing() },
      [SNAPSHOT_KEYS.pilotRefreshAge]: refreshes.ages(),
    }),
  }
}
