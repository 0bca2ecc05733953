import t from 'tap'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { DroppedVersionRecord, PUBLIC_VERSION_DROPPED } from '../../engine/packument/dropped-versions.js'

t.test('dropped versions: counted every time, logged at warn once per package, version and reason', async (t) => {
  const logger = new RecordingLogger()
  const record = new DroppedVersionRecord({ logger, ecosystem: 'js' })
  const listed = [{ version: '01.0.0', reason: 'alias_key' as const }, { version: '2.0.0', reason: 'name_mismatch' as const }]
  record.record('p', listed, 2)
  record.record('p', listed, 5)
  const lines = logger.find(PUBLIC_VERSION_DROPPED)
  t.equal(lines.length, 2, 'one line each, not one per request')
  t.ok(lines.every((l) => l.level === 'warn'))
  t.match(lines[0]?.data, { ecosystem: 'js', package: 'p', version: '01.0.0', reason: 'alias_key' })
  t.same(record.snapshot(), { unreadable_key: 0, alias_key: 2, name_mismatch: 2, version_mismatch: 0, unlisted: 3 })
})
