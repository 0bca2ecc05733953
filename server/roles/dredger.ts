/**
 * The Dredger's composition roots (SPEC.md 1.6, 3.1, 9):
 *
 * - `startDredger`: `service dredger`, a long-running role with the probes on
 *   `SERVICE_SERVER__PORT`. At boot it runs one cycle (a full walk when
 *   `dredger.fullWalk` is true, else a candidate cycle), then a candidate
 *   cycle every `dredger.cycleSeconds`. A latched cap halt reports every
 *   dredged mount `halted` on `/readyz` (503) until a restart.
 * - `runDredgerDryRun`: `service dredger --dry-run [--json]`, one plan of the
 *   same cycle with nothing deleted: a table on stdout, or JSON lines with
 *   `--json`; log lines go to stderr so stdout is only the listing.
 *
 * Only the `js` mount has inventories in this build (npm registry protocol,
 * engine/dredger/npm-inventory.ts). When the private upstream and the mirror
 * target are one registry (the same base URL), it is one inventory, named
 * `mirror_target`, so a version is not planned twice.
 *
 * The rules and waivers are the policy document's where the role reads one
 * (`policy.file` or `policy.store`, ./dredger-policy.ts), as on the proxy.
 */
import type { Writable } from 'node:stream'
import type { Config, MountConfig } from '../../engine/config/config.js'
import type { MountKey } from '../../engine/config/schema.js'
import { ServiceError } from '../../engine/errors.js'
import { DredgerCounters } from '../../engine/dredger/dredger-counters.js'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'
import { Dredger, DREDGER_INVENTORY_FAILED, planRemovals, type CycleKind, type DredgedMount, type PlannedRemoval } from '../../engine/dredger/dredger.js'
import { NpmInventory } from '../../engine/dredger/npm-inventory.js'
import type { WaiverConfig } from '../../engine/policy/waivers.js'
import type { Logger } from '../../engine/log/logger.js'
import { ownsName } from '../../engine/publish/publish-scope.js'
import { CredentialRegistry } from '../../engine/upstream/credentials/credential-registry.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import { Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { FrontDoor } from '../http/front-door.js'
import { mountFallback } from '../routes/js-mount.js'
import { mountProbes } from '../routes/probes.js'
import type { RoleContext, RunningRole } from './role-context.js'
import { planFor } from './runtime-plan.js'
import { forwardProxyFor } from './mount-clients.js'
import { openSharedCache, reportedInvalidation } from './shared-cache.js'
import { dredgerAdvisories, type DredgerAdvisories } from './dredger-advisories.js'
import { JudgeSlot, judgedMount } from './dredger-policy.js'
import { bootPolicy, PolicyReloader, withPolicyRules, type BootPolicy } from './policy-reloader.js'

/** info: the role is up; names the mounts, inventories, cycle, cap and whether a full walk comes first. */
export const DREDGER_STARTED = 'dredger started'
/** warn: a mount with revocation rules that this build cannot clean (no npm inventory). */
export const DREDGER_MOUNT_UNSUPPORTED = 'dredger: mount has no inventory this build can clean'
/** warn (dry run): the plan is larger than the cap, so a real cycle would halt. */
export const DREDGER_DRY_RUN_OVER_CAP = 'dredger dry run: a cycle would halt at the removal cap'
/** error: a cycle failed as a whole (not one removal); the next cycle tries again. */
export const DREDGER_CYCLE_FAILED = 'dredger cycle failed'

/** The credential names the Dredger's inventories use (`mirror.credential`, `upstreams.private.credential`). */
function inventoryCredentialNames(config: Config): string[] {
  const js = config.mounts.js
  return [...new Set([js?.mirror?.credential, js?.upstreams.private?.credential].filter((n): n is string => n !== undefined))]
}

/** The process's credential sources for the inventories, minted once at boot like every role's (SPEC.md 5.5). */
async function inventoryCredentials(ctx: RoleContext, forwardProxy: ForwardProxy | undefined): Promise<CredentialRegistry> {
  const credentials = new CredentialRegistry(ctx.config.credentials, ctx.clock, forwardProxy)
  const names = inventoryCredentialNames(ctx.config)
  if (names.length > 0) await credentials.prime(names)
  return credentials
}

/** The inventories of one mount, or undefined when it has none this build can clean. */
function inventoriesOf(mount: MountConfig, maxDocumentBytes: number, credentials: CredentialRegistry | undefined, forwardProxy: ForwardProxy | undefined): NpmInventory[] | undefined {
  if (mount.key !== 'js') return undefined
  const credential = (name: string | undefined): { credential?: ReturnType<CredentialRegistry['source']> } => {
    if (name === undefined) return {}
    const source = credentials?.source(name)
    if (source === undefined) throw new ServiceError('CONFIG_INVALID', { message: `credential ${name} is named by an inventory but was not built` })
    return { credential: source }
  }
  const inventories: NpmInventory[] = []
  if (mount.mirror !== undefined) {
    inventories.push(new NpmInventory({ name: 'mirror_target', url: mount.mirror.target, token: mount.mirror.token, ...credential(mount.mirror.credential), maxDocumentBytes, forwardProxy }))
  }
  const priv = mount.upstreams.private
  if (priv !== undefined) {
    const cache = new NpmInventory({ name: 'private_cache', url: priv.url, token: priv.token, ...credential(priv.credential), maxDocumentBytes, forwardProxy })
    if (inventories.some((inventory) => inventory.baseUrl === cache.baseUrl)) void cache.close()
    else inventories.push(cache)
  }
  return inventories.length === 0 ? undefined : inventories
}

/**
 * The mounts the Dredger cleans; throws when there is none (boot abort, exit 2).
 * `policy`: the document's waivers, and the map that receives each mount's
 * judge slot for the reloader (the rules are `config`'s, the document's already in).
 * `forwardProxy`: what the inventories are reached through (docs/security.md#forward-proxy).
 */
export function dredgedMounts(config: Config, logger: Logger, maxDocumentBytes: number, credentials?: CredentialRegistry, policy?: { readonly waivers: readonly WaiverConfig[]; readonly slots: Map<MountKey, JudgeSlot> }, advisories?: DredgerAdvisories, forwardProxy?: ForwardProxy): DredgedMount[] {
  const mounts: DredgedMount[] = []
  for (const [key, mount] of Object.entries(config.mounts) as [MountKey, MountConfig | undefined][]) {
    if (mount === undefined) continue
    const database = advisories?.slots.get(key)
    const slot = new JudgeSlot(key, mount.rules, policy?.waivers ?? [], database === undefined ? undefined : { database: () => database.database(), configuredMaxAgeSeconds: config.advisories.maxAgeSeconds })
    const inventories = inventoriesOf(mount, maxDocumentBytes, credentials, forwardProxy)
    if (inventories === undefined) {
      if (slot.judge.candidates.length > 0) logger.warn(DREDGER_MOUNT_UNSUPPORTED, { mount: key })
      continue
    }
    policy?.slots.set(key, slot)
    const scopes = mount.publish?.scopes
    mounts.push(judgedMount(slot, scopes === undefined || scopes.length === 0 ? { key, inventories } : { key, inventories, firstParty: ownsName(scopes) }))
  }
  if (mounts.length === 0) throw new ServiceError('CONFIG_INVALID', { message: 'service dredger needs mounts.js.mirror (the mirror target) or mounts.js.upstreams.private (the private cache)' })
  return mounts
}

/** The policy document's rules and waivers for the Dredger's mounts, and the reloader that keeps them current. */
async function dredgerPolicy(ctx: RoleContext, forwardProxy: ForwardProxy | undefined): Promise<{ config: Config; boot: BootPolicy | undefined; slots: Map<MountKey, JudgeSlot>; waivers: readonly WaiverConfig[] }> {
  const boot = await bootPolicy(ctx.config, ctx.clock, ctx.logger, forwardProxy)
  return { config: withPolicyRules(ctx.config, boot), boot, slots: new Map(), waivers: boot?.document.waivers ?? [] }
}

function dredgerReloader(ctx: RoleContext, boot: BootPolicy | undefined, slots: ReadonlyMap<MountKey, JudgeSlot>): PolicyReloader | undefined {
  if (boot === undefined) return undefined
  const mounts = new Map([...slots].map(([key, slot]) => [key, { policy: slot, configured: ctx.config.mounts[key]?.rules ?? [] }] as const))
  // An advisory rule is no reason to refuse a document the proxies take: the Dredger judges only DenyIdentity and, where it
  // booted with a database for it, DenyIfMalicious (a DenyIfMalicious a later document adds to a mount without one removes nothing here).
  return new PolicyReloader({ boot, mounts, pollSeconds: ctx.config.policy.pollSeconds, logger: ctx.logger, clock: ctx.clock, checkAdvisories: false })
}

async function closeAll(mounts: readonly DredgedMount[]): Promise<void> {
  await Promise.all(mounts.flatMap((mount) => mount.inventories.map((inventory) => inventory.close())))
}

function firstKind(config: Config): CycleKind {
  return config.dredger.fullWalk ? 'full_walk' : 'candidate'
}

/** `service dredger`: the cycles, with the probes. */
export async function startDredger(ctx: RoleContext): Promise<RunningRole> {
  const { logger } = ctx
  const forwardProxy = forwardProxyFor(ctx.config, logger, ctx.env)
  const policy = await dredgerPolicy(ctx, forwardProxy)
  const { config } = policy
  const plan = await planFor(config)
  const credentials = await inventoryCredentials(ctx, forwardProxy)
  const advisories = await dredgerAdvisories({ ...ctx, config }, true, forwardProxy)
  const mounts = dredgedMounts(config, logger, plan.maxResponseBytes.value, credentials, policy, advisories, forwardProxy)
  const reloader = dredgerReloader(ctx, policy.boot, policy.slots)
  const counters = new DredgerCounters()
  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger, ...(config.server.compatPort === undefined ? {} : { compatPort: config.server.compatPort }) })
  const readiness = new Readiness()
  const liveness = new Liveness()
  for (const mount of mounts) readiness.addMount(mount.key, false)
  mountProbes(door, liveness, readiness)
  mountFallback(door)
  // With a shared metadata cache, a removal invalidates the package there: every proxy's next request reads it again (docs/cache.md "Invalidation").
  const sharedCache = await openSharedCache(config, logger)
  const dredger = new Dredger({
    mounts, counters, logger,
    maxRemovalsPerCycle: config.dredger.maxRemovalsPerCycle,
    onHalt: (keys) => { for (const key of keys) readiness.markHalted(key) },
    ...(sharedCache === undefined ? {} : {
      onRemoved: (mount: MountKey, packageName: string) => reportedInvalidation(sharedCache.invalidation.invalidate, mount, logger)(packageName),
    }),
  })

  const stop = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  const cycle = (kind: CycleKind): void => {
    timer = undefined
    running = (async () => {
      try {
        // The rules in force at the cycle's start: a document changed since the last poll is read now.
        await reloader?.reload('cycle')
        await dredger.runCycle(kind, stop.signal)
      } catch (error) {
        if (!stop.signal.aborted) logger.error(DREDGER_CYCLE_FAILED, { kind, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) })
      }
      running = undefined
      if (!stop.signal.aborted) timer = setTimeout(() => cycle('candidate'), config.dredger.cycleSeconds * 1000)
    })()
  }

  let port: number
  try {
    port = await door.listen()
  } catch (error) {
    await closeAll(mounts)
    await advisories?.stop()
    throw error
  }
  readiness.markStarted()
  reloader?.start()
  logger.info(DREDGER_STARTED, {
    port,
    mounts: Object.fromEntries(mounts.map((mount) => [mount.key, mount.inventories.map((inventory) => `${inventory.name} ${inventory.authority}`)])),
    cycleSeconds: config.dredger.cycleSeconds,
    maxRemovalsPerCycle: config.dredger.maxRemovalsPerCycle,
    fullWalk: config.dredger.fullWalk,
  })
  cycle(firstKind(config))

  const quiesce = (): void => {
    stop.abort()
    reloader?.stop()
    if (timer !== undefined) clearTimeout(timer)
  }
  return {
    door,
    readiness,
    liveness,
    quiesce,
    ...(reloader === undefined ? {} : { reloadPolicy: (trigger: 'sighup' | 'poll') => reloader.reload(trigger) }),
    release: async () => {
      quiesce()
      // A removal that started finishes (it takes no signal); the cycle stops before the next one.
      await running
      await closeAll(mounts)
      await advisories?.stop()
      await sharedCache?.close()
    },
    metrics: () => ({
      [SNAPSHOT_KEYS.dredgerRemovals]: counters.snapshot(),
      ...(reloader === undefined ? {} : { [SNAPSHOT_KEYS.policy]: { reloads: reloader.counts } }),
      ...(inventoryCredentialNames(config).length > 0 ? { [SNAPSHOT_KEYS.credential]: credentials.counters.snapshot() } : {}),
    }),
  }
}

export interface DryRunOutput {
  readonly json: boolean
  readonly out: Writable
}

/** The plan as stdout shows it: a table, or one JSON object per line. */
export function formatPlan(removals: readonly PlannedRemoval[], json: boolean): string {
  if (json) return removals.map((r) => `${JSON.stringify({ mount: r.mount, package: r.package, version: r.version, inventory: r.inventory, rule: r.rule })}\n`).join('')
  const header = ['PACKAGE', 'VERSION', 'INVENTORY', 'RULE']
  const rows = removals.map((r) => [r.package, r.version, r.inventory, r.rule])
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] as string).length)))
  const line = (cells: readonly string[]): string => `${cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] as number))).join('  ')}\n`
  return `${line(header)}${rows.map(line).join('')}`
}

/**
 * `service dredger --dry-run`: plan the first cycle, print it, delete
 * nothing. A plan missing a read (an inventory that did not answer) is
 * printed and then fails the run (exit 1): an operator must not take a
 * partial listing for the whole one.
 */
export async function runDredgerDryRun(ctx: RoleContext, output: DryRunOutput): Promise<PlannedRemoval[]> {
  const { logger } = ctx
  const forwardProxy = forwardProxyFor(ctx.config, logger, ctx.env)
  const policy = await dredgerPolicy(ctx, forwardProxy)
  const { config } = policy
  const plan = await planFor(config)
  const credentials = await inventoryCredentials(ctx, forwardProxy)
  const advisories = await dredgerAdvisories({ ...ctx, config }, false, forwardProxy)
  await advisories?.poll()
  const mounts = dredgedMounts(config, logger, plan.maxResponseBytes.value, credentials, policy, advisories, forwardProxy)
  try {
    const { removals, unreadable } = await planRemovals(mounts, firstKind(config), logger)
    output.out.write(formatPlan(removals, output.json))
    if (removals.length > config.dredger.maxRemovalsPerCycle) {
      logger.warn(DREDGER_DRY_RUN_OVER_CAP, { cap: config.dredger.maxRemovalsPerCycle, count: removals.length })
    }
    if (unreadable > 0) {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { message: `the dry run is incomplete: ${unreadable} inventory read(s) failed (logged as '${DREDGER_INVENTORY_FAILED}'); the listing above is partial` })
    }
    return removals
  } finally {
    await closeAll(mounts)
    await advisories?.stop()
  }
}
