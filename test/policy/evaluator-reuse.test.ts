/**
 * The evaluator keeps nothing between evaluations that could change a
 * decision: it shares frozen outcomes and Decisions while versions repeat
 * their advisories, reads each lookup once per evaluation, and holds no
 * version after it returns. Every decision of a long interleaved sequence
 * must equal what a freshly built evaluator decides for that version alone.
 */
import t from 'tap'

import type { AdvisoryDatabase, AdvisoryMatch } from '../../engine/advisory/artifact/database.js'
import { MemoryAdvisoryDatabase } from '../doubles/memory-advisory-database.js'
import { ManualClock } from '../doubles/manual-clock.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { DAY, JS_ADVISORIES } from './evaluator.cases.js'

const NOW = Date.parse('2026-03-01T00:00:00Z')

const EXTRA = [
  ...JS_ADVISORIES,
  { id: 'GHSA-lodash-second-0000', package: 'lodash', aliases: ['CVE-2020-8203'], ranges: [{ introduced: '0', fixed: '4.17.19' }], epss: 0.2 },
  { id: 'GHSA-lodash-third-00000', package: 'lodash', ranges: [{ introduced: '4.17.19', fixed: '4.17.20' }] },
]

/** Answers as the memory database does, but hands back one object per advisory (as the compiled artifact does), so repeats are recognisable. */
class StableMatches implements AdvisoryDatabase {
  readonly #inner: MemoryAdvisoryDatabase
  readonly #byId = new Map<string, AdvisoryMatch>()
  calls = 0
  constructor(inner: MemoryAdvisoryDatabase) { this.#inner = inner }
  get ecosystem() { return this.#inner.ecosystem }
  get metadata() { return this.#inner.metadata }
  get publishedAt() { return this.#inner.publishedAt }
  #stable(list: readonly AdvisoryMatch[]): readonly AdvisoryMatch[] {
    return list.map((m) => {
      const known = this.#byId.get(m.id)
      if (known !== undefined) return known
      this.#byId.set(m.id, m)
      return m
    })
  }
  affecting(name: string, version: string) { this.calls++; return this.#stable(this.#inner.affecting(name, version)) }
  remediating(name: string, version: string) { this.calls++; return this.#stable(this.#inner.remediating(name, version)) }
}

function database(): StableMatches {
  return new StableMatches(new MemoryAdvisoryDatabase({ ecosystem: 'js', advisories: EXTRA, publishedAt: new Date(NOW - 3600_000), epssStatus: 'available' }))
}

const RULES: readonly RuleConfig[] = [
  { rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' },
  { rule: 'DenyIfCve', onUnavailable: 'skip' },
  { rule: 'DenyIfEpss', threshold: 0.5 },
  { rule: 'AllowIfRemediatesCve' },
  { rule: 'AllowIfOlderThan', seconds: 7 * DAY },
]

function facts(name: string, version: string, ageDays: number | undefined): VersionFacts {
  return { ecosystem: 'js', name, version, publishedAt: ageDays === undefined ? undefined : new Date(NOW - ageDays * DAY * 1000) }
}

const SEQUENCE: readonly VersionFacts[] = [
  facts('lodash', '4.17.15', 100), facts('lodash', '4.17.16', 100), facts('lodash', '4.17.19', 100),
  facts('lodash', '4.17.20', 1), facts('lodash', '4.17.21', 1), facts('lodash', '4.17.21', 100),
  facts('lodash', '4.17.22', 100), facts('lodash', '4.17.22', 1), facts('lodash', 'not-a-version', 100),
  facts('minimist', '1.2.0', 100), facts('minimist', '1.2.2', 1), facts('left-pad', '1.3.0', 100),
  facts('left-pad', '1.3.1', undefined), facts('two-faced', '2.0.0', 100), facts('two-faced', '1.0.0', 100),
  facts('evil-pkg', '1.0.1', 100), facts('quiet-lib', '2.0.1', 1), facts('withdrawn-lib', '1.0.0', 100),
]

function plain(decision: Decision): object {
  return { ...decision, evidence: [...decision.evidence], skipped: [...decision.skipped], advisory: decision.advisory.map((o) => ({ ...o })) }
}

t.test('an interleaved sequence decides as fresh evaluators do, version by version', async (t) => {
  const db = database()
  const clock = new ManualClock(NOW)
  const shared = createEvaluator(RULES, { ecosystem: 'js', database: db, clock, maxAgeSeconds: 6 * DAY })
  let evaluations = 0
  for (let round = 0; round < 3; round++) {
    for (const f of round === 1 ? [...SEQUENCE].reverse() : SEQUENCE) {
      for (const phase of ['admission', 'revocation'] as const) {
        const fresh = createEvaluator(RULES, { ecosystem: 'js', database: database(), clock, maxAgeSeconds: 6 * DAY })
        const got = shared.evaluate(f, phase)
        t.ok(Object.isFrozen(got) && Object.isFrozen(got.evidence) && Object.isFrozen(got.advisory) && Object.isFrozen(got.skipped), 'frozen')
        t.same(plain(got), plain(fresh.evaluate(f, phase)), `${f.name}@${f.version} ${phase} round ${round}`)
        evaluations++
      }
    }
  }
  // Each evaluation that reaches the advisory rules asks each lookup at most once.
  t.ok(db.calls <= evaluations * 2, `${db.calls} lookups for ${evaluations} evaluations`)
})

t.test('a repeated outcome is the same frozen Decision', async (t) => {
  const evaluator = createEvaluator(RULES, { ecosystem: 'js', database: database(), clock: new ManualClock(NOW), maxAgeSeconds: 6 * DAY })
  const a = evaluator.evaluate(facts('lodash', '4.17.15', 100), 'admission')
  const b = evaluator.evaluate(facts('lodash', '4.17.16', 100), 'admission')
  t.equal(a.reason, 'cve')
  t.equal(a, b, 'two versions denied by the same advisories share one Decision')
  t.same(a.evidence, ['GHSA-35jh-r3h4-6jhm', 'CVE-2021-23337', 'GHSA-lodash-second-0000', 'CVE-2020-8203'])
  const admitted = evaluator.evaluate(facts('lodash', '4.17.22', 100), 'admission')
  t.equal(admitted.reason, 'quarantine')
  t.equal(evaluator.evaluate(facts('left-pad', '9.9.9', 100), 'admission'), admitted, 'the quarantine admit is one Decision')
})

t.test('a lookup fault is not remembered: the next rule asks again', async (t) => {
  const inner = database()
  let faults = 1
  const flaky: AdvisoryDatabase = {
    ecosystem: 'js',
    metadata: inner.metadata,
    publishedAt: inner.publishedAt,
    affecting(name, version) {
      if (faults-- > 0) throw new Error('index read out of bounds')
      return inner.affecting(name, version)
    },
    remediating: (name, version) => inner.remediating(name, version),
  }
  const evaluator = createEvaluator(RULES, { ecosystem: 'js', database: flaky, clock: new ManualClock(NOW), maxAgeSeconds: 6 * DAY })
  const decision = evaluator.evaluate(facts('lodash', '4.17.20', 100), 'admission')
  t.same(decision.skipped, [{ rule: 'DenyIfCve', cause: 'lookup_fault' }], 'DenyIfCve skipped on the fault')
  t.equal(decision.rule, 'DenyIfEpss', 'DenyIfEpss read the database afresh and denied')
  t.same(decision.advisory.map((o) => [o.rule, o.cause]), [['DenyIfCve', 'lookup_fault'], ['DenyIfEpss', undefined]])
  const next = evaluator.evaluate(facts('lodash', '4.17.20', 100), 'admission')
  t.equal(next.rule, 'DenyIfCve', 'with the fault gone DenyIfCve denies')
  t.same(next.skipped, [])
})

t.test('a ready database that ages past the maximum or meets an open breaker is seen at once', async (t) => {
  const clock = new ManualClock(NOW)
  let open = false
  const evaluator = createEvaluator([{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 7 * DAY }], {
    ecosystem: 'js', database: database(), clock, maxAgeSeconds: 6 * DAY, breakerOpen: () => open,
  })
  const f = facts('left-pad', '1.0.0', 100)
  t.equal(evaluator.evaluate(f, 'admission').verdict, 'admit')
  open = true
  t.equal(evaluator.evaluate(f, 'admission').reason, 'breaker_open')
  open = false
  t.equal(evaluator.evaluate(f, 'admission').verdict, 'admit')
  clock.advance(6 * DAY * 1000)
  t.equal(evaluator.evaluate(f, 'admission').verdict, 'expired')
})

t.test('the quarantine reads publishedMs when the caller gives it, without making a Date', async (t) => {
  const evaluator = createEvaluator([{ rule: 'AllowIfOlderThan', seconds: 7 * DAY }], { ecosystem: 'js', database: undefined, clock: new ManualClock(NOW), maxAgeSeconds: 6 * DAY })
  let dates = 0
  const lazy = (ms: number | undefined): VersionFacts => ({
    ecosystem: 'js', name: 'left-pad', version: '1.0.0', publishedMs: ms,
    get publishedAt() { dates++; return ms === undefined ? undefined : new Date(ms) },
  })
  t.equal(evaluator.evaluate(lazy(NOW - 8 * DAY * 1000), 'admission').verdict, 'admit')
  t.equal(evaluator.evaluate(lazy(NOW - 6 * DAY * 1000), 'admission').reason, 'default', 'inside the quarantine')
  t.equal(evaluator.evaluate(lazy(Number.NaN), 'admission').reason, 'default', 'an unreadable time')
  t.equal(dates, 0, 'no Date was read')
  t.equal(evaluator.evaluate(lazy(undefined), 'admission').reason, 'default', 'no time')
  t.equal(evaluator.evaluate(facts('left-pad', '1.0.0', 8), 'admission').verdict, 'admit', 'a Date alone still works')
})

t.test('through an outage, decisions match fresh evaluators and one refusal is shared', async (t) => {
  const noEpss = new MemoryAdvisoryDatabase({ ecosystem: 'js', advisories: EXTRA, publishedAt: new Date(NOW - 3600_000), epssStatus: 'unavailable' })
  const contexts = [
    { name: 'no database', database: undefined, breakerOpen: false },
    { name: 'breaker open', database: database(), breakerOpen: true },
    { name: 'no EPSS scores', database: noEpss, breakerOpen: false },
  ]
  const ruleLists: readonly (readonly RuleConfig[])[] = [
    RULES,
    [{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 7 * DAY }],
    [{ rule: 'AllowIfOlderThan', seconds: 7 * DAY, appliesTo: ['revocation'] }, { rule: 'DenyIfEpss', threshold: 0.1, onUnavailable: 'skip' }, { rule: 'DenyIfCve', onUnavailable: 'refuse' }],
  ]
  for (const c of contexts) {
    for (const rules of ruleLists) {
      const context = { ecosystem: 'js' as const, database: c.database, clock: new ManualClock(NOW), maxAgeSeconds: 6 * DAY, breakerOpen: () => c.breakerOpen }
      const shared = createEvaluator(rules, context)
      const seen = new Set<Decision>()
      for (const f of [...SEQUENCE, ...SEQUENCE]) {
        for (const phase of ['admission', 'revocation'] as const) {
          const got = shared.evaluate(f, phase)
          t.same(plain(got), plain(createEvaluator(rules, context).evaluate(f, phase)), `${c.name}: ${f.name}@${f.version} ${phase}`)
          t.ok(Object.isFrozen(got) && Object.isFrozen(got.advisory), 'frozen')
          if (got.verdict === 'unavailable') seen.add(got)
        }
      }
      // Refusing at the first advisory deny (no skip before it) is one Decision per phase, whatever the version.
      if (rules.length === 2) t.ok(seen.size <= 2, `${c.name}: ${seen.size} distinct refusals over the sequence`)
    }
  }
})
