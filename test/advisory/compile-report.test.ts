import t from 'tap'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { ADVISORY_DATA_AGES, DEFAULT_QUIET_TIME_SECONDS, reportCompileAges, UNRECORDED } from '../../engine/advisory/pilot/compile-report.js'

const NOW = Date.parse('2026-01-10T00:00:00Z')
const DAY = 86400

const base = {
  ecosystem: 'js' as const,
  osvSourceUrl: 'http://127.0.0.1:9000/osv/npm/all.zip',
  epssSourceUrl: 'http://127.0.0.1:9000/epss/feed.csv.gz',
  newestAdvisoryAt: new Date(NOW - 2 * DAY * 1000),
  epssStatus: 'available' as const,
  epssScoreDate: new Date(NOW - 1 * DAY * 1000),
}
const thresholds = { quietTime: DEFAULT_QUIET_TIME_SECONDS, epssQuietTime: DEFAULT_QUIET_TIME_SECONDS, now: NOW }

t.test('fresh data: one info line with both ages, no error', async (t) => {
  const log = new RecordingLogger()
  reportCompileAges(base, thresholds, log)
  t.equal(log.records.length, 1)
  const [info] = log.find(ADVISORY_DATA_AGES)
  t.equal(info?.level, 'info')
  t.match(info?.data, {
    ecosystem: 'js', sourceUrl: base.osvSourceUrl, newestAdvisoryAt: '2026-01-08T00:00:00.000Z',
    newestAdvisoryAgeSeconds: 2 * DAY, epssScoreDate: '2026-01-09T00:00:00.000Z', epssAgeSeconds: DAY,
  })
})

t.test('past the quiet time the line repeats at error with ecosystem, source URL, age and threshold', async (t) => {
  const log = new RecordingLogger()
  reportCompileAges({ ...base, ecosystem: 'py', newestAdvisoryAt: new Date(NOW - 8 * DAY * 1000) }, { ...thresholds, now: new Date(NOW) }, log)
  const errors = log.records.filter((r) => r.level === 'error')
  t.equal(errors.length, 1)
  t.equal(errors[0]?.message, ADVISORY_DATA_AGES)
  t.same(errors[0]?.data, { ecosystem: 'py', source: 'osv', sourceUrl: base.osvSourceUrl, ageSeconds: 8 * DAY, thresholdSeconds: DEFAULT_QUIET_TIME_SECONDS })

  const log2 = new RecordingLogger()
  reportCompileAges({ ...base, epssScoreDate: new Date(NOW - 3 * DAY * 1000) }, { ...thresholds, epssQuietTime: 2 * DAY }, log2)
  const epssErrors = log2.records.filter((r) => r.level === 'error')
  t.same(epssErrors.map((r) => r.data), [{ ecosystem: 'js', source: 'epss', sourceUrl: base.epssSourceUrl, ageSeconds: 3 * DAY, thresholdSeconds: 2 * DAY }])

  const log3 = new RecordingLogger()
  reportCompileAges(base, { quietTime: 60, epssQuietTime: 60, now: NOW }, log3)
  t.equal(log3.records.filter((r) => r.level === 'error').length, 2, 'both past')
  t.equal(log3.records.filter((r) => r.level === 'info').length, 1)
})

t.test('exactly at the threshold is not past it', async (t) => {
  const log = new RecordingLogger()
  reportCompileAges(base, { quietTime: 2 * DAY, epssQuietTime: DAY, now: NOW }, log)
  t.equal(log.records.filter((r) => r.level === 'error').length, 0)
})

t.test('epss_status=unavailable logs no EPSS age, at info or error', async (t) => {
  const log = new RecordingLogger()
  reportCompileAges({ ...base, epssStatus: 'unavailable', epssScoreDate: undefined }, { ...thresholds, epssQuietTime: 0 }, log)
  t.equal(log.records.length, 1)
  t.notOk('epssAgeSeconds' in (log.records[0]?.data ?? {}))
  t.notOk('epssScoreDate' in (log.records[0]?.data ?? {}))
})

t.test('a date never recorded reads <unrecorded> and counts as past its quiet time', async (t) => {
  const log = new RecordingLogger()
  reportCompileAges({ ...base, newestAdvisoryAt: undefined, epssScoreDate: undefined }, thresholds, log)
  t.match(log.records[0]?.data, { newestAdvisoryAt: UNRECORDED, newestAdvisoryAgeSeconds: UNRECORDED, epssAgeSeconds: UNRECORDED })
  t.same(log.records.filter((r) => r.level === 'error').map((r) => [r.data.source, r.data.ageSeconds]), [['osv', UNRECORDED], ['epss', UNRECORDED]])
})
