import t from 'tap'
import { Compile } from 'typebox/compile'

import { RULE_LIST_SCHEMA, RULE_SCHEMA, RULE_SCHEMAS } from '../../engine/policy/rule-schema.js'

const rule = Compile(RULE_SCHEMA)

t.test('each rule kind of the configuration sketch is accepted', async (t) => {
  const list = Compile(RULE_LIST_SCHEMA)
  t.ok(list.Check([
    { rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' },
    { rule: 'DenyIfCve', onUnavailable: 'skip', appliesTo: ['admission'] },
    { rule: 'DenyIfEpss', threshold: 0.5 },
    { rule: 'AllowIfRemediatesCve' },
    { rule: 'AllowIfOlderThan', seconds: 604800 },
  ]))
  t.ok(list.Check([]), 'an empty list denies everything by default')
})

t.test('unknown rule keys and values are refused', async (t) => {
  t.notOk(rule.Check({ rule: 'DenyIfCve', appliesto: ['admission'] }), 'a misspelt appliesTo is an unknown key')
  t.notOk(rule.Check({ rule: 'AllowIfOlderThan', seconds: 1, onUnavailable: 'skip' }), 'onUnavailable only on advisory denies')
  t.notOk(rule.Check({ rule: 'DenyIfCve', onUnavailable: 'deny' }), 'onUnavailable: only skip and refuse')
  t.ok(rule.Check({ rule: 'DenyIfCve', onUnavailable: 'refuse' }))
  t.notOk(rule.Check({ rule: 'DenyIfEpss', threshold: 1.5 }), 'threshold within 0..1')
  t.notOk(rule.Check({ rule: 'DenyIfEpss' }), 'threshold required')
  t.notOk(rule.Check({ rule: 'AllowIfOlderThan', seconds: 1.5 }), 'whole seconds')
  t.notOk(rule.Check({ rule: 'DenyIdentity', package: 'x' }), 'versions required')
  t.notOk(rule.Check({ rule: 'DenyIfCve', appliesTo: [] }), 'an empty appliesTo is refused')
  t.notOk(rule.Check({ rule: 'DenyIfCve', appliesTo: ['admission', 'admission'] }), 'no repeated phase')
  t.notOk(rule.Check({ rule: 'DenyIfCve', appliesTo: ['publish'] }), 'only the two phases')
  t.notOk(rule.Check({ rule: 'AllowAll' }), 'unknown rule kind')
})

t.test('per-kind schemas give one precise error', async (t) => {
  const errors = [...Compile(RULE_SCHEMAS.DenyIfCve).Errors({ rule: 'DenyIfCve', appliesto: ['admission'] })]
  t.ok(errors.some((e) => e.keyword === 'additionalProperties'))
})
