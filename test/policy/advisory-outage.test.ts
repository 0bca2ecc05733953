import t from 'tap'

import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import {
  AdvisoryOutage, OUTAGE_BEGAN_MESSAGE, OUTAGE_CONTINUES_MESSAGE, OUTAGE_RECOVERED_MESSAGE, OUTAGE_REPEAT_MS,
} from '../../engine/policy/advisory-outage.js'
import type { AdvisoryObservation } from '../../engine/policy/decision.js'

const failing: AdvisoryObservation[] = [{ rule: 'DenyIfCve', cause: 'no_database', detail: 'no advisory database is loaded' }]
const answering: AdvisoryObservation[] = [{ rule: 'DenyIfCve', cause: undefined }]

function setup() {
  const clock = new ManualClock()
  const logger = new RecordingLogger()
  let recovered = 0
  const outage = new AdvisoryOutage({ ecosystem: 'js', logger, clock, onRecovered: () => { recovered++ } })
  return { clock, logger, outage, recovered: () => recovered }
}

t.test('began names ecosystem, rule and cause, once', async (t) => {
  const { logger, outage } = setup()
  t.equal(outage.observe(failing), 'began')
  t.equal(outage.observe(failing), undefined)
  t.equal(outage.inOutage, true)
  const began = logger.find(OUTAGE_BEGAN_MESSAGE)
  t.equal(began.length, 1)
  t.equal(began[0]?.level, 'error')
  t.match(began[0]?.data, { ecosystem: 'js', rule: 'DenyIfCve', cause: 'no_database', detail: 'no advisory database is loaded' })
})

t.test('continues at most every 15 minutes', async (t) => {
  const { clock, logger, outage } = setup()
  outage.observe(failing)
  clock.advance(OUTAGE_REPEAT_MS - 1)
  t.equal(outage.observe(failing), undefined, 'not before 15 minutes')
  clock.advance(1)
  t.equal(outage.observe(failing), 'continues')
  t.equal(outage.observe(failing), undefined)
  clock.advance(OUTAGE_REPEAT_MS * 3)
  t.equal(outage.observe([{ rule: 'DenyIfEpss', cause: 'expired' }]), 'continues', 'once after a long silence, not once per missed slot')
  t.equal(outage.observe(failing), undefined)
  const lines = logger.find(OUTAGE_CONTINUES_MESSAGE)
  t.equal(lines.length, 2)
  t.equal(lines[0]?.level, 'error')
  t.match(lines[1]?.data, { ecosystem: 'js', rule: 'DenyIfEpss', cause: 'expired' })
})

t.test('recovered when every rule reached answers, then a new outage begins afresh', async (t) => {
  const { clock, logger, outage, recovered } = setup()
  t.equal(outage.observe(answering), undefined, 'no outage, nothing to recover')
  outage.observe(failing)
  clock.advance(60_000)
  t.equal(outage.observe([{ rule: 'DenyIfCve', cause: undefined }, { rule: 'DenyIfEpss', cause: 'lookup_fault' }]), undefined,
    'one rule still failing is no recovery')
  t.equal(outage.observe(answering), 'recovered')
  t.equal(recovered(), 1)
  const line = logger.find(OUTAGE_RECOVERED_MESSAGE)
  t.equal(line.length, 1)
  t.equal(line[0]?.level, 'info')
  t.match(line[0]?.data, { ecosystem: 'js', durationSeconds: 60 })
  t.equal(outage.observe(answering), undefined)
  t.equal(outage.observe(failing), 'began')
  t.equal(logger.find(OUTAGE_BEGAN_MESSAGE).length, 2)
})

t.test('a decision that reached no advisory rule changes nothing', async (t) => {
  const { logger, outage } = setup()
  t.equal(outage.observe([]), undefined)
  outage.observe(failing)
  t.equal(outage.observe([]), undefined, 'traffic alone neither recovers nor repeats')
  t.equal(outage.inOutage, true)
  t.equal(logger.records.length, 1)
})
