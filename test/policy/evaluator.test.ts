import t from 'tap'

import { MemoryAdvisoryDatabase } from '../doubles/memory-advisory-database.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { isServiceError } from '../../engine/errors.js'
import { createEvaluator, ruleProblems } from '../../engine/policy/evaluator.js'
import { DAY, EVALUATOR_CASES, JS_ADVISORIES, PY_ADVISORIES, type EvaluatorCase } from './evaluator.cases.js'

const NOW = Date.parse('2026-03-01T00:00:00Z')

function run(c: EvaluatorCase) {
  const ecosystem = c.ecosystem ?? 'js'
  const clock = new ManualClock(NOW)
  const database = c.database === undefined
    ? undefined
    : new MemoryAdvisoryDatabase({
      ecosystem,
      advisories: ecosystem === 'js' ? JS_ADVISORIES : PY_ADVISORIES,
      publishedAt: c.database.pushAgeSeconds === null ? null : new Date(NOW - c.database.pushAgeSeconds * 1000),
      ...(c.database.epssStatus === undefined ? {} : { epssStatus: c.database.epssStatus }),
      ...(c.database.lookupFault === true ? { lookupFault: new Error('index read out of bounds') } : {}),
    })
  const evaluator = createEvaluator(c.rules, {
    ecosystem,
    database,
    clock,
    maxAgeSeconds: c.maxAgeSeconds ?? 3 * DAY,
    ...(c.breakerOpen === true ? { breakerOpen: () => true } : {}),
  })
  const publishedAt = c.facts.publishedAgoSeconds === undefined ? undefined : new Date(NOW - c.facts.publishedAgoSeconds * 1000)
  return evaluator.evaluate({ ecosystem, name: c.facts.name, version: c.facts.version, publishedAt }, c.phase ?? 'admission')
}

/** tap's t.throws redefines `name` on the error, which a frozen ServiceError refuses; catch it here instead. */
function codeThrown(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return isServiceError(error) ? error.code : 'not a ServiceError'
  }
  return undefined
}

for (const c of EVALUATOR_CASES) {
  t.test(c.name, async (t) => {
    const decision = run(c)
    const e = c.expect
    t.equal(decision.verdict, e.verdict, 'verdict')
    t.equal(decision.reason, e.reason, 'reason')
    if ('rule' in e) t.equal(decision.rule, e.rule, 'rule')
    else if (e.verdict === 'deny' && e.reason === 'default') t.equal(decision.rule, undefined, 'no rule for deny by default')
    if ('ruleIndex' in e) t.equal(decision.ruleIndex, e.ruleIndex, 'ruleIndex')
    if (e.evidence !== undefined) t.same(decision.evidence, e.evidence, 'evidence')
    if (e.skipped !== undefined) t.same(decision.skipped, e.skipped, 'skipped')
    if (e.advisory !== undefined) t.same(decision.advisory.map((o) => ({ rule: o.rule, cause: o.cause })), e.advisory, 'advisory observations')
    if ('ageSeconds' in e) t.equal(decision.ageSeconds, e.ageSeconds, 'ageSeconds')
    if ('maxAgeSeconds' in e) t.equal(decision.maxAgeSeconds, e.maxAgeSeconds, 'maxAgeSeconds')
    t.ok(Object.isFrozen(decision), 'the decision is frozen')
  })
}

t.test('a swapped-in database is read at each evaluation', async (t) => {
  const clock = new ManualClock(NOW)
  let current: MemoryAdvisoryDatabase | undefined
  const evaluator = createEvaluator([{ rule: 'DenyIfCve' }], { ecosystem: 'js', database: () => current, clock, maxAgeSeconds: 3 * DAY })
  const facts = { ecosystem: 'js' as const, name: 'lodash', version: '4.17.20', publishedAt: undefined }
  t.equal(evaluator.evaluate(facts, 'admission').verdict, 'unavailable')
  current = new MemoryAdvisoryDatabase({ ecosystem: 'js', advisories: JS_ADVISORIES, publishedAt: new Date(NOW) })
  t.equal(evaluator.evaluate(facts, 'admission').verdict, 'deny')
  clock.advance(3 * DAY * 1000)
  const expired = evaluator.evaluate(facts, 'admission')
  t.equal(expired.verdict, 'expired', 'the same push expires as the clock moves')
  t.equal(expired.ageSeconds, 3 * DAY)
})

t.test('invalid identity ranges are refused with every problem named', async (t) => {
  const rules = [
    { rule: 'DenyIdentity' as const, package: 'a', versions: 'not a range!' },
    { rule: 'DenyIdentity' as const, package: 'b', versions: '1.0.0' },
  ]
  t.same(ruleProblems('js', rules).length, 1)
  t.match(ruleProblems('js', rules)[0], /rules\[0\].*DenyIdentity a/)
  t.same(ruleProblems('py', [{ rule: 'DenyIdentity', package: 'x', versions: '~=1' }]).length, 1, '~= needs two release numbers')
  t.same(ruleProblems('py', [{ rule: 'DenyIdentity', package: 'x', versions: '>=1.0,<2' }]), [])
  t.equal(codeThrown(() => createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: new ManualClock(), maxAgeSeconds: DAY })), 'CONFIG_INVALID')
})

t.test('the context is guarded', async (t) => {
  t.equal(codeThrown(() => createEvaluator([], { ecosystem: 'js', database: undefined, clock: new ManualClock(), maxAgeSeconds: 0 })), 'CONFIG_INVALID')
  const evaluator = createEvaluator([], { ecosystem: 'js', database: undefined, clock: new ManualClock(), maxAgeSeconds: DAY })
  t.equal(codeThrown(() => evaluator.evaluate({ ecosystem: 'py', name: 'x', version: '1', publishedAt: undefined }, 'admission')), 'INTERNAL')
})
