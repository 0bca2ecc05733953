import t from 'tap'

import { isServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { Decision, SkippedCheck, VersionFacts } from '../../engine/policy/decision.js'
import {
  ADMITTED_WITH_SKIPPED_CHECK_MESSAGE, SKIPPED_CHECK_RECORD_CAPACITY, SkippedCheckRecord,
} from '../../engine/policy/skipped-check-record.js'

function facts(name: string, version = '1.0.0'): VersionFacts {
  return { ecosystem: 'js', name, version, publishedAt: undefined }
}

function admitted(skipped: SkippedCheck[], verdict: Decision['verdict'] = 'admit'): Decision {
  return { verdict, rule: 'AllowIfOlderThan', ruleIndex: 1, reason: 'quarantine', evidence: [], skipped, advisory: [] }
}

const cve: SkippedCheck[] = [{ rule: 'DenyIfCve', cause: 'no_database' }]

t.test('warns once per package, version and skipped rule set', async (t) => {
  const logger = new RecordingLogger()
  const record = new SkippedCheckRecord({ ecosystem: 'js', logger })
  t.equal(record.admitted(facts('a'), admitted(cve)), true)
  t.equal(record.admitted(facts('a'), admitted(cve)), false, 'same identity')
  t.equal(record.admitted(facts('a', '1.0.1'), admitted(cve)), true, 'another version')
  t.equal(record.admitted(facts('a'), admitted([...cve, { rule: 'DenyIfEpss', cause: 'no_database' }])), true, 'another rule set')
  t.equal(record.admitted(facts('a'), admitted([{ rule: 'DenyIfEpss', cause: 'breaker_open' }, { rule: 'DenyIfCve', cause: 'breaker_open' }])), false,
    'the same set in another order and cause')
  const lines = logger.find(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE)
  t.equal(lines.length, 3)
  t.equal(lines[0]?.level, 'warn')
  t.same(lines[0]?.data, { ecosystem: 'js', package: 'a', version: '1.0.0', rule: 'DenyIfCve', cause: 'no_database' })
  t.match(lines[2]?.data, { rule: 'DenyIfCve,DenyIfEpss' })
})

t.test('only admissions with skipped checks are recorded', async (t) => {
  const logger = new RecordingLogger()
  const record = new SkippedCheckRecord({ ecosystem: 'js', logger })
  t.equal(record.admitted(facts('a'), admitted([])), false)
  t.equal(record.admitted(facts('a'), admitted(cve, 'deny')), false)
  t.equal(record.size, 0)
  t.equal(logger.records.length, 0)
})

t.test('clear (the source recovered) warns afresh', async (t) => {
  const logger = new RecordingLogger()
  const record = new SkippedCheckRecord({ ecosystem: 'js', logger })
  record.admitted(facts('a'), admitted(cve))
  record.clear()
  t.equal(record.size, 0)
  t.equal(record.admitted(facts('a'), admitted(cve)), true)
})

t.test(`holds ${SKIPPED_CHECK_RECORD_CAPACITY} identities and forgets the oldest`, async (t) => {
  t.equal(SKIPPED_CHECK_RECORD_CAPACITY, 4096)
  const logger = new RecordingLogger()
  const record = new SkippedCheckRecord({ ecosystem: 'js', logger })
  for (let i = 0; i < SKIPPED_CHECK_RECORD_CAPACITY; i++) record.admitted(facts(`p${i}`), admitted(cve))
  t.equal(record.size, SKIPPED_CHECK_RECORD_CAPACITY)
  t.equal(record.admitted(facts('p1'), admitted(cve)), false, 'still held')
  t.equal(record.admitted(facts('new'), admitted(cve)), true)
  t.equal(record.size, SKIPPED_CHECK_RECORD_CAPACITY, 'bounded')
  t.equal(record.admitted(facts('p0'), admitted(cve)), true, 'the oldest was forgotten and warns again')
  t.equal(record.admitted(facts('p2'), admitted(cve)), false, 'newer ones are kept')
})

t.test('the capacity is guarded', async (t) => {
  let code: string | undefined
  try { new SkippedCheckRecord({ ecosystem: 'js', logger: new RecordingLogger(), capacity: 0 }) } catch (e) { code = isServiceError(e) ? e.code : 'other' }
  t.equal(code, 'CONFIG_INVALID')
})
