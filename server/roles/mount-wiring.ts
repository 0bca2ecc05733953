/**
 * What the proxy root hands each mount's wiring (`attachJsMount`,
 * `attachPyMount`) and what it gets back: the two ecosystems are attached
 * the same way, so the root treats them alike; and the one helper both use
 * to make their metadata cache in the process's budget.
 */
import type { Piscina } from 'piscina'
import { readBuildInfo } from '../../engine/build-info.js'
import type { CacheBudget } from '../../engine/cache/cache-budget.js'
import type { DocumentKeep } from '../../engine/cache/document-keep.js'
import { MetadataCache, type MetadataCacheOptions } from '../../engine/cache/metadata-cache.js'
import type { Clock } from '../../engine/clock.js'
import type { Config, MountConfig } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'
import type { AdmissionGate } from '../../engine/memory/gate.js'
import type { MirrorJob } from '../../engine/mirror/mirror-job.js'
import type { RetainedPackuments } from '../../engine/mirror/retained-packuments.js'
import { shortDigest } from '../../engine/policy/generation-key.js'
import type { MountPolicy } from '../../engine/policy/mount-policy.js'
import type { SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { EdgeAuth } from '../http/edge-auth.js'
import type { FrontDoor } from '../http/front-door.js'
import type { RequestOrigin } from '../http/request-origin.js'
import type { ClientContext } from './mount-clients.js'
import { reportedInvalidation, type SharedCache } from './shared-cache.js'

/** The process's parts every mount is wired onto. */
export interface ProcessParts {
  readonly door: FrontDoor
  readonly config: Config
  /** The Piscina pool that renders listings (packument and project-page tasks). */
  readonly pool: Piscina
  readonly gate: AdmissionGate
  /** The module the pool's tasks load their policy gate from (workers/policy-gate.ts). */
  readonly gateModule: string
  /** How a mount's upstream clients are built (./mount-clients.ts): credentials, counters, hop marker, read buffers. */
  readonly upstreams: ClientContext
  /** With edge tokens configured, every request under a mount needs one (SPEC.md 5.1). */
  readonly edge: EdgeAuth | undefined
  /** One cache bound for the process (`cache.maxBytes`); each mount keeps its own entries in it. */
  readonly cacheBudget: CacheBudget
  /** `{base_url}` per request: the configured one, or the request's own origin (../http/request-origin.ts). */
  readonly origin: RequestOrigin
  /** `cache.backend: redis`: the tier's shared cache (./shared-cache.ts); undefined on the local backend. */
  readonly sharedCache?: SharedCache | undefined
  /** Upstream documents kept with their validators (./kept-documents.ts); undefined: none kept. */
  readonly documentKeep?: DocumentKeep | undefined
  readonly logger: Logger
  readonly clock: Clock
}

export interface MountWiringOptions extends ProcessParts {
  readonly mount: MountConfig
  readonly policy: MountPolicy
  /**
   * Where an admitted public artifact's mirror job goes after a clean relay
   * (serve-then-enqueue, the proxy's enqueue buffer); undefined when the
   * mount has no mirror target.
   */
  readonly enqueue: ((job: MirrorJob) => Promise<void>) | undefined
}

export interface MountAttachment<Selected> {
  /** Everything the mount opened that release must close. */
  readonly clients: readonly { close(): Promise<void> }[]
  /** The public leg's client, whose egress policy the mirror worker's fetches share. */
  readonly publicClient: UpstreamClient | undefined
  readonly cache: MetadataCache<Selected>
  readonly snapshots: SnapshotReaders
  /** The packuments the mount holds that the mirror worker may take a gated manifest from (js: its retained full-form answers). */
  readonly retained?: RetainedPackuments
}

/**
 * The generation a mount's retained answers are keyed by: the rules and the
 * serving advisory artifact (the policy's `generationKey`), after a digest of
 * what else shapes a rendered answer and may differ between two releases or
 * two configurations of a tier during a rolling update: the build, the base
 * URL tarball links are rewritten to, the owned scopes, the limits. Every
 * replica computes it alike, and a restart keeps it (docs/cache.md "Keys").
 */
export function answerGeneration(parts: ProcessParts & { readonly mount: MountConfig }, policy: MountPolicy): () => string {
  const { config, mount } = parts
  const settings = shortDigest([readBuildInfo().version, config.server.baseUrl, mount.publish?.scopes ?? [], config.limits])
  return () => `${settings}.${policy.generationKey()}`
}

/** A mount's metadata cache, its entries kept in the process's one budget (SPEC.md 6.3). */
export function mountCache<Selected>(parts: ProcessParts, options: Pick<MetadataCacheOptions<Selected>, 'selectedVersionSize' | 'assembledTtlMs'>): MetadataCache<Selected> {
  const budget = parts.cacheBudget
  return new MetadataCache<Selected>({ ...options, maxBytes: budget.maxBytes, maxEntries: budget.maxEntries, shareBudgetWith: { budget }, clock: parts.clock, shared: parts.sharedCache?.tier, privateMissMs: parts.config.cache.privateMissSeconds * 1000 })
}

/**
 * What a publish relayed here, a mirror success and a Dredger removal call
 * (docs/cache.md "Invalidation"): the package's shared entries (its stamp
 * moves on the server) and this process's near copies are forgotten. A
 * failure is counted refused and reported, never thrown: the change itself
 * already happened.
 */
export function packageInvalidation(cache: Pick<MetadataCache<unknown>, 'invalidate'>, ecosystem: string, logger: Logger): (packageName: string) => Promise<void> {
  return reportedInvalidation((eco, name) => cache.invalidate(eco, name), ecosystem, logger)
}
