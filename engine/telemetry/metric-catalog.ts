/**
 * The SPEC.md 6.3 metric set, read from a role's `metrics()` snapshot
 * (server/roles/role-context.ts). Each entry names one OpenTelemetry
 * instrument and says how to read its observations from the snapshot at
 * collection time, so the counting code keeps plain integers and never
 * imports telemetry (DESIGN.md "One instrument layer").
 *
 * Every label value of a counter is observed on every collection, zeros
 * included, so each series exists from boot and an alert on a rate never
 * starts from a missing series. A part the role does not run (no cache
 * without a js mount, no mirror counters without a mirror) has no series.
 *
 * Names follow SPEC.md 6.3. The Prometheus exposition adds `_total` to
 * counters; names of gauges already end in their unit word (`_bytes`,
 * `.seconds`), so no unit suffix is needed for them (see
 * prometheus-views.ts for the semantic-convention histograms).
 */
import type { Attributes } from '@opentelemetry/api'
import { SNAPSHOT_KEYS, type SnapshotKey } from './snapshot-keys.js'

export type MetricKind = 'counter' | 'gauge'

export type Observe = (value: number, attributes?: Attributes) => void

export interface MetricSpec {
  readonly name: string
  readonly kind: MetricKind
  /** UCUM, as OpenTelemetry expects: `By`, `s`, `1` or an annotation such as `{request}`. */
  readonly unit: string
  readonly description: string
  readonly read: (snapshot: Readonly<Record<string, unknown>>, observe: Observe) => void
}

export type RoleSnapshot = Readonly<Record<string, unknown>>

type Numbers = Readonly<Record<string, unknown>>

/** The part of a role snapshot under `key`, when it holds an object. */
function part(snapshot: RoleSnapshot, key: SnapshotKey): Numbers | undefined {
  return objectAt(snapshot, key)
}

function objectAt(from: Numbers | undefined, key: string): Numbers | undefined {
  const value = from?.[key]
  return typeof value === 'object' && value !== null ? value as Numbers : undefined
}

function numberAt(from: Numbers | undefined, key: string): number | undefined {
  const value = from?.[key]
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

/** One gauge or counter read from a field of a snapshot part. */
function field(name: string, kind: MetricKind, unit: string, description: string, key: SnapshotKey, fieldName: string): MetricSpec {
  return {
    name, kind, unit, description,
    read: (snapshot, observe) => {
      const value = numberAt(part(snapshot, key), fieldName)
      if (value !== undefined) observe(value)
    },
  }
}

/** A counter whose label values are the keys of a snapshot part (`{ cause: count }`), every key observed. */
function labelled(name: string, unit: string, description: string, key: SnapshotKey, label: string): MetricSpec {
  return {
    name, kind: 'counter', unit, description,
    read: (snapshot, observe) => {
      const counts = part(snapshot, key)
      if (counts === undefined) return
      for (const [value, count] of Object.entries(counts)) {
        if (typeof count === 'number') observe(count, { [label]: value })
      }
    },
  }
}

/** One field of every mount's mirror target pace (engine/mirror/target-pace.ts), labelled by mount. */
function mirrorTarget(name: string, kind: MetricKind, unit: string, description: string, fieldName: string): MetricSpec {
  return {
    name, kind, unit, description,
    read: (snapshot, observe) => {
      const mounts = part(snapshot, SNAPSHOT_KEYS.mirrorTarget)
      for (const mount of Object.keys(mounts ?? {})) {
        const value = numberAt(objectAt(mounts, mount), fieldName)
        if (value !== undefined) observe(value, { mount })
      }
    },
  }
}

const GATE = SNAPSHOT_KEYS.admissionMemory
const READ_BUFFERS = SNAPSHOT_KEYS.artifactReadBuffers
const CREDENTIAL = SNAPSHOT_KEYS.credential
/** SPEC.md 5.5 provider labels, and the refresh results (engine/upstream/credentials/credential-counters.ts). */
const CREDENTIAL_PROVIDERS = ['registry', 'managedRepo', 'selfHosted'] as const
const REFRESH_RESULTS = ['success', 'failure'] as const
const PUBLISH = SNAPSHOT_KEYS.publish
/** The target's status classes a relay is counted under (engine/publish/publish-counters.ts). */
const PUBLISH_STATUS_CLASSES = ['2xx', '4xx', '5xx'] as const
/** The codes the publish route refuses with (server/routes/publish-route.ts); another code gets its series when it first happens. */
const PUBLISH_REFUSALS = [
  'BAD_PACKAGE_NAME', 'PUBLISH_OUTSIDE_SCOPES', 'PUBLISH_NAME_MISMATCH', 'PUBLISH_SHADOWS_PUBLIC', 'PUBLISH_PUBLIC_UNAVAILABLE',
  'PUBLISH_BODY_TOO_LARGE', 'PUBLISH_DOCUMENT_INVALID', 'PUBLISH_METADATA_CHANGE', 'PUBLISH_TARGET_UNAVAILABLE', 'GATE_SHED',
] as const
const CACHE = SNAPSHOT_KEYS.metadataCache
const CACHE_RESULTS = ['hit', 'miss', 'collapsed'] as const
const CACHE_STORES = ['full', 'version', 'assembled'] as const
type CacheStore = (typeof CACHE_STORES)[number]

function cacheStore(snapshot: RoleSnapshot, store: CacheStore): Numbers | undefined {
  return objectAt(part(snapshot, CACHE), store)
}

function cacheRequests(name: string, store: CacheStore, what: string): MetricSpec {
  return {
    name, kind: 'counter', unit: '{request}',
    description: `${what} store requests by result: hit uses a retained value, miss leads a fetch or render, collapsed joins a leader`,
    read: (snapshot, observe) => {
      const counts = cacheStore(snapshot, store)
      if (counts === undefined) return
      for (const result of CACHE_RESULTS) observe(numberAt(counts, result) ?? 0, { result })
    },
  }
}

function cacheResident(name: string, store: CacheStore, what: string): MetricSpec {
  return {
    name, kind: 'gauge', unit: 'By',
    description: `accounted bytes of the ${what} store after insertion, eviction and expiry`,
    read: (snapshot, observe) => {
      const counts = cacheStore(snapshot, store)
      if (counts !== undefined) observe(numberAt(counts, 'residentBytes') ?? 0)
    },
  }
}

/** A gauge of seconds per ecosystem, named as the role snapshot part it reads. */
function ageByEcosystem(key: SnapshotKey, description: string): MetricSpec {
  return {
    name: key, kind: 'gauge', unit: 's', description,
    read: (snapshot, observe) => {
      const ages = part(snapshot, key)
      if (ages === undefined) return
      for (const [ecosystem, age] of Object.entries(ages)) if (typeof age === 'number') observe(age, { ecosystem })
    },
  }
}

export const METRIC_CATALOG: readonly MetricSpec[] = Object.freeze([
  // Metadata cache (SPEC.md 6.3 "Cache semantics").
  cacheRequests('service.metadata_cache.requests', 'full', 'full-document'),
  cacheRequests('service.metadata_cache.version.requests', 'version', 'selected-version'),
  cacheRequests('service.metadata_cache.assembled.requests', 'assembled', 'assembled-response'),
  {
    name: 'service.metadata_cache.refused', kind: 'counter', unit: '{value}',
    description: 'fetched values a store could not retain (capacity refusals or backend failures), by store',
    read: (snapshot, observe) => {
      for (const store of CACHE_STORES) {
        const counts = cacheStore(snapshot, store)
        if (counts !== undefined) observe(numberAt(counts, 'refused') ?? 0, { store })
      }
    },
  },
  cacheResident('service.metadata_cache.resident_bytes', 'full', 'full-document'),
  cacheResident('service.metadata_cache.version.resident_bytes', 'version', 'selected-version'),
  cacheResident('service.metadata_cache.assembled.resident_bytes', 'assembled', 'assembled-response'),
  {
    name: 'service.metadata_cache.entries', kind: 'gauge', unit: '{entry}',
    description: 'entry count of the full-document store',
    read: (snapshot, observe) => {
      const counts = cacheStore(snapshot, 'full')
      if (counts !== undefined) observe(numberAt(counts, 'entries') ?? 0)
    },
  },

  // The artifact relay's large read buffers (engine/upstream/http1/artifact-connection.ts), bounded by the memory plan.
  field('service.artifact.read_buffers.lent', 'gauge', '{buffer}', 'large (512 KiB) artifact read buffers lent to upstream connections now', READ_BUFFERS, 'lent'),
  field('service.artifact.read_buffers.kept', 'gauge', '{buffer}', 'returned large artifact read buffers kept for reuse now (let go after 30 s with none lent)', READ_BUFFERS, 'kept'),
  field('service.artifact.read_buffers.limit', 'gauge', '{buffer}', 'the most large artifact read buffers lent at once (the memory plan\'s artifactRelay.largeReadBuffers)', READ_BUFFERS, 'limit'),

  // Memory admission gate (SPEC.md 8.1).
  field('service.serve.admission.memory.budget_bytes', 'gauge', 'By', 'current memory budget of the admission gate', GATE, 'budgetBytes'),
  field('service.serve.admission.memory.charged_bytes', 'gauge', 'By', 'bytes held by requests in flight', GATE, 'chargedBytes'),
  field('service.serve.admission.memory.brake_level', 'gauge', '1', 'memory brake level: 0 calm, 1 holding, 2 braking', GATE, 'brakeLevel'),
  field('service.serve.admission.memory.waiting', 'gauge', '{request}', 'new requests waiting at the gate now', GATE, 'waiting'),
  field('service.serve.admission.memory.paused_now', 'gauge', '{request}', 'started requests paused now', GATE, 'pausedNow'),
  field('service.serve.admission.memory.queued', 'counter', '{request}', 'requests that waited for their entry step', GATE, 'queued'),
  field('service.serve.admission.memory.shed', 'counter', '{request}', 'requests refused at the gate', GATE, 'shed'),
  field('service.serve.admission.memory.pauses', 'counter', '{pause}', 'times a started request paused', GATE, 'pauses'),
  field('service.serve.admission.memory.overdraws', 'counter', '{step}', 'steps taken past the budget', GATE, 'overdraws'),

  // Advisory data freshness (SPEC.md 3.5, 6.3).
  ageByEcosystem(SNAPSHOT_KEYS.advisorySourceAge, 'age of the serving advisory push, by ecosystem; absent before the first sync'),
  ageByEcosystem(SNAPSHOT_KEYS.advisoryDatabaseAge, 'age of the serving advisory database since its compile, by ecosystem; nothing while no artifact has loaded'),
  {
    name: SNAPSHOT_KEYS.pilotRefreshAge, kind: 'gauge', unit: 's',
    description: 'Pilot: seconds since the last refresh of each source (osv: a published compile; epss: one that read the EPSS feed), by source and ecosystem; absent before this Pilot\'s first',
    read: (snapshot, observe) => {
      const ages = part(snapshot, SNAPSHOT_KEYS.pilotRefreshAge)
      for (const source of ['osv', 'epss']) {
        for (const [ecosystem, age] of Object.entries(objectAt(ages, source) ?? {})) if (typeof age === 'number') observe(age, { source, ecosystem })
      }
    },
  },

  // Upstream credentials (SPEC.md 5.5): the role's 'service.credential' part
  // is `{ refresh: { '<provider>.<result>': n }, ttlSeconds: { <provider>: s } }`.
  {
    name: 'service.credential.token.ttl.seconds', kind: 'gauge', unit: 's',
    description: 'shortest remaining lifetime among observed expiring credentials, by provider; whole seconds, zero when expired',
    read: (snapshot, observe) => {
      const ttl = objectAt(part(snapshot, CREDENTIAL), 'ttlSeconds')
      if (ttl === undefined) return
      for (const [provider, seconds] of Object.entries(ttl)) if (typeof seconds === 'number') observe(seconds, { provider })
    },
  },
  {
    name: 'service.credential.refresh', kind: 'counter', unit: '{refresh}',
    description: 'completed credential refresh attempts by provider and result',
    read: (snapshot, observe) => {
      const refresh = objectAt(part(snapshot, CREDENTIAL), 'refresh')
      if (refresh === undefined) return
      // Every provider label and result from boot, so a rate alert never starts from a missing series.
      for (const provider of CREDENTIAL_PROVIDERS) {
        for (const result of REFRESH_RESULTS) observe(numberAt(refresh, `${provider}.${result}`) ?? 0, { provider, result })
      }
    },
  },

  // Publish relay (SPEC.md 4.3): the role's 'service.publish' part is
  // `{ relayed: { '2xx': n }, refused: { <error code>: n } }`.
  {
    name: PUBLISH, kind: 'counter', unit: '{request}',
    description: 'publish requests: relayed, by the target status class, or refused, by error code',
    read: (snapshot, observe) => {
      const publish = part(snapshot, PUBLISH)
      if (publish === undefined) return
      const relayed = objectAt(publish, 'relayed') ?? {}
      const refused = objectAt(publish, 'refused') ?? {}
      // The known label values from boot, then any other that happened.
      for (const reason of new Set([...PUBLISH_STATUS_CLASSES, ...Object.keys(relayed)])) observe(numberAt(relayed, reason) ?? 0, { result: 'relayed', reason })
      for (const reason of new Set([...PUBLISH_REFUSALS, ...Object.keys(refused)])) observe(numberAt(refused, reason) ?? 0, { result: 'refused', reason })
    },
  },

  // Upstream metadata reads (SPEC.md 6.2), mirror jobs (SPEC.md 6.1).
  labelled('service.upstream.fetch.errors', '{error}', 'failed upstream metadata reads by cause', SNAPSHOT_KEYS.upstreamFetchErrors, 'cause'),
  labelled('service.mirror.jobs.processed', '{job}', 'mirror jobs by result, including discarded', SNAPSHOT_KEYS.mirrorJobsProcessed, 'result'),
  labelled('service.packument.versions.dropped', '{version}', 'versions dropped from a packument as unreadable or inconsistent, by reason', SNAPSHOT_KEYS.packumentVersionsDropped, 'reason'),
  // Revalidation of retained packument answers (issue 17 item 2): not_modified costs no read and no parse.
  labelled('service.packument.kept_documents', '{document}', 'kept upstream documents (docs/cache.md "Kept upstream documents"), by result: revalidated (a 304 let the kept body serve the render), replaced, written, corrupt (discarded, never served), evicted (byte bound), failed', SNAPSHOT_KEYS.keptDocuments, 'result'),
  labelled('service.packument.revalidations', '{revalidation}', 'retained packument answers checked again, by result: not_modified (every upstream answered 304, nothing read or parsed), modified, failed (rendered again), regated (a quarantine ended or the advisory push expired: rendered again), stale_served (requests served while one ran behind them)', SNAPSHOT_KEYS.packumentRevalidations, 'result'),
  // The mirror queue (issues 12 and 30): what the proxy's enqueue buffer did with each job and holds now, and what the embedded queue refused or dropped.
  {
    name: 'service.mirror.enqueue', kind: 'counter', unit: '{job}',
    description: 'mirror jobs handed to the enqueue buffer, by outcome (recent: its artifact held or enqueued within queue.enqueueMemorySeconds; dropped: the buffer full, over the 8 KiB bound, or held at shutdown; failed: refused by the queue for good)',
    read: (snapshot, observe) => {
      const stats = part(snapshot, SNAPSHOT_KEYS.mirrorEnqueue)
      if (stats === undefined) return
      for (const outcome of ['sent', 'deduplicated', 'recent', 'dropped', 'failed']) observe(numberAt(stats, outcome) ?? 0, { outcome })
    },
  },
  field('service.mirror.enqueue.retries', 'counter', '{job}', 'mirror jobs put back in the enqueue buffer after a send the queue refused for a reason that can pass (counted at each try)', SNAPSHOT_KEYS.mirrorEnqueue, 'retried'),
  field('service.mirror.enqueue.backlog', 'gauge', '{job}', 'mirror jobs the enqueue buffer holds now (waiting for the queue, being sent, or to be sent again)', SNAPSHOT_KEYS.mirrorEnqueue, 'buffered'),
  field('service.mirror.enqueue.backlog_bytes', 'gauge', 'By', 'what those jobs are charged against queue.enqueueBufferBytes; /readyz answers 503 past half of it', SNAPSHOT_KEYS.mirrorEnqueue, 'bufferedBytes'),
  {
    name: 'service.mirror.queue.dropped', kind: 'counter', unit: '{job}',
    description: 'mirror jobs the embedded queue refused or dropped, by reason',
    read: (snapshot, observe) => {
      const stats = part(snapshot, SNAPSHOT_KEYS.mirrorQueue)
      if (stats === undefined) return
      observe(numberAt(stats, 'refusedTooLarge') ?? 0, { reason: 'too_large' })
      observe(numberAt(stats, 'droppedFull') ?? 0, { reason: 'full' })
      observe(numberAt(stats, 'droppedAtReplay') ?? 0, { reason: 'replay' })
      observe(numberAt(stats, 'deadLettersDropped') ?? 0, { reason: 'dead_letter_full' })
    },
  },
  field('service.mirror.queue.jobs', 'gauge', '{job}', 'mirror jobs pending in the embedded queue', SNAPSHOT_KEYS.mirrorQueue, 'jobs'),
  // Each mirror target's pace (issues 29, 30): jobs at once, outage pauses, slow answers; by mount.
  mirrorTarget('service.mirror.target.concurrency', 'gauge', '{job}', 'mirror jobs the target is asked for at once now (halved on slow answers and failures, at most the plan\'s mirror concurrency)', 'limit'),
  mirrorTarget('service.mirror.target.paused', 'gauge', '1', '1 while the mirror target does not answer and its jobs are held', 'paused'),
  mirrorTarget('service.mirror.target.pauses', 'counter', '{pause}', 'times the mirror target stopped answering and mirror work paused', 'pauses'),
  mirrorTarget('service.mirror.target.slow_answers', 'counter', '{answer}', 'mirror target lookups answered slower than the slow bound', 'slowAnswers'),
  {
    name: 'service.mirror.manifest.reads', kind: 'counter', unit: '{read}',
    description: 'gated manifests the js mirror worker took from a packument the proxy held (retained, shared) or read from the public upstream (public)',
    read: (snapshot, observe) => {
      const reads = part(snapshot, SNAPSHOT_KEYS.mirrorManifestReads)
      if (reads === undefined) return
      for (const source of ['retained', 'shared', 'public']) observe(numberAt(reads, source) ?? 0, { source })
    },
  },
  // The Dredger (issue 14): removals by inventory and result, every pair from boot.
  {
    name: 'service.dredger.removals', kind: 'counter', unit: '{version}',
    description: 'Dredger removals by inventory and result (removed, absent, failed, withheld_by_cap)',
    read: (snapshot, observe) => {
      const removals = part(snapshot, SNAPSHOT_KEYS.dredgerRemovals)
      if (removals === undefined) return
      for (const inventory of ['mirror_target', 'private_cache']) {
        const counts = objectAt(removals, inventory) ?? {}
        for (const result of ['removed', 'absent', 'failed', 'withheld_by_cap']) observe(numberAt(counts, result) ?? 0, { inventory, result })
      }
    },
  },
  // The policy in force (issue 31): admissions through a waiver by mount, and policy document reloads by result.
  {
    name: 'service.policy.waiver.admissions', kind: 'counter', unit: '{decision}',
    description: 'public versions admitted by a waiver rather than the rules, by ecosystem',
    read: (snapshot, observe) => {
      for (const [ecosystem, count] of Object.entries(objectAt(part(snapshot, SNAPSHOT_KEYS.policy), 'waiverAdmissions') ?? {})) {
        if (typeof count === 'number') observe(count, { ecosystem })
      }
    },
  },
  {
    name: 'service.policy.malware.refusals', kind: 'counter', unit: '{decision}',
    description: 'versions refused because a malicious-package record names them (DenyIfMalicious), by ecosystem and side (public: the public versions of a listing and the public leg; private: the private document and the private leg)',
    read: (snapshot, observe) => {
      for (const [ecosystem, sides] of Object.entries(objectAt(part(snapshot, SNAPSHOT_KEYS.policy), 'malwareRefusals') ?? {})) {
        const counts = typeof sides === 'object' && sides !== null ? sides as Numbers : undefined
        for (const side of ['public', 'private']) observe(numberAt(counts, side) ?? 0, { ecosystem, side })
      }
    },
  },
  {
    name: 'service.policy.signal.withheld', kind: 'counter', unit: '{version}',
    description: 'public versions withheld by a supply-chain signal (install_script_changed: DenyIfInstallScriptChanged, dependency_added: DenyIfDependencyAdded), each counted once, by ecosystem and signal',
    read: (snapshot, observe) => {
      const byMount = objectAt(part(snapshot, SNAPSHOT_KEYS.policy), 'signalWithholdings')
      for (const ecosystem of Object.keys(byMount ?? {})) {
        const counts = objectAt(byMount, ecosystem)
        for (const signal of ['install_script_changed', 'dependency_added']) observe(numberAt(counts, signal) ?? 0, { ecosystem, signal })
      }
    },
  },
  {
    name: 'service.policy.reloads', kind: 'counter', unit: '{reload}',
    description: 'policy document reads after boot, by result (applied, unchanged, refused)',
    read: (snapshot, observe) => {
      const reloads = objectAt(part(snapshot, SNAPSHOT_KEYS.policy), 'reloads')
      if (reloads === undefined) return
      for (const result of ['applied', 'unchanged', 'refused']) observe(numberAt(reloads, result) ?? 0, { result })
    },
  },
  labelled('service.pypi.files', '{file}', 'py project page files dropped, refused for lack of an upload time, or colliding with a private file of another digest, by outcome', SNAPSHOT_KEYS.pypiFiles, 'outcome'),
])
