import t from 'tap'

import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import { OUTAGE_BEGAN_MESSAGE, OUTAGE_CONTINUES_MESSAGE, OUTAGE_RECOVERED_MESSAGE, OUTAGE_REPEAT_MS } from '../../engine/policy/advisory-outage.js'
import type { Decision, RuleKind, VersionFacts } from '../../engine/policy/decision.js'
import { ADVISORY_MAX_AGE_MESSAGE, mountPolicy, type MountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { ADMITTED_WITH_SKIPPED_CHECK_MESSAGE } from '../../engine/policy/skipped-check-record.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { MemoryAdvisoryDatabase } from '../doubles/memory-advisory-database.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const DAY_MS = 86_400_000
const quarantine: RuleConfig = { rule: 'AllowIfOlderThan', seconds: 7 * 86_400 }
const skipCve: RuleConfig = { rule: 'DenyIfCve', onUnavailable: 'skip' }

function setup(rules: readonly RuleConfig[], ecosystem: Ecosystem = 'js', configuredMaxAgeSeconds: number | undefined = 0) {
  const clock = new ManualClock()
  const logger = new RecordingLogger()
  const slot = new AdvisorySlot()
  const policy = mountPolicy({ ecosystem, rules, configuredMaxAgeSeconds, slot, logger, clock })
  const facts = (name: string, version: string): VersionFacts => ({ ecosystem, name, version, publishedAt: new Date(clock.now() - 100 * DAY_MS) })
  /** One public artifact decision, as the artifact route makes and reports it. */
  const decide = (name: string, version: string): Decision => {
    const f = facts(name, version)
    const decision = policy.evaluator.evaluate(f, 'admission')
    policy.observeDecision(f, decision)
    return decision
  }
  /** Loads an advisory push made now into the slot, as the consumer does. */
  const load = (): void => {
    const publishedAt = new Date(clock.now())
    slot.swap({ database: new MemoryAdvisoryDatabase({ ecosystem, advisories: [], publishedAt }), shared: new SharedArrayBuffer(8), publishedAt, etag: '"1"' })
  }
  return { clock, logger, slot, policy, decide, load }
}

/** A listing's report with one decision per given observation list (the shape packuments and project pages share). */
function listing(policy: MountPolicy, decisions: readonly Decision[], answered: readonly RuleKind[] = []): void {
  policy.observe({ observations: decisions.map((decision) => ({ decision })), advisoryAnswered: answered }, 'listed')
}

t.test('the boot line names the maximum age and its origin, once per mount (SPEC.md 8)', async (t) => {
  const derived = setup([skipCve, quarantine])
  t.same(derived.logger.find(ADVISORY_MAX_AGE_MESSAGE).map((r) => r.data), [{ ecosystem: 'js', seconds: 6 * 86_400, origin: 'derived' }])
  t.equal(derived.policy.maxAgeSeconds, 6 * 86_400)
  const pinned = setup([skipCve], 'py', 3600)
  t.same(pinned.logger.find(ADVISORY_MAX_AGE_MESSAGE).map((r) => r.data), [{ ecosystem: 'py', seconds: 3600, origin: 'pin' }])
  t.equal(pinned.policy.gateOptions().maxAgeSeconds, 3600, 'the workers evaluate against the same maximum')
})

t.test('an artifact admitted with a skipped check warns once per identity and begins the outage (SPEC.md 6.2, 3.3)', async (t) => {
  const { logger, decide } = setup([skipCve, quarantine])
  const decision = decide('lodash', '4.17.20')
  t.equal(decision.verdict, 'admit')
  t.same(decision.skipped, [{ rule: 'DenyIfCve', cause: 'no_database' }])
  decide('lodash', '4.17.20')
  decide('lodash', '4.17.21')
  const warnings = logger.find(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE)
  t.same(warnings.map((r) => [r.level, r.data]), [
    ['warn', { ecosystem: 'js', package: 'lodash', version: '4.17.20', rule: 'DenyIfCve', cause: 'no_database' }],
    ['warn', { ecosystem: 'js', package: 'lodash', version: '4.17.21', rule: 'DenyIfCve', cause: 'no_database' }],
  ], 'the repeated identity is not logged again')
  const began = logger.find(OUTAGE_BEGAN_MESSAGE)
  t.equal(began.length, 1, 'one outage, however many decisions')
  t.match(began[0]?.data, { ecosystem: 'js', rule: 'DenyIfCve', cause: 'no_database' })
})

t.test('a loaded database ends the outage with one line; a push past its maximum age begins the next', async (t) => {
  const { clock, logger, decide, load, slot } = setup([skipCve, quarantine])
  decide('lodash', '4.17.20')
  clock.advance(60_000)
  load()
  const answered = decide('lodash', '4.17.20')
  t.same(answered.advisory, [{ rule: 'DenyIfCve', cause: undefined }], 'the loaded database answers')
  t.same(logger.find(OUTAGE_RECOVERED_MESSAGE).map((r) => [r.level, r.data]), [['info', { ecosystem: 'js', durationSeconds: 60 }]])

  // No new push for a week: the six-day maximum age passes.
  clock.advance(7 * DAY_MS)
  t.equal(decide('lodash', '4.17.20').verdict, 'expired', 'a push past its maximum age is never skipped (SPEC.md 3.5)')
  t.match(logger.find(OUTAGE_BEGAN_MESSAGE).map((r) => r.data), [{ cause: 'no_database' }, { cause: 'expired' }], 'a second outage begins')
  t.equal(slot.generation, 1)
  t.equal(logger.find(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE).length, 1, 'an expired push refuses: nothing admitted, nothing to warn')
})

t.test('after recovery the same identity admitted with a skipped check warns again', async (t) => {
  const { clock, logger, policy, decide } = setup([skipCve, quarantine])
  decide('lodash', '4.17.20')
  clock.advance(1000)
  // A listing whose advisory rules all answered ends the outage (the packument path reports it so).
  listing(policy, [], ['DenyIfCve'])
  t.equal(logger.find(OUTAGE_RECOVERED_MESSAGE).length, 1)
  decide('lodash', '4.17.20')
  t.equal(logger.find(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE).length, 2, 'the record was cleared on recovery')
  t.equal(logger.find(OUTAGE_BEGAN_MESSAGE).length, 2)
})

t.test('a listing feeds the outage state but never the skipped-check warning', async (t) => {
  const { clock, logger, policy } = setup([skipCve, quarantine])
  const skippedAdmit = policy.evaluator.evaluate({ ecosystem: 'js', name: 'lodash', version: '4.17.20', publishedAt: new Date(clock.now() - 100 * DAY_MS) }, 'admission')
  listing(policy, [skippedAdmit, skippedAdmit])
  t.equal(logger.find(OUTAGE_BEGAN_MESSAGE).length, 1)
  t.equal(logger.find(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE).length, 0, 'warnings are for admitted public artifacts only')

  clock.advance(OUTAGE_REPEAT_MS)
  listing(policy, [skippedAdmit], ['DenyIfCve'])
  t.equal(logger.find(OUTAGE_CONTINUES_MESSAGE).length, 1, 'one failing decision in the listing keeps the outage, whatever else answered')
  t.equal(logger.find(OUTAGE_RECOVERED_MESSAGE).length, 0)

  listing(policy, [])
  t.equal(logger.find(OUTAGE_RECOVERED_MESSAGE).length, 0, 'a listing that reached no advisory rule changes nothing')
  listing(policy, [], ['DenyIfCve'])
  t.equal(logger.find(OUTAGE_RECOVERED_MESSAGE).length, 1)
})

t.test('a mount with no advisory deny reports no outage', async (t) => {
  const { logger, decide } = setup([{ rule: 'AllowIfRemediatesCve' }, quarantine])
  t.equal(decide('lodash', '4.17.20').verdict, 'admit')
  t.same(logger.records.map((r) => r.message), [ADVISORY_MAX_AGE_MESSAGE], 'the boot line alone')
})

t.test('the gate options follow the slot: generation and the shared buffer move with each swap', async (t) => {
  const { policy, load, slot } = setup([skipCve, quarantine])
  const before = policy.gateOptions()
  t.equal(before.generation, 0)
  t.equal(before.advisory, undefined, 'no database yet: the workers evaluate without one')
  t.equal(before.ecosystem, 'js')
  t.same(before.rules, [skipCve, quarantine])
  load()
  const after = policy.gateOptions()
  t.equal(after.generation, 1)
  t.equal(policy.generation(), 1)
  t.equal(after.advisory?.shared, slot.serving?.shared)
  t.equal(after.advisory?.publishedAt, slot.serving?.publishedAt?.getTime())
})
