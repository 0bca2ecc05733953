import t from 'tap'
import {
  BOOT_RETRY_DELAYS_MS, NO_ARTIFACT_REPEAT_MS, PILOT_NO_ARTIFACT, PILOT_RUN_INTERVAL_MS, PilotSchedule,
} from '../../engine/advisory/pilot/pilot-schedule.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const MINUTE = 60_000

t.test('a run that publishes every ecosystem schedules the next in an hour', async (t) => {
  const clock = new ManualClock()
  const logger = new RecordingLogger()
  const schedule = new PilotSchedule({ ecosystems: ['js', 'py'], store: 'embedded:/var/store', clock, logger })
  t.equal(schedule.afterRun(['js', 'py']), PILOT_RUN_INTERVAL_MS)
  t.equal(schedule.afterRun([]), PILOT_RUN_INTERVAL_MS, 'a later failed run does not start the boot budget again')
  t.same(logger.records, [])
})

t.test('the boot retry budget, then the ERROR every 15 minutes while an ecosystem has no artifact', async (t) => {
  const clock = new ManualClock()
  const logger = new RecordingLogger()
  const schedule = new PilotSchedule({ ecosystems: ['js', 'py'], store: 'embedded:/var/store', clock, logger })
  const delays: number[] = []
  // js publishes on the first run; py never does.
  delays.push(schedule.afterRun(['js']))
  for (let i = 0; i < BOOT_RETRY_DELAYS_MS.length - 1; i++) {
    clock.advance(delays.at(-1)!)
    delays.push(schedule.afterRun([]))
  }
  t.same(delays, BOOT_RETRY_DELAYS_MS, 'retries after 30 s, 1, 2 and 4 minutes')
  t.same(logger.find(PILOT_NO_ARTIFACT), [], 'no alarm within the budget')

  clock.advance(delays.at(-1)!)
  t.equal(schedule.afterRun([]), NO_ARTIFACT_REPEAT_MS, 'budget spent: runs every 15 minutes')
  const alarms = logger.find(PILOT_NO_ARTIFACT)
  t.equal(alarms.length, 1)
  t.equal(alarms[0]?.level, 'error')
  t.same(alarms[0]?.data, { role: 'pilot', store: 'embedded:/var/store', ecosystems: ['py'], runs: 5, sinceSeconds: 450 })

  clock.advance(5 * MINUTE)
  schedule.afterRun([])
  t.equal(logger.find(PILOT_NO_ARTIFACT).length, 1, 'not within 15 minutes')
  clock.advance(10 * MINUTE)
  schedule.afterRun([])
  t.equal(logger.find(PILOT_NO_ARTIFACT).length, 2, 'repeated at 15 minutes')

  clock.advance(15 * MINUTE)
  t.equal(schedule.afterRun(['py']), PILOT_RUN_INTERVAL_MS, 'once published, hourly')
  t.same(schedule.missing(), [])
  clock.advance(60 * MINUTE)
  schedule.afterRun([])
  t.equal(logger.find(PILOT_NO_ARTIFACT).length, 2, 'no alarm once every ecosystem was published')
})
