/**
 * `DenyIfMalicious` (issue 31 item 4): denies the versions an OSV `MAL-`
 * record names, matched exactly in the compiled database; its own reason,
 * evidence and sentence; waivers do not pass it unless they override
 * malware; and the private side's judgement (private-malware-gate.ts):
 * first-party names, outages and names without a record are never refused.
 */
import t from 'tap'
import { ArtifactBuilder } from '../../engine/advisory/pilot/artifact-writer.js'
import { loadAdvisoryArtifact } from '../../engine/advisory/artifact/compiled-database.js'
import type { AdvisoryDatabase } from '../../engine/advisory/artifact/database.js'
import type { OsvRecord } from '../../engine/advisory/artifact/osv-record.js'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { createEvaluator, ruleProblems } from '../../engine/policy/evaluator.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import { MALWARE_REFUSED_MESSAGE } from '../../engine/policy/malware-refusals.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import { privateMalwareGate } from '../../engine/policy/private-malware-gate.js'
import { RULE_SCHEMA, type RuleConfig } from '../../engine/policy/rule-schema.js'
import { createPolicyEvaluator } from '../../engine/policy/waived-evaluator.js'
import { MALWARE_RULE_KINDS, type WaiverConfig } from '../../engine/policy/waivers.js'
import { withholdingSentence } from '../../engine/listing/withholding.js'
import { Compile } from 'typebox/compile'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const NOW = Date.parse('2026-01-10T00:00:00Z')

function record(id: string, name: string, affected: { versions?: string[], introduced?: string, fixed?: string }): OsvRecord {
  return {
    id, modified: '2026-01-09T00:00:00Z',
    affected: [{
      package: { ecosystem: 'npm', name },
      ...(affected.versions === undefined ? {} : { versions: affected.versions }),
      ...(affected.introduced === undefined ? {} : { ranges: [{ type: 'SEMVER', events: [{ introduced: affected.introduced }, ...(affected.fixed === undefined ? [] : [{ fixed: affected.fixed }])] }] }),
    }],
  } as OsvRecord
}

function compiled(records: readonly OsvRecord[]): AdvisoryDatabase {
  const b = new ArtifactBuilder('js')
  for (const r of records) b.add(r)
  const bytes = b.build({ compiledAt: new Date(NOW - 3_600_000), osvSource: '127.0.0.1:1', osvSourceUrl: 'http://127.0.0.1:1/npm/all.zip', epss: undefined, epssStatus: 'unavailable', epssScoreDate: undefined })
  return loadAdvisoryArtifact(bytes, new Date(NOW - 60_000))
}

const database = compiled([
  record('MAL-2026-1', 'hijacked', { versions: ['1.0.1', '2.0.0-beta.1'] }),
  record('MAL-2026-2', 'typosquat', { introduced: '0' }),
  record('GHSA-aaaa-bbbb-cccc', 'hijacked', { introduced: '1.0.0', fixed: '1.0.2' }),
  record('GHSA-dddd-eeee-ffff', 'vulnerable', { introduced: '0', fixed: '2.0.0' }),
  record('MAL-2026-3', '@acme/tool', { versions: ['1.0.0'] }),
])
const facts = (name: string, version: string): VersionFacts => ({ ecosystem: 'js', name, version, publishedAt: new Date(NOW - 86_400_000) })
const clock = new ManualClock(NOW)
const context = { ecosystem: 'js' as const, database, clock, maxAgeSeconds: 3 * 86_400 }
const rules: RuleConfig[] = [{ rule: 'DenyIfMalicious' }, { rule: 'AllowIfOlderThan', seconds: 0 }]

t.test('the compiled database keeps MAL records and matches their named versions exactly', async (t) => {
  t.equal(database.hasMalware?.('hijacked'), true)
  t.equal(database.hasMalware?.('typosquat'), true)
  t.equal(database.hasMalware?.('vulnerable'), false, 'a package with only a vulnerability advisory')
  t.equal(database.hasMalware?.('absent'), false, 'a package with no advisory')
  const ids = (name: string, version: string): string[] => database.affecting(name, version).map((m) => m.id).filter((id) => id.startsWith('MAL-'))
  t.same(ids('hijacked', '1.0.1'), ['MAL-2026-1'])
  t.same(ids('hijacked', '2.0.0-beta.1'), ['MAL-2026-1'], 'a listed pre-release')
  for (const version of ['1.0.0', '1.0.2', '1.0.1-rc.1', '1.0.10', '2.0.0', '2.0.0-beta.2']) t.same(ids('hijacked', version), [], `${version} is not named`)
  t.same(ids('typosquat', '0.0.1'), ['MAL-2026-2'], 'introduced 0: every version')
  t.same(ids('typosquat', '99.0.0'), ['MAL-2026-2'])
})

t.test('DenyIfMalicious denies what a MAL record names, with its reason and the ids as evidence', async (t) => {
  const evaluator = createEvaluator(rules, context)
  t.match(evaluator.evaluate(facts('hijacked', '1.0.1'), 'admission'), { verdict: 'deny', rule: 'DenyIfMalicious', ruleIndex: 0, reason: 'malware', evidence: ['MAL-2026-1'] })
  t.match(evaluator.evaluate(facts('hijacked', '1.0.1'), 'revocation'), { verdict: 'deny', reason: 'malware' }, 'both phases by default')
  t.match(evaluator.evaluate(facts('hijacked', '1.0.0'), 'admission'), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'a vulnerability advisory is not its business')
  t.match(evaluator.evaluate(facts('vulnerable', '1.0.0'), 'admission'), { verdict: 'admit' })
  t.match(evaluator.evaluate(facts('typosquat', '3.1.4'), 'admission'), { verdict: 'deny', evidence: ['MAL-2026-2'] })
  const admissionOnly = createEvaluator([{ rule: 'DenyIfMalicious', appliesTo: ['admission'] }], context)
  t.match(admissionOnly.evaluate(facts('hijacked', '1.0.1'), 'revocation'), { verdict: 'deny', rule: undefined, reason: 'default' }, 'appliesTo limits it')
  const decision = evaluator.evaluate(facts('hijacked', '1.0.1'), 'admission')
  t.match(explainRefusal(decision, facts('hijacked', '1.0.1'), rules, NOW)?.message, /^hijacked@1\.0\.1 is named by a malicious-package record: MAL-2026-1; denied by DenyIfMalicious \(rule 1\)/)
  t.match(withholdingSentence({ malware: 2 }), /2 named by a malicious-package record \(DenyIfMalicious\)/)
})

t.test('no database, or one past its maximum age: refuse by default, skip when told', async (t) => {
  const none = createEvaluator(rules, { ...context, database: undefined })
  t.match(none.evaluate(facts('hijacked', '1.0.1'), 'admission'), { verdict: 'unavailable' })
  const skipping = createEvaluator([{ rule: 'DenyIfMalicious', onUnavailable: 'skip' }, { rule: 'AllowIfOlderThan', seconds: 0 }], { ...context, database: undefined })
  t.match(skipping.evaluate(facts('hijacked', '1.0.1'), 'admission'), { verdict: 'admit', skipped: [{ rule: 'DenyIfMalicious' }] })
})

t.test('the rule schema accepts it with the shared options and refuses others', async (t) => {
  const check = Compile(RULE_SCHEMA)
  t.ok(check.Check({ rule: 'DenyIfMalicious' }))
  t.ok(check.Check({ rule: 'DenyIfMalicious', onUnavailable: 'skip', appliesTo: ['revocation'], packages: ['@acme/*'] }))
  t.notOk(check.Check({ rule: 'DenyIfMalicious', seconds: 1 }))
  t.same(ruleProblems('py', [{ rule: 'DenyIfMalicious' }]), [], 'valid on a py mount too')
})

const waiver: WaiverConfig = { package: 'hijacked', versions: '1.0.1', reason: 'INC-7', expires: '2026-01-11T00:00:00Z', by: 'sec' }

t.test('a waiver does not pass a malware record unless it says overrideMalware', async (t) => {
  t.ok(MALWARE_RULE_KINDS.has('DenyIfMalicious'))
  const held = createPolicyEvaluator(rules, [waiver], context)
  t.match(held.evaluate(facts('hijacked', '1.0.1'), 'admission'), { verdict: 'deny', rule: 'DenyIfMalicious', evidence: ['MAL-2026-1'] })
  const overriding = createPolicyEvaluator(rules, [{ ...waiver, overrideMalware: true }], context)
  t.match(overriding.evaluate(facts('hijacked', '1.0.1'), 'admission'), { verdict: 'admit', reason: 'waiver' })
})

t.test('the private side: only a MAL record refuses, never a first-party name, never during an outage', async (t) => {
  const gate = privateMalwareGate(rules, [], context, (name) => name.startsWith('@acme/'))
  if (gate === undefined) throw new Error('a DenyIfMalicious rule makes a gate')
  t.match(gate('hijacked', '1.0.1'), { verdict: 'deny', rule: 'DenyIfMalicious', ruleIndex: 0, evidence: ['MAL-2026-1'] })
  t.equal(gate('hijacked', '1.0.0'), undefined, 'a vulnerability advisory does not refuse a private version')
  t.equal(gate('vulnerable', '1.0.0'), undefined)
  t.equal(gate('@acme/tool', '1.0.0'), undefined, 'a first-party name is never judged')
  t.equal(privateMalwareGate([{ rule: 'AllowIfOlderThan', seconds: 0 }, { rule: 'DenyIfCve' }], [], context), undefined, 'no DenyIfMalicious: no gate')
  t.equal(privateMalwareGate([{ rule: 'DenyIfMalicious', appliesTo: ['revocation'] }], [], context), undefined, 'revocation only: the private side is not gated')
  const later = [{ rule: 'AllowIfOlderThan', seconds: 0 }, { rule: 'DenyIfMalicious' }] as RuleConfig[]
  t.match(privateMalwareGate(later, [], context)?.('hijacked', '1.0.1'), { ruleIndex: 1 }, 'its index in the whole list')
  t.equal(privateMalwareGate(rules, [], { ...context, database: undefined })?.('hijacked', '1.0.1'), undefined, 'no database: served as before')
  const stale = new ManualClock(NOW + 30 * 86_400_000)
  t.equal(privateMalwareGate(rules, [], { ...context, clock: stale })?.('hijacked', '1.0.1'), undefined, 'a database past its maximum age: served as before')
  t.equal(privateMalwareGate(rules, [{ ...waiver, overrideMalware: true }], context)?.('hijacked', '1.0.1'), undefined, 'an overriding waiver passes it')
  t.ok(privateMalwareGate(rules, [waiver], context)?.('hijacked', '1.0.1'), 'any other waiver does not')
})

t.test('the mount policy counts and logs malware refusals by side', async (t) => {
  const logger = new RecordingLogger()
  const slot = new AdvisorySlot()
  slot.swap({ database, shared: new SharedArrayBuffer(8), etag: '"1"', publishedAt: new Date(NOW - 60_000) } as never)
  const policy = mountPolicy({ ecosystem: 'js', rules, configuredMaxAgeSeconds: 0, slot, logger, clock, firstParty: { scopes: ['@acme'], owns: (name) => name.startsWith('@acme/') } })
  t.equal(policy.privateVerdict('@acme/tool', '1.0.0'), undefined)
  t.match(policy.privateVerdict('hijacked', '1.0.1'), { reason: 'malware' })
  t.match(policy.privateVerdict('hijacked', '1.0.1'), { reason: 'malware' })
  const decision = policy.evaluator.evaluate(facts('hijacked', '1.0.1'), 'admission')
  policy.observeDecision(facts('hijacked', '1.0.1'), decision)
  policy.observe({ observations: [{ version: '1.0.1', decision, private: true }], advisoryAnswered: [] }, 'hijacked')
  t.same(policy.malwareRefusals(), { public: 1, private: 3 })
  t.match(logger.find(MALWARE_REFUSED_MESSAGE), [{ level: 'warn', data: { package: 'hijacked', version: '1.0.1', side: 'private', advisories: ['MAL-2026-1'] } }, { data: { side: 'public' } }])
  t.equal(logger.find(MALWARE_REFUSED_MESSAGE).length, 2, 'once per version and side')
  t.same(policy.gateOptions().ownedScopes, ['@acme'], 'the workers get the scopes')
})
