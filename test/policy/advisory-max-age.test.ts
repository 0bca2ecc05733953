import t from 'tap'

import { maxAgeFor, MIN_MAX_AGE_SECONDS, needsAdvisoryDatabase, needsEpss } from '../../engine/policy/advisory-max-age.js'

const DAY = 86_400

t.test('maxAgeFor (SPEC.md 8)', async (t) => {
  t.same(maxAgeFor([]), { seconds: 3 * DAY, origin: 'default' }, 'no quarantine rule: three days')
  t.same(maxAgeFor([{ rule: 'AllowIfOlderThan', seconds: 7 * DAY }]), { seconds: 6 * DAY, origin: 'derived' }, 'seven-day quarantine gives six days')
  t.same(maxAgeFor([{ rule: 'AllowIfOlderThan', seconds: 2 * DAY }]), { seconds: 3 * DAY, origin: 'derived' }, 'never under three days')
  t.same(maxAgeFor([{ rule: 'AllowIfOlderThan', seconds: 30 * DAY }, { rule: 'AllowIfOlderThan', seconds: 10 * DAY }]),
    { seconds: 9 * DAY, origin: 'derived' }, 'the earliest quarantine')
  t.same(maxAgeFor([{ rule: 'AllowIfOlderThan', seconds: 7 * DAY }], 3600), { seconds: 3600, origin: 'pin' }, 'a pin wins as given')
  t.same(maxAgeFor([{ rule: 'AllowIfOlderThan', seconds: 7 * DAY }], 0), { seconds: 6 * DAY, origin: 'derived' }, '0 means derive')
  t.equal(MIN_MAX_AGE_SECONDS, 3 * DAY)
})

t.test('what a rule list needs', async (t) => {
  t.equal(needsAdvisoryDatabase([{ rule: 'AllowIfRemediatesCve' }, { rule: 'AllowIfOlderThan', seconds: 1 }]), false)
  t.equal(needsAdvisoryDatabase([{ rule: 'DenyIfCve' }]), true)
  t.equal(needsAdvisoryDatabase([{ rule: 'DenyIfEpss', threshold: 0.5 }]), true)
  t.equal(needsEpss([{ rule: 'DenyIfCve' }]), false)
  t.equal(needsEpss([{ rule: 'DenyIfEpss', threshold: 0.5 }]), true)
})
