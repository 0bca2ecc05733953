import t from 'tap'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { ManualClock } from '../doubles/manual-clock.js'
import type { Config, MountConfig } from '../../engine/config/config.js'
import type { MountKey } from '../../engine/config/schema.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { MOUNT_STATE, Readiness } from '../../server/health/readiness.js'
import { attachAdvisoryConsumers, readsAdvisories } from '../../server/roles/advisory-wiring.js'
import { artifact, tempStore } from './artifacts.js'

function mount(key: MountKey, rules: RuleConfig[]): MountConfig {
  return { key, upstreams: { private: undefined, public: undefined }, publish: undefined, mirror: undefined, integrityFloor: 'sha512', privateHidesPublic: true, rules }
}

function config(mounts: Partial<Record<MountKey, MountConfig>>, maxAgeSeconds = 0): Pick<Config, 'advisories' | 'mounts'> {
  return {
    advisories: { osvExportBaseUrl: undefined, epssFeedUrl: undefined, maxAgeSeconds, quietTime: { js: 604800, py: 604800 }, epssQuietTime: 604800, pollIntervalSeconds: 60, pilotIntervalSeconds: 3600 },
    mounts,
  }
}

t.test('readsAdvisories', async (t) => {
  t.ok(readsAdvisories([{ rule: 'DenyIfCve' }]))
  t.ok(readsAdvisories([{ rule: 'DenyIfEpss', threshold: 0.5 }]))
  t.ok(readsAdvisories([{ rule: 'AllowIfRemediatesCve' }]))
  t.notOk(readsAdvisories([{ rule: 'AllowIfOlderThan', seconds: 1 }, { rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }]))
})

t.test('one consumer per mount that reads the database; first accepted generation marks the mount ready', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const { store } = await tempStore(t, clock)
  const readiness = new Readiness()
  const cfg = config({
    js: mount('js', [{ rule: 'DenyIfEpss', threshold: 0.5 }, { rule: 'AllowIfOlderThan', seconds: 7 * 86400 }]),
    py: mount('py', [{ rule: 'AllowIfRemediatesCve' }, { rule: 'AllowIfOlderThan', seconds: 86400 }]),
  })
  readiness.addMount('js', true)
  readiness.addMount('py', false)
  readiness.markStarted()
  const jsSlot = new AdvisorySlot()
  const slots = new Map<MountKey, AdvisorySlot>([['js', jsSlot]])
  const wired = attachAdvisoryConsumers({ config: cfg, logger, clock, readiness, slots, store, start: false })
  t.teardown(() => wired.stop())

  t.same([...wired.consumers.keys()].sort(), ['js', 'py'], 'AllowIfRemediatesCve reads the database too')
  t.equal(slots.get('js'), jsSlot, 'the given slot is used')
  t.ok(slots.get('py') instanceof AdvisorySlot, 'a missing slot is made and added')
  t.same(wired.ages(), {}, 'no age before the first sync')
  t.same(wired.databaseAges(), {}, 'no database age while no artifact has loaded')

  await store.put(advisoryObjectKey('js'), artifact({ epssStatus: 'unavailable' }), {})
  t.equal(await wired.consumers.get('js')?.poll(), 'rejected', 'js denies on EPSS: unavailable is refused')
  t.equal(readiness.stateOf('js'), MOUNT_STATE.awaiting)
  clock.advance(1000)
  await store.put(advisoryObjectKey('js'), artifact({ epssStatus: 'available' }), {})
  t.equal(await wired.consumers.get('js')?.poll(), 'swapped')
  t.equal(readiness.stateOf('js'), MOUNT_STATE.ready)
  t.equal(jsSlot.database()?.ecosystem, 'js')
  t.equal(await wired.consumers.get('py')?.poll(), 'absent')
  t.equal(readiness.stateOf('py'), MOUNT_STATE.ready, 'ready at boot, untouched')
  clock.advance(90_000)
  t.same(wired.ages(), { js: 90 })
  // The fixture artifact was compiled at 2026-01-01T00:00:00Z; the clock reads 2026-03-01T00:01:31Z.
  t.same(wired.databaseAges(), { js: (Date.parse('2026-03-01T00:01:31Z') - Date.parse('2026-01-01T00:00:00Z')) / 1000 }, 'the database age counts from its compile')
})

t.test('the maximum age is the mount\'s own: a six-day maximum alarms at three days', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const { store } = await tempStore(t, clock)
  const readiness = new Readiness()
  const cfg = config({ js: mount('js', [{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 7 * 86400 }]) })
  const wired = attachAdvisoryConsumers({ config: cfg, logger, clock, readiness, slots: new Map(), store, start: false })
  t.teardown(() => wired.stop())
  await store.put(advisoryObjectKey('js'), artifact(), {})
  const consumer = wired.consumers.get('js')!
  await consumer.poll()
  clock.advance(3 * 86_400_000 - 1000)
  await consumer.poll()
  t.same(logger.records.filter((r) => r.level === 'error'), [])
  clock.advance(1000)
  await consumer.poll()
  t.match(logger.records.filter((r) => r.level === 'error'), [{ data: { ecosystem: 'js', maxAgeSeconds: 6 * 86400, ageSeconds: 3 * 86400 } }])
})

t.test('started consumers poll on their own and stop', async (t) => {
  const clock = new ManualClock()
  const { store } = await tempStore(t, clock)
  const readiness = new Readiness()
  readiness.addMount('js', true)
  await store.put(advisoryObjectKey('js'), artifact(), {})
  const cfg = config({ js: mount('js', [{ rule: 'DenyIfCve' }]) })
  const wired = attachAdvisoryConsumers({ config: cfg, logger: new RecordingLogger(), clock, readiness, slots: new Map(), store })
  await new Promise<void>((resolve) => {
    const check = setInterval(() => { if (readiness.stateOf('js') === MOUNT_STATE.ready) { clearInterval(check); resolve() } }, 5)
  })
  t.equal(readiness.stateOf('js'), MOUNT_STATE.ready, 'ready after the first poll of the started consumer')
  await wired.stop()
})
