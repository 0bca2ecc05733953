/**
 * The parts of a role's `metrics()` snapshot (server/roles/role-context.ts),
 * by key: the role roots set them, the metric catalog reads them. Each key
 * is written once, here, so a misspelt one is a compile error rather than a
 * series that silently never appears.
 *
 * The keys live beside the catalog, not beside each counters class: most
 * counters sit in folders that already import telemetry (spans), so the
 * catalog importing them would run an import back up; and the counting code
 * keeps plain integers, free of telemetry (DESIGN.md "One instrument layer").
 */
export const SNAPSHOT_KEYS = Object.freeze({
  /** engine/memory/gate.ts `snapshot()` (SPEC.md 8.1). */
  admissionMemory: 'service.serve.admission.memory',
  /** engine/memory/sampler.ts `heaps`. */
  runtimeHeaps: 'service.runtime.heaps',
  /** engine/upstream/fetch-counters.ts (SPEC.md 6.2). */
  upstreamFetchErrors: 'service.upstream.fetch.errors',
  /** engine/upstream/credentials/credential-counters.ts (SPEC.md 5.5). */
  credential: 'service.credential',
  /** engine/upstream/http1/artifact-connection.ts LargeReadBuffers. */
  artifactReadBuffers: 'service.artifact.read_buffers',
  /** engine/cache/metadata-cache.ts, every mount's caches combined (SPEC.md 6.3). */
  metadataCache: 'service.metadata_cache',
  /** engine/packument/dropped-versions.ts. */
  packumentVersionsDropped: 'service.packument.versions.dropped',
  /** engine/packument/packument-service.ts `revalidations`. */
  packumentRevalidations: 'service.packument.revalidations',
  /** engine/cache/document-keep.ts KeepCounters (issue 29 items 4 and 1). */
  keptDocuments: 'service.packument.kept_documents',
  /** server/routes/artifact-counters.ts of the `/js` mount. */
  artifact: 'service.artifact',
  /** engine/publish/publish-counters.ts (SPEC.md 4.3). */
  publish: 'service.publish',
  /** engine/pypi/project-page-record.ts. */
  pypiFiles: 'service.pypi.files',
  /** server/routes/artifact-counters.ts of the `/py` mount. */
  pypiArtifact: 'service.pypi.artifact',
  /** engine/queue/embedded-queue.ts `stats()`. */
  mirrorQueue: 'service.mirror.queue',
  /** engine/mirror/enqueue-buffer.ts `stats()`. */
  mirrorEnqueue: 'service.mirror.enqueue',
  /** engine/mirror/mirror-counters.ts (SPEC.md 6.1). */
  mirrorJobsProcessed: 'service.mirror.jobs.processed',
  /** engine/mirror/target-pace.ts `snapshot()`, by mount (issues 29, 30). */
  mirrorTarget: 'service.mirror.target',
  /** engine/mirror/version-manifest.ts ManifestReads (issue 29 item 3). */
  mirrorManifestReads: 'service.mirror.manifest.reads',
  /** server/roles/advisory-wiring.ts, by ecosystem (SPEC.md 3.5). */
  advisorySourceAge: 'service.advisory.source.age.seconds',
  advisoryDatabaseAge: 'service.advisory.database.age.seconds',
  /** server/roles/pilot.ts: the compile schedule. */
  pilot: 'service.pilot',
  /** server/roles/pilot.ts: seconds since the last refresh, `{ osv: { <ecosystem>: s }, epss: { ... } }` (engine/advisory/pilot/refresh-ages.ts). */
  pilotRefreshAge: 'service.pilot.refresh.age.seconds',
  /** engine/dredger/dredger-counters.ts. */
  dredgerRemovals: 'service.dredger.removals',
  /** The policy in force (issue 31): `{ waiverAdmissions: { <ecosystem>: n }, malwareRefusals: { <ecosystem>: { public, private } }, signalWithholdings: { <ecosystem>: { <signal>: n } }, reloads?: { <result>: n } }`. */
  policy: 'service.policy',
} as const)

export type SnapshotKey = (typeof SNAPSHOT_KEYS)[keyof typeof SNAPSHOT_KEYS]

/** A role's readers of its snapshot parts, called at each collection. */
export type SnapshotReaders = { [K in SnapshotKey]?: () => unknown }

/** A role snapshot, each part read now. */
export function readSnapshot(readers: SnapshotReaders): Record<string, unknown> {
  const snapshot: Record<string, unknown> = {}
  for (const [key, read] of Object.entries(readers)) if (read !== undefined) snapshot[key] = read()
  return snapshot
}
