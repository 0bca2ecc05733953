/**
 * Issue 31 item 4: Pilot runs every `advisories.pilotIntervalSeconds` once
 * every ecosystem is published, and exports the age of its last OSV and EPSS
 * refresh (`service.pilot.refresh.age.seconds{source,ecosystem}`).
 */
import t from 'tap'
import { PILOT_RUN_INTERVAL_MS, PilotSchedule } from '../../engine/advisory/pilot/pilot-schedule.js'
import { RefreshAges } from '../../engine/advisory/pilot/refresh-ages.js'
import type { CompileSummary } from '../../engine/advisory/pilot/compile.js'
import { METRIC_CATALOG } from '../../engine/telemetry/metric-catalog.js'
import { SNAPSHOT_KEYS } from '../../engine/telemetry/snapshot-keys.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

t.test('the run interval once every ecosystem is published: configured, else an hour', async (t) => {
  const clock = new ManualClock()
  const every15 = new PilotSchedule({ ecosystems: ['js'], store: 'embedded:/s', clock, logger: new RecordingLogger(), intervalMs: 900_000 })
  t.equal(every15.afterRun(['js']), 900_000)
  const unset = new PilotSchedule({ ecosystems: ['js'], store: 'embedded:/s', clock, logger: new RecordingLogger() })
  t.equal(unset.afterRun(['js']), PILOT_RUN_INTERVAL_MS)
  t.equal(PILOT_RUN_INTERVAL_MS, 3_600_000, 'the documented default of advisories.pilotIntervalSeconds')
})

t.test('refresh ages by source and ecosystem, exported as a gauge', async (t) => {
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
  const ages = new RefreshAges(clock)
  t.same(ages.ages(), { osv: {}, epss: {} }, 'nothing before the first refresh')
  ages.published({ ecosystem: 'js', epssStatus: 'available' } as CompileSummary)
  clock.advance(60_000)
  ages.published({ ecosystem: 'py', epssStatus: 'unavailable' } as CompileSummary)
  clock.advance(30_500)
  t.same(ages.ages(), { osv: { js: 90, py: 30 }, epss: { js: 90 } }, 'an EPSS outage does not refresh EPSS')

  const spec = METRIC_CATALOG.find((m) => m.name === 'service.pilot.refresh.age.seconds')
  t.equal(spec?.kind, 'gauge')
  const seen: Array<[number, unknown]> = []
  spec?.read({ [SNAPSHOT_KEYS.pilotRefreshAge]: ages.ages() }, (value, attributes) => seen.push([value, attributes]))
  t.same(seen, [[90, { source: 'osv', ecosystem: 'js' }], [30, { source: 'osv', ecosystem: 'py' }], [90, { source: 'epss', ecosystem: 'js' }]])
})

t.test('service.policy.malware.refusals reads every side of every mount', async (t) => {
  const spec = METRIC_CATALOG.find((m) => m.name === 'service.policy.malware.refusals')
  const seen: Array<[number, unknown]> = []
  spec?.read({ [SNAPSHOT_KEYS.policy]: { malwareRefusals: { js: { public: 2, private: 1 }, py: { public: 0, private: 0 } } } }, (value, attributes) => seen.push([value, attributes]))
  t.same(seen, [
    [2, { ecosystem: 'js', side: 'public' }], [1, { ecosystem: 'js', side: 'private' }],
    [0, { ecosystem: 'py', side: 'public' }], [0, { ecosystem: 'py', side: 'private' }],
  ])
})
