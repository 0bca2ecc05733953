/**
 * Refusals that explain themselves (issue 17 item 5): the sentence a
 * developer reads in npm's 403 names the rule and the cause, and for a
 * quarantine the publish time and the moment it is admitted.
 */
import t from 'tap'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { refusalOf } from '../../server/routes/artifact-answers.js'

const NOW = Date.parse('2026-11-24T12:00:00Z')
const facts = (publishedAt?: string): VersionFacts => ({ ecosystem: 'js', name: 'left-pad', version: '1.3.0', publishedAt: publishedAt === undefined ? undefined : new Date(publishedAt) })
const decision = (over: Partial<Decision>): Decision => ({ verdict: 'deny', rule: undefined, ruleIndex: undefined, reason: 'default', evidence: [], skipped: [], advisory: [], ...over })
const rules: RuleConfig[] = [
  { rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' },
  { rule: 'DenyIfCve' },
  { rule: 'AllowIfOlderThan', seconds: 14 * 86_400 },
  { rule: 'AllowIfOlderThan', seconds: 7 * 86_400, appliesTo: ['admission'] },
  { rule: 'AllowIfOlderThan', seconds: 86_400, appliesTo: ['revocation'] },
] as RuleConfig[]

t.test('quarantine: the publish time, the shortest admission-phase quarantine, and when it ends', async (t) => {
  const e = explainRefusal(decision({}), facts('2026-11-22T10:00:00Z'), rules, NOW)
  t.equal(e?.message, 'left-pad@1.3.0 is in quarantine: published 2026-11-22T10:00:00.000Z, and AllowIfOlderThan (rule 4) admits versions 7 days old, so from 2026-11-29T10:00:00.000Z. Pin an older version until then')
  t.equal(e?.admittedFrom, '2026-11-29T10:00:00.000Z')
  const refusal = refusalOf(decision({}), e)
  t.equal(refusal?.status, 403)
  t.equal(refusal?.message, e?.message, 'the envelope text npm prints')
  t.match(refusal?.data, { rule: 'default', reason: 'default', admittedFrom: '2026-11-29T10:00:00.000Z' })
})

t.test('no publish time, no quarantine rule, or a quarantine already past', async (t) => {
  t.match(explainRefusal(decision({}), facts(), rules, NOW)?.message, /gives no publish time for it, so no quarantine rule can admit it/)
  t.match(explainRefusal(decision({}), facts('2026-11-22T10:00:00Z'), [{ rule: 'DenyIfCve' }] as RuleConfig[], NOW)?.message, /admits no public version by age/)
  t.match(explainRefusal(decision({}), facts('2020-01-01T00:00:00Z'), rules, NOW)?.message, /published 2020-01-01T00:00:00.000Z; no rule admitted it/)
})

t.test('advisories, identity and EPSS name the rule and the evidence', async (t) => {
  const cve = explainRefusal(decision({ rule: 'DenyIfCve', ruleIndex: 1, reason: 'cve', evidence: ['GHSA-aaaa-bbbb-cccc', 'CVE-2026-0001'] }), facts('2020-01-01T00:00:00Z'), rules, NOW)
  t.equal(cve?.message, 'left-pad@1.3.0 has known advisories: GHSA-aaaa-bbbb-cccc, CVE-2026-0001; denied by DenyIfCve (rule 2). Pick a version without them')
  const many = explainRefusal(decision({ rule: 'DenyIfCve', ruleIndex: 1, reason: 'cve', evidence: ['A', 'B', 'C', 'D', 'E', 'F', 'G'] }), facts(), rules, NOW)
  t.match(many?.message, /A, B, C, D, E and 2 more/)
  const identity = explainRefusal(decision({ rule: 'DenyIdentity', ruleIndex: 0, reason: 'identity' }), facts(), rules, NOW)
  t.equal(identity?.message, 'left-pad@1.3.0 is denied by name and version: DenyIdentity (rule 1) lists it')
  const epss = explainRefusal(decision({ rule: 'DenyIfEpss', ruleIndex: 2, reason: 'epss', evidence: ['CVE-2026-0002 epss=0.91'] }), facts(), rules, NOW)
  t.match(epss?.message, /above the exploit-probability threshold: CVE-2026-0002 epss=0\.91; denied by DenyIfEpss \(rule 3\)/)
  t.equal(explainRefusal(decision({ verdict: 'admit' }), facts(), rules, NOW), undefined)
})
