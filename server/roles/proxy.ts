/**
 * The proxy role's composition root: the one place its objects are made and
 * wired (DESIGN.md). It computes the memory plan from the cgroup, starts the
 * admission gate and its sampler, the Piscina pool sized by the plan, the
 * upstream clients, the metadata cache and the per-mount policy, and serves
 * the `/js` mount's routes and the probes on `SERVICE_SERVER__PORT`.
 */
import { Piscina } from 'piscina'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { combinedSnapshot, MetadataCache, REVALIDATED_RETENTION_MS, type MetadataCacheSnapshot } from '../../engine/cache/metadata-cache.js'
import type { CacheBudget } from '../../engine/cache/cache-budget.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { logPlan } from '../../engine/memory/plan-report.js'
import { BudgetSampler } from '../../engine/memory/sampler.js'
import { ThreadHeapBoard } from '../../engine/memory/thread-heaps.js'
import { memoryInUseReader } from '../../engine/memory/cgroup.js'
import { v8Limits } from '../../engine/memory/v8-limits.js'
import { PACKUMENT_REVALIDATION_FAILED, PackumentService, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import { isServiceError } from '../../engine/errors.js'
import { needsAdvisoryDatabase } from '../../engine/policy/advisory-max-age.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { EmbeddedQueue } from '../../engine/queue/embedded-queue.js'
import { EnqueueBuffer } from '../../engine/mirror/enqueue-buffer.js'
import { DroppedVersionRecord } from '../../engine/packument/dropped-versions.js'
import { inChildSpan } from '../../engine/telemetry/work-span.js'
import { readSnapshot, SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import { runCompressTask } from '../../workers/compress-client.js'
import { runPackumentTask } from '../../workers/packument-client.js'
import { heapReportWorkerData } from '../../workers/heap-report.js'
import { createArtifactHandler, type SelectedArtifact as RouteSelection } from '../routes/artifact-route.js'
import { createWhyHandler } from '../routes/why-route.js'
import { createBulkAuditHandler } from '../routes/audit-route.js'
import { createSignatureHandlers } from '../routes/signature-routes.js'
import { ownsName } from '../../engine/publish/publish-scope.js'
import { ArtifactCounters } from '../routes/artifact-counters.js'
import { FrontDoor } from '../http/front-door.js'
import { Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { mountFallback, mountJs } from '../routes/js-mount.js'
import { createPackumentHandler } from '../routes/packument-route.js'
import { createPublishHandler } from '../routes/publish-route.js'
import { edgeAuthFor } from '../http/edge-auth.js'
import { PublishCounters } from '../../engine/publish/publish-counters.js'
import { PublishTarget } from '../../engine/publish/publish-target.js'
import { publicHasName } from '../../engine/publish/public-name-check.js'
import { CredentialRegistry } from '../../engine/upstream/credentials/credential-registry.js'
import { mountProbes } from '../routes/probes.js'
import { hopMarker } from '../routes/hop-marker.js'
import type { RoleContext, RunningRole } from './role-context.js'
import { attachAdvisoryConsumers, readsAdvisories, type AdvisoryConsumers } from './advisory-wiring.js'
import { openObjectStore } from './object-store.js'
import { planFor } from './runtime-plan.js'
import { attachMirrorWorker, type MirrorAttachment, type MirrorMountSource } from './mirror.js'
import { openMirrorQueue } from './mirror-queue.js'
import { attachPyMount } from './py-wiring.js'
import { mountClients } from './mount-clients.js'
import { LargeReadBuffers } from '../../engine/upstream/http1/artifact-connection.js'
import { DEFAULT_PUBLISH_MAX_BODY_BYTES } from '../../engine/config/schema.js'
import { structureLimits } from '../../engine/config/structure-limits.js'

export const PROXY_LISTENING = 'proxy listening'

/** Entries bound of the shared metadata cache; the byte bound comes from the plan. */
const CACHE_MAX_ENTRIES = 50_000

export async function startProxy(ctx: RoleContext): Promise<RunningRole> {
  const { config, logger, clock } = ctx
  const plan = await planFor(config)
  logPlan(plan, logger)
  const limits = v8Limits(plan)
  const gate = AdmissionGate.fromPlan(plan)
  // Every pool thread publishes its heap here (workers/heap-report.ts); spare slots cover a thread replaced after a crash.
  const threadHeaps = new ThreadHeapBoard(limits.poolThreads * 2)
  const sampler = new BudgetSampler({ gate, plan, readMemoryInUse: memoryInUseReader(config.runtime.cgroupPath), readThreadHeaps: () => threadHeaps.readings() })
  sampler.start()

  // Threads past the first retire when idle and return their heaps; a task paused on its response charge holds no thread (engine/memory/v8-limits.ts says why).
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

  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger, ...(config.server.compatPort === undefined ? {} : { compatPort: config.server.compatPort }) })
  const readiness = new Readiness()
  const liveness = new Liveness()
  const marker = hopMarker(config.server.baseUrl)
  const counters = new UpstreamFetchCounters()
  const clients: { close(): Promise<void> }[] = []

  const snapshots: SnapshotReaders = {
    [SNAPSHOT_KEYS.admissionMemory]: () => gate.snapshot(),
    [SNAPSHOT_KEYS.runtimeHeaps]: () => sampler.heaps,
    [SNAPSHOT_KEYS.upstreamFetchErrors]: () => counters.snapshot(),
  }
  const jsMount = config.mounts.js
  // Upstream credential providers (SPEC.md 5.5): one source per name, shared, primed once at boot.
  const credentials = new CredentialRegistry(config.credentials, clock)
  const credentialNames = [...new Set([jsMount?.upstreams.private?.credential, jsMount?.publish?.credential, jsMount?.mirror?.credential, config.mounts.py?.upstreams.private?.credential, config.mounts.py?.mirror?.credential].filter((n): n is string => n !== undefined))]
  if (credentialNames.length > 0) {
    await credentials.prime(credentialNames)
    snapshots[SNAPSHOT_KEYS.credential] = () => credentials.counters.snapshot()
  }
  const opened = await openMirrorQueue(ctx)
  const queue = opened?.queue
  const embedded = queue instanceof EmbeddedQueue ? queue : undefined
  if (embedded !== undefined) {
    readiness.addCondition('queue', () => (embedded.health().writable ? undefined : 'journal_unwritable'))
    snapshots[SNAPSHOT_KEYS.mirrorQueue] = () => embedded.stats()
  }
  // Serve-then-enqueue through a small bounded buffer: a slow queue never holds a response or the heap (issue 12).
  const enqueueBuffer = queue === undefined ? undefined : new EnqueueBuffer({ queue, logger, capacity: plan.enqueueBuffer.jobs.value })
  if (enqueueBuffer !== undefined) snapshots[SNAPSHOT_KEYS.mirrorEnqueue] = () => enqueueBuffer.stats()
  let mirrorWorker: MirrorAttachment | undefined
  // Embedded queue: this process owns its folder, so it runs the worker too, for every mount with a mirror target (SQS: `service mirror` does).
  const mirrorSources: MirrorMountSource[] = []
  const slots = new Map<MountKey, AdvisorySlot>()
  for (const key of MOUNT_KEYS) {
    const mount = config.mounts[key]
    if (mount !== undefined) readiness.addMount(key, needsAdvisoryDatabase(mount.rules))
  }

  mountProbes(door, liveness, readiness)
  // One cache budget for the process (cache.maxBytes); each mount keeps its own entries in it.
  const caches: { snapshot(): MetadataCacheSnapshot, readonly budget: CacheBudget }[] = []
  snapshots[SNAPSHOT_KEYS.metadataCache] = () => combinedSnapshot(caches)
  const gateModule = siblingModule('../../workers/policy-gate')
  const edge = edgeAuthFor(config.server.edgeTokens)
  // One set of large artifact read buffers for every upstream of every mount, bounded by the plan.
  const largeReadBuffers = new LargeReadBuffers(plan.artifactReadBuffers.value)
  snapshots[SNAPSHOT_KEYS.artifactReadBuffers] = () => largeReadBuffers.snapshot()
  if (jsMount !== undefined) {
    const { privateClient, publicClient } = mountClients(jsMount, { config, credentials, counters, maxResponseBytes: plan.maxResponseBytes.value, marker, logger, largeReadBuffers })
    for (const client of [privateClient, publicClient]) if (client !== undefined) clients.push(client)

    const policy = mountPolicy({ ecosystem: 'js', rules: jsMount.rules, configuredMaxAgeSeconds: config.advisories.maxAgeSeconds, slot: new AdvisorySlot(), logger, clock })
    slots.set('js', policy.slot)
    const cache: MetadataCache<SelectedArtifact> = new MetadataCache<SelectedArtifact>({
      maxBytes: plan.cacheBudgetBytes.value,
      maxEntries: CACHE_MAX_ENTRIES,
      clock,
      selectedVersionSize: (v) => 256 + v.tarball.length + (v.integrity?.length ?? 0) + v.filename.length,
      // Answers are revalidated (PackumentService `revalidation`): kept for their validators beyond their fresh minutes.
      assembledTtlMs: REVALIDATED_RETENTION_MS,
    })
    caches.push(cache)
    const dropped = new DroppedVersionRecord({ logger, ecosystem: 'js' })
    snapshots[SNAPSHOT_KEYS.packumentVersionsDropped] = () => dropped.snapshot()
    // First-party names (inside publish.scopes) never take public versions: the dependency-confusion guard.
    const ownedScopes = jsMount.publish?.scopes ?? []
    const service = new PackumentService({
      ecosystem: 'js',
      privateClient,
      publicClient,
      ...(ownedScopes.length === 0 ? {} : { ownsName: ownsName(ownedScopes) }),
      cache,
      clock,
      generation: policy.generation,
      observe: (outcome, packageName) => {
        policy.observe(outcome)
        if (outcome.counts.dropped > 0) dropped.record(packageName, outcome.dropped, outcome.counts.dropped)
      },
      compress: (body, coding, signal) => runCompressTask(pool, body, coding, signal),
      revalidation: {
        maxStaleMs: config.cache.maxStaleSeconds * 1000,
        admit: (signal) => gate.enter(signal),
        onBehindFailure: (error, packageName) => {
          // The answer stays stale; the next request past the bound waits for a revalidation. A shed one is routine under load.
          const code = isServiceError(error) ? error.code : 'INTERNAL'
          logger[code === 'GATE_SHED' ? 'debug' : 'warn'](PACKUMENT_REVALIDATION_FAILED, { package: packageName, code })
        },
      },
      render: (job) => runPackumentTask(pool, {
        packageName: job.packageName,
        privateEtag: job.privateEtag,
        publicEtag: job.publicEtag,
        baseUrl: config.server.baseUrl,
        abbreviated: job.abbreviated,
        ecosystem: 'js',
        limits: structureLimits(config.limits),
        now: job.now,
        privateChunks: job.privateChunks,
        publicChunks: job.publicChunks,
        gate: { module: gateModule, options: policy.gateOptions() },
        charge: (bytes) => job.charge(bytes),
        signal: job.signal,
      }),
    })
    snapshots[SNAPSHOT_KEYS.packumentRevalidations] = () => service.revalidations.snapshot()
    const artifactCounters = new ArtifactCounters()
    snapshots[SNAPSHOT_KEYS.artifact] = () => artifactCounters.snapshot()
    // A public artifact decision takes the gate's entry step (SPEC.md 8.1); a private hit never gets here.
    const selectVersion = async (packageName: string, filename: string, signal: AbortSignal): Promise<RouteSelection | undefined> => {
      // The wait at the gate is a span of its own inside the request's, as on the packument route.
      const admission = await inChildSpan('gate enter', {}, () => gate.enter(signal))
      try {
        const selected = await service.selectVersion(packageName, filename, admission, signal)
        return selected === undefined ? undefined : { ...selected, publishedAt: selected.publishedAt === undefined ? undefined : new Date(selected.publishedAt) }
      } finally {
        admission.release()
      }
    }
    const evaluate = (facts: VersionFacts): Decision => policy.evaluator.evaluate(facts, 'admission')
    const why = createWhyHandler({ selectVersion, evaluate, rules: jsMount.rules, clock })
    // npm audit from the serving database alone (issue 17 item 3); names in the publish scopes are first-party and answer nothing.
    const publishScopes = jsMount.publish?.scopes ?? []
    const auditBulk = createBulkAuditHandler({
      database: () => policy.slot.database(),
      maxAgeSeconds: policy.maxAgeSeconds,
      isPrivate: ownsName(publishScopes),
      gate,
      clock,
      logger,
    })
    const signatures = createSignatureHandlers({ publicClient, gate, selectVersion, evaluate, observe: policy.observeDecision, rules: jsMount.rules, clock })
    const artifact = createArtifactHandler({
      ecosystem: 'js',
      privateClient,
      publicClient,
      selectVersion,
      evaluate,
      observe: policy.observeDecision,
      rules: jsMount.rules,
      integrityFloor: jsMount.integrityFloor,
      enqueue: enqueueBuffer === undefined || jsMount.mirror === undefined ? undefined : enqueueBuffer.enqueue,
      logger,
      counters: artifactCounters,
      clock,
      // The edge token is this proxy's own: never forwarded to the private upstream (server/http/edge-auth.ts).
      forwardClientCredential: config.server.edgeTokens.length === 0,
    })
    if (jsMount.mirror !== undefined && publicClient !== undefined) mirrorSources.push({ mount: jsMount, source: publicClient })
    // The publish relay (SPEC.md 4.3); without a target the mount answers 405.
    const publish = jsMount.publish
    const publishTarget = publish === undefined ? undefined : new PublishTarget({
      url: publish.target,
      token: publish.token,
      ...(publish.credential === undefined ? {} : { credential: credentials.source(publish.credential) }),
      proxyId: marker,
    })
    if (publishTarget !== undefined) clients.push(publishTarget)
    const publishCounters = new PublishCounters()
    if (publish !== undefined) snapshots[SNAPSHOT_KEYS.publish] = () => publishCounters.snapshot()
    mountJs(door, {
      hopMarker: marker,
      edge,
      ...(publish === undefined ? {} : { refusedBodyBytes: publish.maxBodyBytes }),
      handlers: {
        packument: createPackumentHandler({ service, gate, logger }),
        artifact,
        why,
        auditBulk,
        signingKeys: signatures.signingKeys,
        attestations: signatures.attestations,
        ...(publish === undefined || publishTarget === undefined ? {} : {
          publish: createPublishHandler({
            publish,
            target: publishTarget,
            publicHasName: publicClient === undefined ? undefined : (name, signal) => publicHasName(publicClient, name, signal),
            gate,
            logger,
            counters: publishCounters,
          }),
        }),
      },
    })
  }
  const pyMount = config.mounts.py
  if (pyMount !== undefined) {
    const policy = mountPolicy({ ecosystem: 'py', rules: pyMount.rules, configuredMaxAgeSeconds: config.advisories.maxAgeSeconds, slot: new AdvisorySlot(), logger, clock })
    slots.set('py', policy.slot)
    const py = attachPyMount({
      door, config, mount: pyMount, pool, gate, gateModule, credentials, counters, marker, edge, logger, clock, largeReadBuffers,
      policy,
      maxResponseBytes: plan.maxResponseBytes.value,
      shareBudgetWith: caches[0],
      cacheBytes: plan.cacheBudgetBytes.value,
      cacheEntries: CACHE_MAX_ENTRIES,
      refusedBodyBytes: DEFAULT_PUBLISH_MAX_BODY_BYTES,
      enqueue: enqueueBuffer === undefined || pyMount.mirror === undefined ? undefined : enqueueBuffer.enqueue,
    })
    if (pyMount.mirror !== undefined && py.publicClient !== undefined) mirrorSources.push({ mount: pyMount, source: py.publicClient })
    caches.push(py.cache)
    clients.push(...py.clients)
    Object.assign(snapshots, py.snapshots)
  }
  mountFallback(door)
  if (embedded !== undefined && mirrorSources.length > 0) {
    mirrorWorker = await attachMirrorWorker({ config, logger, clock, queue: embedded, mounts: mirrorSources, liveness, maxDocumentBytes: plan.maxResponseBytes.value, concurrency: plan.mirror.concurrency.value, credentials, memory: gate })
    snapshots[SNAPSHOT_KEYS.mirrorJobsProcessed] = () => mirrorWorker?.counters.snapshot()
  }

  // Each mount whose rules read the advisory database polls the store for Pilot's artifact (SPEC.md 3.1, 3.4).
  const readers = MOUNT_KEYS.some((k) => config.mounts[k] !== undefined && readsAdvisories(config.mounts[k]?.rules ?? []))
  const advisories: AdvisoryConsumers | undefined = readers
    ? attachAdvisoryConsumers({ config, logger, clock, readiness, slots, store: await openObjectStore(config.store, clock) })
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
    quiesce: () => { void mirrorWorker?.stop(config.server.shutdownDrainTimeout * 1000) },
    release: async () => {
      sampler.stop()
      await advisories?.stop()
      // One drain bound for both, not one after the other (the worker has been stopping since the drain began).
      await Promise.all([
        mirrorWorker?.stop(config.server.shutdownDrainTimeout * 1000),
        enqueueBuffer?.close(config.server.shutdownDrainTimeout * 1000),
      ])
      await Promise.allSettled(clients.map((c) => c.close()))
      await pool.destroy()
      await opened?.close()
    },
    metrics: () => readSnapshot(snapshots),
  }
}

/**
 * A module beside this one as a file URL: the compiled `.js` in dist/, or the
 * `.ts` source when tests run the sources (tap's loader reaches workers too).
 */
function siblingModule(relative: string): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return new URL(`${relative}${extension}`, import.meta.url).href
}
