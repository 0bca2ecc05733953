/**
 * Each SPEC.md 6.3 metric moves when its cause happens and not otherwise:
 * the real admission gate, metadata cache, mirror and fetch counters read
 * through the instrument layer and the Prometheus listener, one cause at a
 * time, the whole exposition compared before and after.
 */
import t from 'tap'
import { DredgerCounters } from '../../engine/dredger/dredger-counters.js'
import { request } from 'undici'
import { MetadataCache, selectedVersionKey } from '../../engine/cache/metadata-cache.js'
import { AdmissionGate } from '../../engine/memory/gate.js'
import { MiB } from '../../engine/memory/plan.js'
import { MirrorCounters } from '../../engine/mirror/mirror-counters.js'
import { PublishCounters } from '../../engine/publish/publish-counters.js'
import { startTelemetry } from '../../engine/telemetry/otel-telemetry.js'
import { CredentialCounters } from '../../engine/upstream/credentials/credential-counters.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { ManualTimers } from '../doubles/manual-timers.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { freePort } from '../helpers/ports.js'

/** Every sample line (histograms and target_info aside) as series -> value. */
function samples(exposition: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#') || line.trim() === '' || line.startsWith('target_info') || line.startsWith('http_')) continue
    const at = line.lastIndexOf(' ')
    out.set(line.slice(0, at).replace(/,?otel_scope_\w+="[^"]*"/g, '').replace('{,', '{').replace(/\{\}$/, ''), Number(line.slice(at + 1)))
  }
  return out
}

function changes(before: Map<string, number>, after: Map<string, number>): Record<string, [number | undefined, number | undefined]> {
  const out: Record<string, [number | undefined, number | undefined]> = {}
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    if (before.get(key) !== after.get(key)) out[key] = [before.get(key), after.get(key)]
  }
  return out
}

t.test('one cause, one move', async (t) => {
  const gate = new AdmissionGate({ budgetBytes: 10 * MiB, maxInFlight: 1, waitingRoom: 1, timers: new ManualTimers() })
  const cache = new MetadataCache<{ tarball: string }>({ maxBytes: 10_000, maxEntries: 100, clock: new ManualClock(), selectedVersionSize: (v) => v.tarball.length })
  const mirror = new MirrorCounters()
  const fetchErrors = new UpstreamFetchCounters()
  const ages: Record<string, number> = {}
  const databaseAges: Record<string, number> = {}
  const clock = new ManualClock()
  const credentials = new CredentialCounters(clock)
  const publish = new PublishCounters()
  const enqueue = { sent: 0, deduplicated: 0, recent: 0, dropped: 0, failed: 0, retried: 0, buffered: 0, bufferedBytes: 0, maxBytes: 8 * MiB }
  const queueStats = { jobs: 0, refusedTooLarge: 0, droppedFull: 0, droppedAtReplay: 0, deadLettersDropped: 0 }
  const dredger = new DredgerCounters()

  const port = await freePort()
  const telemetry = await startTelemetry({
    identity: { service: 's', env: 'e', version: '1', host: 'h' },
    env: { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: String(port), OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' },
    logger: new RecordingLogger(),
    role: 'proxy',
  })
  t.teardown(() => telemetry.shutdown())
  t.equal(await telemetry.prometheusPort, port)
  telemetry.observeRole(() => ({
    'service.serve.admission.memory': gate.snapshot(),
    'service.metadata_cache': cache.snapshot(),
    'service.mirror.jobs.processed': mirror.snapshot(),
    'service.upstream.fetch.errors': fetchErrors.snapshot(),
    'service.advisory.source.age.seconds': { ...ages },
    'service.advisory.database.age.seconds': { ...databaseAges },
    'service.credential': credentials.snapshot(),
    'service.publish': publish.snapshot(),
    'service.mirror.enqueue': { ...enqueue },
    'service.mirror.queue': { ...queueStats },
    'service.dredger.removals': dredger.snapshot(),
  }))
  const scrape = async (): Promise<Map<string, number>> => samples(await (await request(`http://127.0.0.1:${port}/metrics`)).body.text())

  let before = await scrape()
  t.same(changes(before, await scrape()), {}, 'nothing happened, nothing moves')
  t.equal(before.get('service_credential_refresh_total{provider="managedRepo",result="failure"}'), 0, 'credential refresh series exist from boot')
  t.equal(before.get('service_publish_total{result="relayed",reason="2xx"}'), 0, 'publish series exist from boot')
  t.equal(before.get('service_publish_total{result="refused",reason="PUBLISH_SHADOWS_PUBLIC"}'), 0)

  const key = selectedVersionKey('js', 'left-pad', 'left-pad-1.3.0.tgz')
  const load = async () => ({ tarball: 'https://upstream.test/left-pad-1.3.0.tgz' })
  await cache.version.load(key, load)
  let after = await scrape()
  t.same(changes(before, after), {
    'service_metadata_cache_version_requests_total{result="miss"}': [0, 1],
    'service_metadata_cache_version_resident_bytes': [0, cache.snapshot().version.residentBytes],
  }, 'a miss leads a fetch and the retained bytes are accounted after insertion')
  before = after
  await cache.version.load(key, load)
  after = await scrape()
  t.same(changes(before, after), { 'service_metadata_cache_version_requests_total{result="hit"}': [0, 1] }, 'a cache hit moves the hit counter only')

  before = after
  const first = await gate.enter()
  const waiting = gate.enter()
  after = await scrape()
  t.ok(gate.snapshot().chargedBytes > 0, 'the entry step charges')
  t.same(changes(before, after), {
    'service_serve_admission_memory_charged_bytes': [0, gate.snapshot().chargedBytes],
    'service_serve_admission_memory_waiting': [0, 1],
    'service_serve_admission_memory_queued_total': [0, 1],
  }, 'one request admitted (its entry charge held), one waiting at the gate')
  before = after
  await t.rejects(gate.enter(), { code: 'GATE_SHED' })
  after = await scrape()
  t.same(changes(before, after), { 'service_serve_admission_memory_shed_total': [0, 1] }, 'a shed moves the shed counter only')
  first.release()
  ;(await waiting).release()

  before = await scrape()
  gate.setBrakeLevel(2)
  after = await scrape()
  t.same(changes(before, after), { 'service_serve_admission_memory_brake_level': [0, 2] }, 'a brake level change')

  before = after
  ages['js'] = 42
  databaseAges['js'] = 3600
  after = await scrape()
  t.same(changes(before, after), {
    'service_advisory_source_age_seconds{ecosystem="js"}': [undefined, 42],
    'service_advisory_database_age_seconds{ecosystem="js"}': [undefined, 3600],
  }, 'an advisory swap: both ages appear with the first serving artifact, nothing before')

  before = after
  mirror.record('mirrored')
  after = await scrape()
  t.same(changes(before, after), { 'service_mirror_jobs_processed_total{result="mirrored"}': [0, 1] }, 'a mirror job')

  before = after
  credentials.refreshed('managedRepo', 'success')
  credentials.observeExpiry('managedRepo', {}, clock.now() + 90_500)
  after = await scrape()
  t.same(changes(before, after), {
    'service_credential_refresh_total{provider="managedRepo",result="success"}': [0, 1],
    'service_credential_token_ttl_seconds{provider="managedRepo"}': [undefined, 90],
  }, 'a credential refresh, and the ttl of the credential it minted in whole seconds')
  before = after
  clock.advance(100_000)
  after = await scrape()
  t.same(changes(before, after), { 'service_credential_token_ttl_seconds{provider="managedRepo"}': [90, 0] }, 'an expired credential reads zero')

  before = after
  publish.relayed(201)
  publish.refused('PUBLISH_OUTSIDE_SCOPES')
  publish.refused('EDGE_UNAUTHORIZED')
  after = await scrape()
  t.same(changes(before, after), {
    'service_publish_total{result="relayed",reason="2xx"}': [0, 1],
    'service_publish_total{result="refused",reason="PUBLISH_OUTSIDE_SCOPES"}': [0, 1],
    'service_publish_total{result="refused",reason="EDGE_UNAUTHORIZED"}': [undefined, 1],
  }, 'a relayed publish by status class, refusals by code (an unlisted code gets its series when it happens)')

  before = after
  fetchErrors.increment('timeout')
  after = await scrape()
  t.same(changes(before, after), { 'service_upstream_fetch_errors_total{cause="timeout"}': [0, 1] }, 'an upstream fetch error by cause')

  t.equal(after.get('service_mirror_enqueue_total{outcome="dropped"}'), 0, 'enqueue series exist from boot')
  t.equal(after.get('service_mirror_enqueue_total{outcome="recent"}'), 0)
  t.equal(after.get('service_mirror_enqueue_retries_total'), 0)
  t.equal(after.get('service_mirror_enqueue_backlog'), 0)
  t.equal(after.get('service_mirror_enqueue_backlog_bytes'), 0)
  t.equal(after.get('service_dredger_removals_total{inventory="private_cache",result="withheld_by_cap"}'), 0, 'removal series exist from boot')
  before = after
  enqueue.dropped++
  queueStats.refusedTooLarge++
  queueStats.jobs = 3
  dredger.record('mirror_target', 'removed')
  after = await scrape()
  t.same(changes(before, after), {
    'service_mirror_enqueue_total{outcome="dropped"}': [0, 1],
    'service_mirror_queue_dropped_total{reason="too_large"}': [0, 1],
    'service_mirror_queue_jobs': [0, 3],
    'service_dredger_removals_total{inventory="mirror_target",result="removed"}': [0, 1],
  }, 'a dropped enqueue, a job the queue refused, the pending count, a Dredger removal')
})
