/**
 * The mirror worker's composition roots (SPEC.md 1.6, 6.1, 3.2):
 *
 * - `attachMirrorWorker`: the worker wired to a queue, the public leg's
 *   client and the mount's mirror target; the proxy calls it to run the
 *   worker in its own process on the embedded queue, and `service mirror`
 *   calls it for the dedicated worker.
 * - `startMirror`: `service mirror`, the dedicated worker on
 *   `queue.kind: sqs` (the embedded queue's folder stays owned by the one
 *   proxy process that serves and enqueues). It serves the probes on
 *   `SERVICE_SERVER__PORT`; `/livez` carries the worker's own heartbeat.
 *
 * At boot the queue's attributes are probed: a readable redrive
 * `maxReceiveCount` sets the worker's receive budget one above it, so the
 * dead-letter queue captures first; no redrive policy, or a failed probe
 * (naming the `<queue>:GetQueueAttributes` permission), is a warning and the
 * worker starts anyway with `SERVICE_QUEUE__MAX_RECEIVE_COUNT`.
 *
 * One consumer serves every mount with a mirror target: each job goes to
 * the worker of the mount it names (engine/mirror/mirror-dispatch.ts; a job
 * naming none is a `js` job), `js` to `mounts.js.mirror` (an npm registry),
 * `py` to `mounts.py.mirror` (a legacy upload API), each fetching through
 * its own mount's public leg client.
 *
 * Each target has its pace (engine/mirror/target-pace.ts): its lookups'
 * answer times adapt the jobs at once (at most the plan's mirror
 * concurrency), and its outage holds its jobs; a held job's trials beat the
 * worker's heartbeat. The `js` worker asks a packument the proxy holds
 * before the public upstream (`retained`: the proxy's own retained answers
 * on the embedded queue; none for `service mirror` until a shared backend
 * gives one, engine/mirror/retained-packuments.ts).
 */
import { systemClock, type Clock } from '../../engine/clock.js'
import type { Config, MountConfig } from '../../engine/config/config.js'
import { isServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import { MirrorConsumer, type JobRunner } from '../../engine/mirror/mirror-consumer.js'
import { MirrorDispatch } from '../../engine/mirror/mirror-dispatch.js'
import { PyTargetProtocol } from '../../engine/mirror/py-target-protocol.js'
import { PyUploadTarget } from '../../engine/mirror/py-upload-target.js'
import { MirrorCounters } from '../../engine/mirror/mirror-counters.js'
import { JsTargetProtocol } from '../../engine/mirror/js-target-protocol.js'
import { MirrorTarget } from '../../engine/mirror/mirror-target.js'
import { MirrorWorker, type MirrorMemory } from '../../engine/mirror/mirror-worker.js'
import type { RetainedPackuments } from '../../engine/mirror/retained-packuments.js'
import { TargetPace } from '../../engine/mirror/target-pace.js'
import type { PublicArtifactSource } from '../../engine/mirror/target-protocol.js'
import { ManifestReads } from '../../engine/mirror/version-manifest.js'
import type { Queue } from '../../engine/queue/queue.js'
import { SQS_ATTRIBUTES_PERMISSION } from '../../engine/queue/queue.js'
import { readSnapshot, SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { Heartbeat, Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { FrontDoor } from '../http/front-door.js'
import { mountFallback } from '../routes/js-mount.js'
import { hopMarker } from '../routes/hop-marker.js'
import { mountProbes } from '../routes/probes.js'
import type { RoleContext, RunningRole } from './role-context.js'
import { planFor } from './runtime-plan.js'
import { openSharedCache, reportedInvalidation } from './shared-cache.js'
import { CredentialRegistry } from '../../engine/upstream/credentials/credential-registry.js'
import { forwardProxyFor } from './mount-clients.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'

/** info: the dedicated worker is consuming. */
export const MIRROR_LISTENING = 'mirror worker listening'
/** warn (SPEC.md 6.1 item 2): the queue has no redrive policy; jobs that cannot succeed end at the worker's budget. */
export const MIRROR_QUEUE_NO_REDRIVE = 'mirror queue has no redrive policy'
/** warn (SPEC.md 6.1 item 2): the boot probe of the queue attributes failed; names the missing permission. */
export const MIRROR_QUEUE_ATTRIBUTES_FAILED = 'mirror queue attributes could not be read'
/** info: the worker's settings at boot. */
export const MIRROR_WORKER_STARTED = 'mirror worker started'

/** `limits.maxArtifactBytes` when 0 (automatic): 512 MiB, above the largest packages seen on public registries. */
export const AUTOMATIC_MAX_ARTIFACT_BYTES = 512 * 1024 * 1024

export interface MirrorAttachment {
  readonly counters: MirrorCounters
  readonly heartbeat: Heartbeat
  readonly budget: number
  /** Each mount's target pace (its `service.mirror.target.*` part). */
  readonly paces: Readonly<Partial<Record<'js' | 'py', TargetPace>>>
  /**
   * The drain: stops receiving, lets running jobs finish for up to `graceMs`, cancels the rest. Called at drain
   * start and again on release; the second call waits on the first.
   */
  stop(graceMs: number): Promise<void>
  /** Its parts of the role's metrics snapshot. */
  readonly snapshots: SnapshotReaders
  metrics(): Record<string, unknown>
}

export interface AttachMirrorOptions {
  readonly config: Config
  readonly logger: Logger
  readonly clock?: Clock
  readonly queue: Queue
  /** The forward proxy the worker's target writes go through (docs/security.md#forward-proxy); direct when unset. */
  readonly forwardProxy?: ForwardProxy | undefined
  /** Each mount with a mirror target, with its public leg client: the same egress policy for the worker's fetches. */
  readonly mounts: readonly MirrorMountSource[]
  readonly liveness: Liveness
  /** The metadata ingest ceiling (the plan's), for the target's version lookup. */
  readonly maxDocumentBytes: number
  /** Jobs at once: the memory plan's `mirror.concurrency` (it applies the `limits.mirrorConcurrency` pin, SPEC.md 8.2). */
  readonly concurrency: number
  /** The process's credential sources, for a mirror target that names one (`mounts.<m>.mirror.credential`). */
  readonly credentials?: CredentialRegistry
  /** Embedded in the proxy: its memory gate, to which the js worker's document reads are charged (they share its heap). */
  readonly memory?: MirrorMemory
  /** Per mount: what a mirrored version invalidates (the metadata cache's entries of its package, docs/cache.md "Invalidation"). */
  readonly invalidations?: Partial<Record<'js' | 'py', (packageName: string) => Promise<void>>>
  /** Overrides for tests. */
  readonly visibilitySeconds?: number
  readonly waitSeconds?: number
  /** Wait before a refused job's second try; tests shorten it. */
  readonly refusalPauseMs?: number
}

/** A mount whose jobs the worker mirrors, and the public leg client it fetches through. */
export interface MirrorMountSource {
  readonly mount: MountConfig
  readonly source: PublicArtifactSource
  /** js: packuments the process holds, asked before the public upstream for the gated manifest. */
  readonly retained?: RetainedPackuments | undefined
}

function mirrored(invalidate: ((packageName: string) => Promise<void>) | undefined): { onMirrored?: (packageName: string) => Promise<void> } {
  return invalidate === undefined ? {} : { onMirrored: invalidate }
}

export async function attachMirrorWorker(options: AttachMirrorOptions): Promise<MirrorAttachment> {
  const { config, logger, queue } = options
  const clock = options.clock ?? systemClock
  if (options.mounts.length === 0) throw new Error('the mirror worker needs a mount with a mirror target')
  const maxArtifactBytes = config.limits.maxArtifactBytes === 0 ? AUTOMATIC_MAX_ARTIFACT_BYTES : config.limits.maxArtifactBytes
  const concurrency = Math.max(1, options.concurrency)
  // The worker's own heartbeat, not the listener's (SPEC.md 3.2): created now, so the 660 s allowance starts now.
  const heartbeat = new Heartbeat(clock)
  const runners: { js?: JobRunner, py?: JobRunner } = {}
  const paces: { js?: TargetPace, py?: TargetPace } = {}
  const targets: { close(): Promise<void> }[] = []
  const manifestReads = new ManifestReads()
  const common = { maxArtifactBytes, logger, refusalTries: config.limits.mirrorRefusalTries, ...(options.refusalPauseMs === undefined ? {} : { refusalPauseMs: options.refusalPauseMs }) }
  for (const { mount, source, retained } of options.mounts) {
    const mirror = mount.mirror
    if (mirror === undefined) throw new Error(`mounts.${mount.key}.mirror is not set`)
    const credential = mirror.credential === undefined ? undefined : options.credentials?.source(mirror.credential)
    if (mirror.credential !== undefined && credential === undefined) throw new Error(`mounts.${mount.key}.mirror.credential names a credential this process has not built`)
    // A paused worker is alive: each trial of a held job beats the heartbeat /livez reads.
    const pace = new TargetPace({ maxConcurrency: concurrency, slowMs: config.limits.mirrorTargetSlowMs, authority: new URL(mirror.target).host, mount: mount.key, logger, clock, onTrial: () => heartbeat.beat() })
    const connection = { token: mirror.token, credential, maxDocumentBytes: options.maxDocumentBytes, onAnswer: (ms: number) => pace.sample(ms), forwardProxy: options.forwardProxy }
    if (mount.key === 'py') {
      const target = new PyUploadTarget({ url: mirror.target, simpleUrl: mirror.simpleUrl, ...connection })
      targets.push(target)
      paces.py = pace
      runners.py = new MirrorWorker({ source, target: new PyTargetProtocol(target), pace, ...common, ...mirrored(options.invalidations?.py) })
    } else {
      const target = new MirrorTarget({ url: mirror.target, ...connection })
      targets.push(target)
      paces.js = pace
      const protocol = new JsTargetProtocol(target, { retained, reads: manifestReads })
      runners.js = new MirrorWorker({ source, target: protocol, pace, ...common, ...(options.memory === undefined ? {} : { memory: options.memory }), ...mirrored(options.invalidations?.js) })
    }
  }
  const budget = await receiveBudget(queue, config.queue.maxReceiveCount, logger, config.queue.url)
  const worker = new MirrorDispatch(runners, logger)
  const counters = new MirrorCounters()
  options.liveness.attachMirrorHeartbeat(heartbeat)
  const consumer = new MirrorConsumer({
    queue, worker, counters, logger, concurrency, maxReceiveCount: budget, clock,
    ...(options.visibilitySeconds === undefined ? {} : { visibilitySeconds: options.visibilitySeconds }),
    ...(options.waitSeconds === undefined ? {} : { waitSeconds: options.waitSeconds }),
    onProgress: () => heartbeat.beat(),
  })
  consumer.start()
  for (const { mount } of options.mounts) {
    logger.info(MIRROR_WORKER_STARTED, {
      mount: mount.key, target: new URL(mount.mirror?.target ?? '').host, concurrency, maxArtifactBytes, receiveBudget: budget,
      refusalTries: config.limits.mirrorRefusalTries, slowMs: config.limits.mirrorTargetSlowMs === 0 ? 'automatic' : config.limits.mirrorTargetSlowMs,
    })
  }
  let stopping: Promise<void> | undefined
  const snapshots: SnapshotReaders = {
    [SNAPSHOT_KEYS.mirrorJobsProcessed]: () => counters.snapshot(),
    [SNAPSHOT_KEYS.mirrorTarget]: () => Object.fromEntries(Object.entries(paces).map(([mount, pace]) => [mount, pace.snapshot()])),
    ...(paces.js === undefined ? {} : { [SNAPSHOT_KEYS.mirrorManifestReads]: () => manifestReads.snapshot() }),
  }
  return {
    counters,
    heartbeat,
    budget,
    paces,
    stop: (graceMs) => stopping ??= (async () => {
      await consumer.stop(graceMs)
      for (const pace of Object.values(paces)) pace.close(new Error('the mirror worker stopped'))
      await Promise.allSettled(targets.map((t) => t.close()))
    })(),
    snapshots,
    metrics: () => readSnapshot(snapshots),
  }
}

/**
 * The worker's receive budget (SPEC.md 6.1 items 2-3): one above a readable
 * redrive `maxReceiveCount`, so the dead-letter queue captures first;
 * otherwise `queue.maxReceiveCount`, with a warning.
 */
export async function receiveBudget(queue: Queue, configured: number, logger: Logger, queueUrl: string | undefined): Promise<number> {
  try {
    const attributes = await queue.attributes()
    if (attributes.redrive !== undefined) return attributes.redrive.maxReceiveCount + 1
    logger.warn(MIRROR_QUEUE_NO_REDRIVE, { budget: configured, ...(queueUrl === undefined ? {} : { queue: queueUrl }) })
  } catch (error) {
    logger.warn(MIRROR_QUEUE_ATTRIBUTES_FAILED, {
      permission: SQS_ATTRIBUTES_PERMISSION, budget: configured,
      ...(queueUrl === undefined ? {} : { queue: queueUrl }),
      ...(isServiceError(error) && typeof error.data?.['transport'] === 'string' ? { transport: error.data['transport'] } : {}),
    })
  }
  return configured
}

/** The public leg's client of a mount, built as the proxy builds it (the same egress policy). */
export function publicClientFor(config: Config, mount: MountConfig, maxResponseBytes: number, logger: Logger, counters: UpstreamFetchCounters, forwardProxy?: ForwardProxy): UpstreamClient {
  const upstream = mount.upstreams.public
  if (upstream === undefined) throw new Error(`mounts.${mount.key}.upstreams.public is not set: the mirror worker fetches from it`)
  return new UpstreamClient({
    url: upstream.url,
    trusted: false,
    ...(upstream.caFile === undefined ? {} : { caFile: upstream.caFile }),
    allowHosts: upstream.allowHosts,
    allowInternalRanges: upstream.allowInternalRanges,
    allowInternalRangesKey: `mounts.${mount.key}.upstreams.public.allowInternalRanges`,
    respectUpstreamTarballHost: upstream.respectTarballHost,
    maxResponseBytes,
    proxyId: hopMarker(config.server.baseUrl),
    logger,
    counters,
    forwardProxy,
  })
}

/** The mounts with a mirror target, whose jobs the worker mirrors. */
export function mirrorMounts(config: Config): MountConfig[] {
  return [config.mounts.js, config.mounts.py].filter((m): m is MountConfig => m?.mirror !== undefined)
}

/** `service mirror`: the dedicated worker on SQS, with the probes. */
export async function startMirror(ctx: RoleContext): Promise<RunningRole> {
  const { config, logger, clock } = ctx
  const mounts = mirrorMounts(config)
  if (mounts.length === 0) throw new Error('service mirror needs mounts.js.mirror or mounts.py.mirror (the mirror target)')
  if (config.queue.kind !== 'sqs' || config.queue.url === undefined) {
    throw new Error('service mirror runs on queue.kind: sqs; the embedded queue\'s folder is owned by the proxy, which runs the worker itself')
  }
  const plan = await planFor(config)
  const fetchCounters = new UpstreamFetchCounters()
  const forwardProxy = forwardProxyFor(config, logger, ctx.env)
  const sources = mounts.map((mount) => ({ mount, source: publicClientFor(config, mount, plan.maxResponseBytes.value, logger, fetchCounters, forwardProxy) }))
  const { SqsQueue } = await import('../../engine/queue/sqs-queue.js')
  const queue = new SqsQueue({ url: config.queue.url, region: config.queue.region, endpoint: config.queue.endpoint, clock, forwardProxy })
  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger, ...(config.server.compatPort === undefined ? {} : { compatPort: config.server.compatPort }) })
  const readiness = new Readiness()
  const liveness = new Liveness()
  mountProbes(door, liveness, readiness)
  mountFallback(door)
  let attachment: MirrorAttachment
  // Exported as `service.credential` (SPEC.md 6.3) when a mirror target names a credential, as the proxy role does.
  let credentialCounters: (() => unknown) | undefined
  // With a shared metadata cache, a mirrored version invalidates its package there (docs/cache.md "Invalidation").
  const sharedCache = await openSharedCache(config, logger)
  try {
    // Upstream credential providers (SPEC.md 5.5): the mirror target's, minted once at boot.
    const credentials = new CredentialRegistry(config.credentials, clock, forwardProxy)
    const names = [...new Set(mounts.map((m) => m.mirror?.credential).filter((n): n is string => n !== undefined))]
    if (names.length > 0) await credentials.prime(names)
    if (names.length > 0) credentialCounters = () => credentials.counters.snapshot()
    attachment = await attachMirrorWorker({ config, logger, clock, queue, forwardProxy, mounts: sources, liveness, maxDocumentBytes: plan.maxResponseBytes.value, concurrency: plan.mirror.concurrency.value, credentials, ...(sharedCache === undefined ? {} : { invalidations: { js: reportedInvalidation(sharedCache.invalidation.invalidate, 'js', logger), py: reportedInvalidation(sharedCache.invalidation.invalidate, 'py', logger) } }) })
  } catch (error) {
    await sharedCache?.close()
    await queue.close()
    await Promise.allSettled(sources.map((s) => s.source.close()))
    throw error
  }
  const port = await door.listen()
  readiness.markStarted()
  logger.info(MIRROR_LISTENING, { port, queue: config.queue.url })
  return {
    door,
    readiness,
    liveness,
    quiesce: () => { void attachment.stop(config.server.shutdownDrainTimeout * 1000) },
    release: async () => {
      await attachment.stop(config.server.shutdownDrainTimeout * 1000)
      await Promise.allSettled(sources.map((s) => s.source.close()))
      await queue.close()
      await sharedCache?.close()
    },
    metrics: () => ({ ...attachment.metrics(), [SNAPSHOT_KEYS.upstreamFetchErrors]: fetchCounters.snapshot(), ...(credentialCounters === undefined ? {} : { [SNAPSHOT_KEYS.credential]: credentialCounters() }) }),
  }
}
