/**
 * Waivers (issue 31 item 2): a waiver admits named versions of one package
 * ahead of every rule until its expiry, except the malware rules unless it
 * says overrideMalware; its expiry is checked and bounded; an expired
 * waiver admits nothing and the answers it shaped are re-gated then; every
 * admission is counted and the first of each version logged at warn.
 */
import t from 'tap'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { RuleKind, VersionFacts } from '../../engine/policy/decision.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { createPolicyEvaluator } from '../../engine/policy/waived-evaluator.js'
import { ADMITTED_BY_WAIVER_MESSAGE } from '../../engine/policy/waiver-admissions.js'
import { MAX_WAIVER_SECONDS, waiverProblems, type WaiverConfig } from '../../engine/policy/waivers.js'
import { createDecide } from '../../workers/policy-gate.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const HOUR_MS = 3_600_000
const START = Date.parse('2026-01-01T00:00:00Z')
const EXPIRES = '2026-01-02T00:00:00Z'
const quarantine: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 7 * 86_400 }]
const waiver: WaiverConfig = { package: 'urgent-fix', versions: '^2.1.0', reason: 'INC-42 hotfix', expires: EXPIRES, by: 'sec-team' }

const fresh = (name: string, version: string, ecosystem: 'js' | 'py' = 'js'): VersionFacts =>
  ({ ecosystem, name, version, publishedAt: new Date(START - HOUR_MS) })

t.test('a waiver admits the versions it names until its expiry, and nothing else', async (t) => {
  const clock = new ManualClock(START)
  const evaluator = createPolicyEvaluator(quarantine, [waiver], { ecosystem: 'js', database: undefined, clock, maxAgeSeconds: 86_400 })
  t.match(evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), {
    verdict: 'admit', rule: undefined, reason: 'waiver',
    evidence: [`waived by sec-team until ${EXPIRES}: INC-42 hotfix`],
    waiver: { package: 'urgent-fix', versions: '^2.1.0', by: 'sec-team', reason: 'INC-42 hotfix', expires: EXPIRES, overrideMalware: false },
  })
  t.match(evaluator.evaluate(fresh('urgent-fix', '3.0.0'), 'admission'), { verdict: 'deny' }, 'a version outside the range is gated')
  t.match(evaluator.evaluate(fresh('other', '2.1.3'), 'admission'), { verdict: 'deny' }, 'another package is gated')
  t.equal(evaluator.regateAt?.('urgent-fix', clock.now()), Date.parse(EXPIRES), 'answers it shaped are re-gated at its expiry')
  t.equal(evaluator.regateAt?.('other', clock.now()), undefined)
  clock.set(Date.parse(EXPIRES) - 1)
  t.match(evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'admit', reason: 'waiver' }, 'still holds the millisecond before')
  clock.set(Date.parse(EXPIRES))
  t.match(evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'deny', waiver: undefined }, 'expired at its expiry: the rules decide again')
  t.equal(evaluator.regateAt?.('urgent-fix', clock.now()), undefined, 'an expired waiver re-gates nothing more')
})

t.test('py waivers compare PEP 503 names and PEP 440 specifiers; a js waiver does not reach the py mount', async (t) => {
  const clock = new ManualClock(START)
  const py = createPolicyEvaluator(quarantine, [{ ...waiver, package: 'Urgent_Fix', versions: '>=2.1,<3', mount: 'py' }, waiver], { ecosystem: 'py', database: undefined, clock, maxAgeSeconds: 86_400 })
  t.match(py.evaluate(fresh('urgent-fix', '2.1.3', 'py'), 'admission'), { verdict: 'admit', reason: 'waiver' })
  t.match(py.evaluate(fresh('urgent-fix', '3.0', 'py'), 'admission'), { verdict: 'deny' })
  const onlyJs = createPolicyEvaluator(quarantine, [waiver], { ecosystem: 'py', database: undefined, clock, maxAgeSeconds: 86_400 })
  t.match(onlyJs.evaluate(fresh('urgent-fix', '2.1.3', 'py'), 'admission'), { verdict: 'deny' })
})

t.test('the malware rules are judged ahead of a waiver unless it overrides them', async (t) => {
  const clock = new ManualClock(START)
  // DenyIdentity stands in for a malware kind here (no database needed); test/policy/deny-if-malicious.test.ts has the real one.
  const malwareKinds = new Set<RuleKind>(['DenyIdentity'])
  const rules: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 7 * 86_400 }, { rule: 'DenyIdentity', package: 'urgent-fix', versions: '2.1.3' }]
  const context = { ecosystem: 'js' as const, database: undefined, clock, maxAgeSeconds: 86_400 }
  const held = createPolicyEvaluator(rules, [waiver], context, { malwareKinds })
  t.match(held.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'deny', rule: 'DenyIdentity', ruleIndex: 1 }, 'the record wins, with its index in the whole list')
  t.match(held.evaluate(fresh('urgent-fix', '2.1.4'), 'admission'), { verdict: 'admit', reason: 'waiver' }, 'a version no record names is waived')
  const overriding = createPolicyEvaluator(rules, [{ ...waiver, overrideMalware: true }], context, { malwareKinds })
  t.match(overriding.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'admit', reason: 'waiver', waiver: { overrideMalware: true } })
})

t.test('waiverProblems: versions, expiry form and the 30-day bound; a past expiry is no problem', async (t) => {
  const now = START
  t.same(waiverProblems([waiver], now), [])
  t.same(waiverProblems([{ ...waiver, expires: '2025-06-01T00:00:00Z' }], now), [], 'an expired waiver stays harmlessly')
  const problems = waiverProblems([
    { ...waiver, versions: 'not a range' },
    { ...waiver, expires: '2026-01-02' },
    { ...waiver, expires: new Date(now + MAX_WAIVER_SECONDS * 1000 + 1000).toISOString() },
  ], now)
  t.equal(problems.length, 3)
  t.match(problems[0], /^waivers\[0\] \(urgent-fix@not a range\) versions: /)
  t.match(problems[1], /^waivers\[1\] .* expires: "2026-01-02" is not an RFC 3339 instant/)
  t.match(problems[2], /^waivers\[2\] .* is more than 30 days away \(the longest a waiver may run\)$/)
  t.same(waiverProblems([{ ...waiver, expires: new Date(now + MAX_WAIVER_SECONDS * 1000).toISOString() }], now), [], 'exactly the maximum is allowed')
})

t.test('the mount policy counts every admission through a waiver and warns once per version', async (t) => {
  const clock = new ManualClock(START)
  const logger = new RecordingLogger()
  const policy = mountPolicy({ ecosystem: 'js', rules: quarantine, waivers: [waiver], configuredMaxAgeSeconds: 0, slot: new AdvisorySlot(), logger, clock })
  const artifact = (version: string): void => {
    const facts = fresh('urgent-fix', version)
    policy.observeDecision(facts, policy.evaluator.evaluate(facts, 'admission'))
  }
  artifact('2.1.3')
  artifact('2.1.3')
  // A listing reports the same version: counted, not logged again.
  policy.observe({ observations: [{ version: '2.1.3', decision: policy.evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission') }], advisoryAnswered: [] }, 'urgent-fix')
  artifact('2.1.4')
  artifact('3.0.0')
  t.equal(policy.waiverAdmissions(), 4)
  t.same(logger.find(ADMITTED_BY_WAIVER_MESSAGE).map((r) => [r.level, r.data]), [
    ['warn', { ecosystem: 'js', package: 'urgent-fix', version: '2.1.3', waiver: 'urgent-fix@^2.1.0', reason: 'INC-42 hotfix', by: 'sec-team', expires: EXPIRES }],
    ['warn', { ecosystem: 'js', package: 'urgent-fix', version: '2.1.4', waiver: 'urgent-fix@^2.1.0', reason: 'INC-42 hotfix', by: 'sec-team', expires: EXPIRES }],
  ])
})

t.test('a swap puts new rules and waivers in force and moves the generation', async (t) => {
  const clock = new ManualClock(START)
  const policy = mountPolicy({ ecosystem: 'js', rules: quarantine, configuredMaxAgeSeconds: 0, slot: new AdvisorySlot(), logger: new RecordingLogger(), clock })
  const before = policy.generation()
  t.match(policy.evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'deny' })
  policy.swap(quarantine, [waiver])
  t.not(policy.generation(), before, 'retained answers keyed on the old generation are not served')
  t.match(policy.evaluator.evaluate(fresh('urgent-fix', '2.1.3'), 'admission'), { verdict: 'admit', reason: 'waiver' })
  t.same(policy.gateOptions().waivers, [waiver], 'the workers build the same policy')
  t.equal(policy.gateOptions().generation, policy.generation())
  // The worker's gate: the same decision, and the waiver's expiry as the answer's re-gate instant.
  const decide = createDecide(policy.gateOptions(), clock.now())
  t.match(decide(fresh('urgent-fix', '2.1.3')), { verdict: 'admit', reason: 'waiver' })
  t.equal(decide.clock?.regateAt?.('urgent-fix', clock.now()), Date.parse(EXPIRES))
  policy.swap([{ rule: 'AllowIfOlderThan', seconds: 0 }], [])
  t.same(policy.rules(), [{ rule: 'AllowIfOlderThan', seconds: 0 }])
  t.match(policy.evaluator.evaluate(fresh('other', '1.0.0'), 'admission'), { verdict: 'admit', rule: 'AllowIfOlderThan' })
})
