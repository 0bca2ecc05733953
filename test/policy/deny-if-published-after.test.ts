/**
 * The freeze (issue 31 item 3): `DenyIfPublishedAfter { at }` denies every
 * version published after the instant, and one with no publish time;
 * admits nothing itself (a version at or before the instant goes on to the
 * next rule); `at` is RFC 3339 with an offset, its calendar checked at load
 * (boot and `service check-config`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Compile } from 'typebox/compile'
import { loadConfig } from '../../engine/config/load.js'
import { withholdingOf, withholdingSentence } from '../../engine/listing/withholding.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { createEvaluator, ruleProblems } from '../../engine/policy/evaluator.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import { parseInstant } from '../../engine/policy/instant.js'
import { RULE_SCHEMA, type RuleConfig } from '../../engine/policy/rule-schema.js'

const AT = '2026-03-01T12:00:00Z'
const NOW = Date.parse('2026-03-02T00:00:00Z')
const rules: RuleConfig[] = [{ rule: 'DenyIfPublishedAfter', at: AT }, { rule: 'AllowIfOlderThan', seconds: 0 }]
const evaluator = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => NOW }, maxAgeSeconds: 86_400 })
const facts = (publishedAt: string | undefined, publishedMs?: number): VersionFacts =>
  ({ ecosystem: 'js', name: 'worm-target', version: '1.0.1', publishedAt: publishedAt === undefined ? undefined : new Date(publishedAt), ...(publishedMs === undefined ? {} : { publishedMs }) })

t.test('after the instant: denied; at or before it: the next rule decides; no publish time: denied', async (t) => {
  t.match(evaluator.evaluate(facts('2026-03-01T12:00:00.001Z'), 'admission'), { verdict: 'deny', rule: 'DenyIfPublishedAfter', ruleIndex: 0, reason: 'freeze', evidence: [`published after ${AT}`] })
  t.match(evaluator.evaluate(facts(AT), 'admission'), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'at the instant is not after it')
  t.match(evaluator.evaluate(facts('2026-02-01T00:00:00Z'), 'admission'), { verdict: 'admit', rule: 'AllowIfOlderThan' })
  t.match(evaluator.evaluate(facts(undefined), 'admission'), { verdict: 'deny', reason: 'freeze', evidence: [`no publish time; frozen at ${AT}`] }, 'the safe reading')
  t.match(evaluator.evaluate(facts('not a date'), 'admission'), { verdict: 'deny', reason: 'freeze' }, 'an unreadable time is no time')
  t.match(evaluator.evaluate(facts(undefined, Date.parse('2026-03-05T00:00:00Z')), 'admission'), { verdict: 'deny' }, 'the packument path\'s publishedMs is read first')
  const offset = createEvaluator([{ rule: 'DenyIfPublishedAfter', at: '2026-03-01T13:00:00+01:00' }, { rule: 'AllowIfOlderThan', seconds: 0 }], { ecosystem: 'py', database: undefined, clock: { now: () => NOW }, maxAgeSeconds: 86_400 })
  t.match(offset.evaluate({ ecosystem: 'py', name: 'x', version: '1.0', publishedAt: new Date('2026-03-01T12:00:01Z') }, 'admission'), { verdict: 'deny' }, 'an offset names the same instant')
})

t.test('`at` is an RFC 3339 instant with an offset, checked by ruleProblems and by the loader', async (t) => {
  const check = Compile(RULE_SCHEMA)
  t.ok(check.Check({ rule: 'DenyIfPublishedAfter', at: AT }))
  t.ok(check.Check({ rule: 'DenyIfPublishedAfter', at: '2026-03-01T12:00:00.5+05:30', appliesTo: ['admission'], packages: ['@acme/*'] }))
  t.notOk(check.Check({ rule: 'DenyIfPublishedAfter' }), 'at is required')
  t.equal(parseInstant(AT), Date.parse(AT))
  t.equal(parseInstant('2026-03-01T13:00:00+01:00'), Date.parse(AT))
  for (const at of ['2026-03-01', '2026-03-01T12:00:00', 'yesterday', '1767225600']) t.match(parseInstant(at), /not an RFC 3339 instant with an offset/, at)
  t.match(parseInstant('2026-02-30T00:00:00Z'), /no date-time of the calendar/)
  t.match(parseInstant('2026-03-01T24:00:00Z'), /no date-time of the calendar/)
  t.match(ruleProblems('js', [{ rule: 'DenyIfPublishedAfter', at: '2026-02-30T00:00:00Z' }]), [/rules\[0\] \(DenyIfPublishedAfter\) at: .*calendar/])
  t.throws(() => createEvaluator([{ rule: 'DenyIfPublishedAfter', at: '2026-13-01T00:00:00Z' }], { ecosystem: 'js', database: undefined, clock: { now: () => NOW }, maxAgeSeconds: 1 }), { code: 'CONFIG_INVALID' })

  const dir = await mkdtemp(join(tmpdir(), 'freeze-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  await writeFile(file, `mounts:\n  js:\n    upstreams: { public: { url: "https://public.example/" } }\n    rules:\n      - { rule: DenyIfPublishedAfter, at: "2026-02-30T00:00:00Z" }\n      - { rule: DenyIfPublishedAfter, at: "2026-03-01" }\n`)
  const loaded = loadConfig({ configPath: file, env: {}, npmRegistry: () => undefined })
  t.notOk(loaded.ok)
  if (!loaded.ok) {
    t.match(loaded.problems, [{ path: 'mounts.js.rules.0.at', message: /calendar/ }, { path: 'mounts.js.rules.1.at', message: /not an RFC 3339 instant with an offset \(e\.g\. 2026-03-01T12:00:00Z\)/ }])
    t.equal(loaded.problems.length, 2)
  }
})

t.test('the refusal explains itself; a listing it empties says why', async (t) => {
  const late = facts('2026-03-01T18:00:00Z')
  const denied = evaluator.evaluate(late, 'admission')
  t.equal(explainRefusal(denied, late, rules, NOW)?.message, `worm-target@1.0.1 was published 2026-03-01T18:00:00.000Z, after the freeze at ${AT}; denied by DenyIfPublishedAfter (rule 1). Pin a version published before it`)
  const timeless = facts(undefined)
  t.equal(explainRefusal(evaluator.evaluate(timeless, 'admission'), timeless, rules, NOW)?.message, `worm-target@1.0.1 has no publish time from the public registry, so it cannot be shown to predate the freeze at ${AT}; denied by DenyIfPublishedAfter (rule 1)`)
  const withholding = withholdingOf([denied, denied], 0)
  t.same(withholding, { code: 'POLICY_WITHHELD', causes: { freeze: 2 } })
  t.equal(withholdingSentence({ freeze: 2 }), 'every public version is withheld by policy: 2 published after the freeze, or without a publish time (DenyIfPublishedAfter)')
})
