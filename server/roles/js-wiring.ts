/**
 * The `js` mount's part of the proxy's composition, called once by
 * startProxy, as `attachPyMount` is for `py`: its upstream clients, its
 * packument service on the shared pool and cache budget, the publish relay,
 * and its routes (SPEC.md 4.1-4.4). The policy is built by the root with
 * engine/policy/mount-policy.ts.
 */
import { REVALIDATED_RETENTION_MS } from '../../engine/cache/metadata-cache.js'
import { SharedDocumentKeep } from '../../engine/cache/shared-document-keep.js'
import { structureLimits } from '../../engine/config/structure-limits.js'
import { isServiceError } from '../../engine/errors.js'
import { retainedAnswers } from '../../engine/mirror/retained-packuments.js'
import { DroppedVersionRecord } from '../../engine/packument/dropped-versions.js'
import { PACKUMENT_REVALIDATION_FAILED, PackumentService, type SelectedArtifact } from '../../engine/packument/packument-service.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { PublishCounters } from '../../engine/publish/publish-counters.js'
import { ownsName } from '../../engine/publish/publish-scope.js'
import { tarballFileVersion } from '../../engine/npm/names.js'
import { privateMalwareRefusal } from '../routes/private-refusal.js'
import { PublishTarget } from '../../engine/publish/publish-target.js'
import { publicHasName } from '../../engine/publish/public-name-check.js'
import { SNAPSHOT_KEYS, type SnapshotReaders } from '../../engine/telemetry/snapshot-keys.js'
import { inChildSpan } from '../../engine/telemetry/work-span.js'
import { runCompressTask } from '../../workers/compress-client.js'
import { runPackumentTask } from '../../workers/packument-client.js'
import { ArtifactCounters } from '../routes/artifact-counters.js'
import { createArtifactHandler, type SelectedArtifact as RouteSelection } from '../routes/artifact-route.js'
import { createBulkAuditHandler } from '../routes/audit-route.js'
import { mountJs } from '../routes/js-mount.js'
import { createPackumentHandler } from '../routes/packument-route.js'
import { createPublishHandler } from '../routes/publish-route.js'
import { createSignatureHandlers } from '../routes/signature-routes.js'
import { createWhyHandler } from '../routes/why-route.js'
import { mountClients } from './mount-clients.js'
import { answerGeneration, mountCache, packageInvalidation, type MountAttachment, type MountWiringOptions } from './mount-wiring.js'

export function attachJsMount(o: MountWiringOptions): MountAttachment<SelectedArtifact> {
  const { mount, config, policy, gate, logger, clock } = o
  const { privateClient, publicClient } = mountClients(mount, o.upstreams)
  const cache = mountCache<SelectedArtifact>(o, {
    selectedVersionSize: (v) => 256 + v.tarball.length + (v.integrity?.length ?? 0) + v.filename.length,
    // Answers are revalidated (PackumentService `revalidation`): kept for their validators beyond their fresh minutes.
    assembledTtlMs: REVALIDATED_RETENTION_MS,
  })
  // Kept upstream documents: in the shared backend with one, else the process's folder (./kept-documents.ts).
  const sharedKeep = o.sharedCache === undefined ? undefined : new SharedDocumentKeep({ tier: o.sharedCache.tier, refused: () => cache.full.countRefused() })
  const keep = sharedKeep ?? o.documentKeep
  const dropped = new DroppedVersionRecord({ logger, ecosystem: 'js' })
  const limits = structureLimits(config.limits)
  // First-party names (inside publish.scopes) never take public versions: the dependency-confusion guard.
  const ownedScopes = mount.publish?.scopes ?? []
  const service = new PackumentService({
    ecosystem: 'js',
    privateClient,
    publicClient,
    ...(ownedScopes.length === 0 ? {} : { ownsName: ownsName(ownedScopes) }),
    cache,
    keep,
    clock,
    generation: answerGeneration(o, policy),
    observe: (outcome, packageName) => {
      policy.observe(outcome, packageName)
      if (outcome.counts.dropped > 0) dropped.record(packageName, outcome.dropped, outcome.counts.dropped)
    },
    compress: (body, coding, signal) => runCompressTask(o.pool, body, coding, signal),
    revalidation: {
      maxStaleMs: config.cache.maxStaleSeconds * 1000,
      admit: (signal) => gate.enter(signal),
      onBehindFailure: (error, packageName) => {
        // The answer stays stale; the next request past the bound waits for a revalidation. A shed one is routine under load.
        const code = isServiceError(error) ? error.code : 'INTERNAL'
        logger[code === 'GATE_SHED' ? 'debug' : 'warn'](PACKUMENT_REVALIDATION_FAILED, { package: packageName, code })
      },
    },
    render: (job) => runPackumentTask(o.pool, {
      packageName: job.packageName,
      privateEtag: job.privateEtag,
      publicEtag: job.publicEtag,
      baseUrl: job.baseUrl ?? config.server.baseUrl,
      abbreviated: job.abbreviated,
      listWithheld: job.listWithheld,
      ecosystem: 'js',
      limits,
      now: job.now,
      privateChunks: job.privateChunks,
      publicChunks: job.publicChunks,
      gate: { module: o.gateModule, options: policy.gateOptions() },
      charge: (bytes) => job.charge(bytes),
      signal: job.signal,
    }),
  })

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
  const artifactCounters = new ArtifactCounters()
  const artifact = createArtifactHandler({
    ecosystem: 'js',
    privateClient,
    publicClient,
    // A version the last listing took from the public side skips the private leg (docs/cache.md "The private registry's misses").
    publicSourced: (packageName, filename) => service.publicSourced(packageName, filename),
    selectVersion,
    evaluate,
    observe: policy.observeDecision,
    rules: policy.rules,
    integrityFloor: mount.integrityFloor,
    enqueue: o.enqueue,
    logger,
    counters: artifactCounters,
    clock,
    // The edge token is this proxy's own: never forwarded to the private upstream (server/http/edge-auth.ts).
    forwardClientCredential: config.server.edgeTokens.length === 0,
    privateRefusal: privateMalwareRefusal(policy, 'js', tarballFileVersion, clock),
  })
  const signatures = createSignatureHandlers({ publicClient, gate, selectVersion, evaluate, observe: policy.observeDecision, rules: policy.rules, clock })

  // The publish relay (SPEC.md 4.3); without a target the mount answers 405.
  const publish = mount.publish
  const publishTarget = publish === undefined ? undefined : new PublishTarget({
    url: publish.target,
    token: publish.token,
    ...(publish.credential === undefined ? {} : { credential: o.upstreams.credentials.source(publish.credential) }),
    proxyId: o.upstreams.marker,
    forwardProxy: o.upstreams.forwardProxy,
  })
  const publishCounters = new PublishCounters()
  mountJs(o.door, {
    hopMarker: o.upstreams.marker,
    ...(o.edge === undefined ? {} : { edge: o.edge }),
    ...(publish === undefined ? {} : { refusedBodyBytes: publish.maxBodyBytes }),
    handlers: {
      packument: createPackumentHandler({ service, gate, logger, origin: o.origin }),
      artifact,
      why: createWhyHandler({ selectVersion, evaluate, rules: policy.rules, clock, privateVerdict: policy.privateVerdict }),
      // npm audit from the serving database alone (issue 17 item 3); names in the publish scopes are first-party and answer nothing.
      auditBulk: createBulkAuditHandler({ database: () => policy.slot.database(), maxAgeSeconds: policy.maxAgeSeconds, isPrivate: ownsName(ownedScopes), gate, clock, logger }),
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
          onPublished: packageInvalidation(cache, 'js', logger),
        }),
      }),
    },
  })
  const snapshots: SnapshotReaders = {
    [SNAPSHOT_KEYS.packumentVersionsDropped]: () => dropped.snapshot(),
    [SNAPSHOT_KEYS.packumentRevalidations]: () => service.revalidations.snapshot(),
    ...(keep === undefined ? {} : { [SNAPSHOT_KEYS.keptDocuments]: () => keep.counters.snapshot() }),
    [SNAPSHOT_KEYS.artifact]: () => artifactCounters.snapshot(),
    ...(publish === undefined ? {} : { [SNAPSHOT_KEYS.publish]: () => publishCounters.snapshot() }),
  }
  return {
    clients: [privateClient, publicClient, publishTarget, sharedKeep].filter((c): c is NonNullable<typeof c> => c !== undefined),
    publicClient,
    cache,
    snapshots,
    // The embedded mirror worker takes a version's gated manifest from a retained full-form answer when there is one (issue 29 item 3).
    ...(mount.mirror === undefined ? {} : { retained: retainedAnswers(cache.assembled, 'js', policy.generation) }),
  }
}
