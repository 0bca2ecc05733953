/**
 * The proxy role's composition root: the one place its objects are made and
 * wired (DESIGN.md). It computes the memory plan from the cgroup, starts the
 * admission gate and its sampler and the Piscina pool sized by the plan,
 * attaches each configured mount (./js-wiring.ts, ./py-wiring.ts) with its
 * policy (engine/policy/mount-policy.ts), the mirror queue and, on the
 * embedded queue, the mirror worker, the advisory consumers, and serves the
 * mounts' routes and the probes on `SERVICE_SERVER__PORT`.
 */
import { hostname, networkInterfaces } from 'node:os'
import { Piscina } from 'piscina'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { CacheBudget } from '../../engine/cache/cache-budget.js'
import { combinedSnapshot, type MetadataCacheSnapshot } from '../../engine/cache/metadata-cache.js'
import type { Config, MountConfig } from '../../engine/config/config.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import type { Logger } from '../../engine/log/logger.js'
import { memoryInUseReader } from '../../engine/memory/cgroup.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { logPlan } from '../../engine/memory/plan-report.js'
import { BudgetSampler } from '../../engine/memory/sampler.js'
import { ThreadHeapBoard } from '../../engine/memory/thread-heaps.js'
import { v8Limits, type V8Limits } from '../../engine/memory/v8-limits.js'
import { sharedEnqueueMemory } from '../../engine/mirror/enqueue-memory.js'
import { needsAdvisoryDatabase } from '../../engine/policy/advisory-max-age.js'
import { mountPolicy, type MountPolicy } from '../../engine/policy/mount-policy.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { readSnapshot, SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import { CredentialRegistry } from '../../engine/upstream/credentials/credential-registry.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { LargeReadBuffers } from '../../engine/upstream/http1/artifact-connection.js'
import { heapReportWorkerData } from '../../workers/heap-report.js'
import { Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { edgeAuthFor } from '../http/edge-auth.js'
import { FrontDoor } from '../http/front-door.js'
import { listenerNames, RequestOrigin } from '../http/request-origin.js'
import { hopMarker } from '../routes/hop-marker.js'
import { mountFallback } from '../routes/js-mount.js'
import { mountProbes } from '../routes/probes.js'
import { attachAdvisoryConsumers, readsAdvisories } from './advisory-wiring.js'
import { attachEnqueueBuffer } from './enqueue-wiring.js'
import { attachJsMount } from './js-wiring.js'
import { openDocumentKeep } from './kept-documents.js'
import { bootPolicy, PolicyReloader, withPolicyRules } from './policy-reloader.js'
import { attachMirrorWorker, type MirrorMountSource } from './mirror.js'
import { openMirrorQueue } from './mirror-queue.js'
import { packageInvalidation, type ProcessParts } from './mount-wiring.js'
import { openObjectStore } from './object-store.js'
import { ownsName } from '../../engine/publish/publish-scope.js'
import { attachPyMount } from './py-wiring.js'
import type { RoleContext, RunningRole } from './role-context.js'
import { planFor } from './runtime-plan.js'
import { openSharedCache } from './shared-cache.js'
import { forwardProxyFor } from './mount-clients.js'

export const PROXY_LISTENING = 'proxy listening'

/** Entries bound of the shared metadata cache; the byte bound comes from the plan. */
const CACHE_MAX_ENTRIES = 50_000

/** Each ecosystem's wiring, attached in MOUNT_KEYS order. */
const ATTACH = { js: attachJsMount, py: attachPyMount } as const

export async function startProxy(ctx: RoleContext): Promise<RunningRole> {
  const { logger, clock } = ctx
  // The policy document's rules stand in for the configured ones from the first line (issue 31); unreadable or invalid: exit 2.
  const forwardProxy = forwardProxyFor(ctx.config, logger, ctx.env)
  const boot = await bootPolicy(ctx.config, clock, logger, forwardProxy)
  const config = withPolicyRules(ctx.config, boot)
  const drainMs = config.server.shutdownDrainTimeout * 1000
  const plan = await planFor(config)
  logPlan(plan, logger)
  const limits = v8Limits(plan)
  const gate = AdmissionGate.fromPlan(plan)
  // Every pool thread publishes its heap here (workers/heap-report.ts); spare slots cover a thread replaced after a crash.
  const threadHeaps = new ThreadHeapBoard(limits.poolThreads * 2)
  const sampler = new BudgetSampler({ gate, plan, readMemoryInUse: memoryInUseReader(config.runtime.cgroupPath), readThreadHeaps: () => threadHeaps.readings() })
  sampler.start()
  const pool = packumentPool(limits, threadHeaps, logger)

  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger, ...(config.server.compatPort === undefined ? {} : { compatPort: config.server.compatPort }) })
  const readiness = new Readiness()
  const liveness = new Liveness()
  const counters = new UpstreamFetchCounters()
  const snapshots: SnapshotReaders = {
    [SNAPSHOT_KEYS.admissionMemory]: () => gate.snapshot(),
    [SNAPSHOT_KEYS.runtimeHeaps]: () => sampler.heaps,
    [SNAPSHOT_KEYS.upstreamFetchErrors]: () => counters.snapshot(),
  }
  // Upstream credential providers (SPEC.md 5.5): one source per name, shared, primed once at boot.
  const credentials = new CredentialRegistry(config.credentials, clock, forwardProxy)
  const credentialNames = proxyCredentialNames(config)
  if (credentialNames.length > 0) {
    await credentials.prime(credentialNames)
    snapshots[SNAPSHOT_KEYS.credential] = () => credentials.counters.snapshot()
  }
  const opened = await openMirrorQueue(ctx, forwardProxy)
  const embedded = opened?.queue instanceof EmbeddedQueue ? opened.queue : undefined
  if (embedded !== undefined) snapshots[SNAPSHOT_KEYS.mirrorQueue] = () => embedded.stats()
  const sharedCache = await openSharedCache(config, logger)
  // With a shared backend, one recent-enqueue memory for the tier: one job per artifact across every proxy.
  const enqueueMemory = sharedCache === undefined ? undefined : sharedEnqueueMemory(sharedCache.claims)
  // Serve-then-enqueue through a bounded, charged buffer: a slow or refusing queue never holds a response or the heap (issue 30).
  const enqueueBuffer = opened === undefined ? undefined : attachEnqueueBuffer({ config, logger, clock, plan, queue: opened.queue, embedded, readiness, snapshots, memory: enqueueMemory })
  mountProbes(door, liveness, readiness)
  const documentKeep = await openDocumentKeep(config, logger, sharedCache)

  const parts: ProcessParts = {
    door, config, pool, gate, logger, clock,
    gateModule: siblingModule('../../workers/policy-gate'),
    // One set of large artifact read buffers for every upstream of every mount, bounded by the plan.
    upstreams: { config, credentials, counters, maxResponseBytes: plan.maxResponseBytes.value, marker: hopMarker(config.server.baseUrl), logger, largeReadBuffers: new LargeReadBuffers(plan.artifactReadBuffers.value), forwardProxy },
    edge: edgeAuthFor(config.server.edgeTokens),
    cacheBudget: new CacheBudget(plan.cacheBudgetBytes.value, CACHE_MAX_ENTRIES),
    origin: requestOrigin(config),
    sharedCache,
    documentKeep,
  }
  const caches: { snapshot(): MetadataCacheSnapshot }[] = []
  snapshots[SNAPSHOT_KEYS.metadataCache] = () => combinedSnapshot(caches)
  snapshots[SNAPSHOT_KEYS.artifactReadBuffers] = () => parts.upstreams.largeReadBuffers.snapshot()
  const clients: { close(): Promise<void> }[] = []
  const slots = new Map<MountKey, AdvisorySlot>()
  const policies = new Map<MountKey, { policy: MountPolicy; configured: MountConfig['rules'] }>()
  const mirrorSources: MirrorMountSource[] = []
  const invalidations: Partial<Record<MountKey, (packageName: string) => Promise<void>>> = {}
  for (const key of MOUNT_KEYS) {
    const mount = config.mounts[key]
    if (mount === undefined) continue
    readiness.addMount(key, needsAdvisoryDatabase(mount.rules))
    const policy = mountPolicy({ ecosystem: key, rules: mount.rules, waivers: boot?.document.waivers ?? [], configuredMaxAgeSeconds: config.advisories.maxAgeSeconds, slot: new AdvisorySlot(), logger, clock, firstParty: { scopes: mount.publish?.scopes ?? [], owns: ownsName(mount.publish?.scopes ?? []) } })
    slots.set(key, policy.slot)
    policies.set(key, { policy, configured: ctx.config.mounts[key]?.rules ?? mount.rules })
    const attached = ATTACH[key]({ ...parts, mount, policy, enqueue: mount.mirror === undefined ? undefined : enqueueBuffer?.enqueue })
    caches.push(attached.cache)
    invalidations[key] = packageInvalidation(attached.cache, key, logger)
    clients.push(...attached.clients)
    Object.assign(snapshots, attached.snapshots)
    if (mount.mirror !== undefined && attached.publicClient !== undefined) mirrorSources.push({ mount, source: attached.publicClient, retained: attached.retained })
  }
  mountFallback(door)
  const reloader = boot === undefined ? undefined : new PolicyReloader({ boot, mounts: policies, pollSeconds: config.policy.pollSeconds, logger, clock })
  reloader?.start()
  snapshots[SNAPSHOT_KEYS.policy] = () => ({
    waiverAdmissions: Object.fromEntries([...policies].map(([key, { policy }]) => [key, policy.waiverAdmissions()])),
    malwareRefusals: Object.fromEntries([...policies].map(([key, { policy }]) => [key, policy.malwareRefusals()])),
    signalWithholdings: Object.fromEntries([...policies].map(([key, { policy }]) => [key, policy.signalWithholdings()])),
    ...(reloader === undefined ? {} : { reloads: reloader.counts }),
  })
  // Embedded queue: this process owns its folder, so it runs the worker too, for every mount with a mirror target (SQS: `service mirror` does).
  const mirrorWorker = embedded === undefined || mirrorSources.length === 0 ? undefined
    : await attachMirrorWorker({ config, logger, clock, queue: embedded, forwardProxy: parts.upstreams.forwardProxy, mounts: mirrorSources, liveness, maxDocumentBytes: plan.maxResponseBytes.value, concurrency: plan.mirror.concurrency.value, credentials, memory: gate, invalidations })
  if (mirrorWorker !== undefined) Object.assign(snapshots, mirrorWorker.snapshots)

  // Each mount whose rules read the advisory database polls the store for Pilot's artifact (SPEC.md 3.1, 3.4).
  const advisories = MOUNT_KEYS.some((k) => readsAdvisories(config.mounts[k]?.rules ?? []))
    ? attachAdvisoryConsumers({ config, logger, clock, readiness, slots, store: await openObjectStore(config.store, clock, ctx.env, forwardProxy) })
    : undefined
  if (advisories !== undefined) {
    snapshots[SNAPSHOT_KEYS.advisorySourceAge] = () => advisories.ages()
    snapshots[SNAPSHOT_KEYS.advisoryDatabaseAge] = () => advisories.databaseAges()
  }

  const port = await door.listen()
  readiness.markStarted()
  logger.info(PROXY_LISTENING, { port, baseUrl: config.server.baseUrl, mounts: Object.keys(config.mounts) })
  return {
    door,
    readiness,
    liveness,
    quiesce: () => { void mirrorWorker?.stop(drainMs) },
    ...(reloader === undefined ? {} : { reloadPolicy: (trigger: 'sighup' | 'poll') => reloader.reload(trigger) }),
    release: async () => {
      reloader?.stop()
      sampler.stop()
      await advisories?.stop()
      // One drain bound for both, not one after the other (the worker has been stopping since the drain began).
      await Promise.all([mirrorWorker?.stop(drainMs), enqueueBuffer?.close(drainMs)])
      await Promise.allSettled(clients.map((c) => c.close()))
      await pool.destroy()
      await opened?.close()
      await sharedCache?.close()
      await documentKeep?.close()
    },
    metrics: () => readSnapshot(snapshots),
  }
}

/** Artifact URLs from `server.baseUrl`, or from each request's origin when it is unset (issue 32 item 5). */
function requestOrigin(config: Config): RequestOrigin {
  const { server } = config
  return new RequestOrigin({
    configured: server.baseUrlConfigured ? server.baseUrl : undefined,
    fallback: server.baseUrl,
    ownNames: listenerNames(server.host, hostname(), networkInterfaces()),
    ownPorts: server.compatPort === undefined ? [server.port] : [server.port, server.compatPort],
    allowedHosts: server.allowedHosts,
    trustedProxies: server.trustedProxies,
  })
}

/** Every credential name the proxy's mounts use: their private upstreams', the publish target's and the mirror targets' (SPEC.md 5.5). */
function proxyCredentialNames(config: Config): string[] {
  const { js, py } = config.mounts
  const names = [js?.upstreams.private?.credential, js?.publish?.credential, js?.mirror?.credential, py?.upstreams.private?.credential, py?.mirror?.credential]
  return [...new Set(names.filter((n): n is string => n !== undefined))]
}

/** The packument pool: threads past the first retire when idle and return their heaps; a task paused on its response charge holds no thread (engine/memory/v8-limits.ts says why). */
function packumentPool(limits: V8Limits, threadHeaps: ThreadHeapBoard, logger: Logger): Piscina {
  const pool = new Piscina({
    filename: siblingModule('../../workers/packument-task'),
    minThreads: limits.poolMinThreads,
    maxThreads: limits.poolThreads,
    idleTimeout: limits.poolIdleTimeoutMs,
    // An idle thread must keep its event loop: Atomics.wait would stop its heap report and V8's memory reducer.
    atomics: 'disabled',
    resourceLimits: limits.workerResourceLimits,
    workerData: heapReportWorkerData(threadHeaps),
  })
  pool.on('error', (error: unknown) => logger.error('packument worker failed', { error: String(error) }))
  pool.on('workerDestroy', (worker: { id: number }) => threadHeaps.release(worker.id))
  return pool
}

/**
 * A module beside this one as a file URL: the compiled `.js` in dist/, or the
 * `.ts` source when tests run the sources (tap's loader reaches workers too).
 */
function siblingModule(relative: string): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return new URL(`${relative}${extension}`, import.meta.url).href
}
