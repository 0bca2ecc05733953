/**
 * The policy document (issue 31 item 1): validated whole (every problem at
 * once), applied whole on a reload (every mount swapped, generation moved),
 * refused whole (the policy in force stays, one error line, counted), and
 * unchanged when its digest is the one in force.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { Config } from '../../engine/config/config.js'
import { parsePolicyDocument } from '../../engine/config/policy-document.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { bootPolicy, POLICY_APPLIED, POLICY_REFUSED, PolicyReloader, withPolicyRules } from '../../server/roles/policy-reloader.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

const NOW = Date.parse('2026-01-01T00:00:00Z')
const quarantine: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 7 * 86_400 }]

t.test('a valid document: YAML or JSON, mounts optional, a stable digest', async (t) => {
  const yaml = parsePolicyDocument(`
mounts:
  js:
    rules:
      - { rule: DenyIfPublishedAfter, at: "2026-01-01T00:00:00Z" }
      - { rule: AllowIfOlderThan, seconds: 0 }
waivers:
  - { package: a, versions: "1.0.0", reason: r, by: me, expires: "2026-01-02T00:00:00Z" }
`, false, NOW)
  t.ok(yaml.ok)
  const json = parsePolicyDocument(JSON.stringify({
    mounts: { js: { rules: [{ rule: 'DenyIfPublishedAfter', at: '2026-01-01T00:00:00Z' }, { rule: 'AllowIfOlderThan', seconds: 0 }] } },
    waivers: [{ package: 'a', versions: '1.0.0', reason: 'r', by: 'me', expires: '2026-01-02T00:00:00Z' }],
  }), true, NOW)
  t.ok(json.ok)
  if (yaml.ok && json.ok) t.equal(yaml.digest, json.digest, 'the same document, the same digest, whatever its form')
  t.match(parsePolicyDocument('', false, NOW), { ok: true, document: {} }, 'an empty document sets nothing')
})

t.test('an invalid document: every problem named at once', async (t) => {
  const read = parsePolicyDocument(JSON.stringify({
    mounts: { js: { rules: [{ rule: 'AllowIfOlderThan', seconds: -1 }, { rule: 'Nope' }] } },
    waivers: [{ package: 'a', versions: '1.0.0', reason: 'r', by: 'me' }],
    extra: true,
  }), true, NOW)
  t.equal(read.ok, false)
  if (read.ok) return
  t.ok(read.problems.some((p) => p.startsWith('extra: ')), 'an unknown key')
  t.ok(read.problems.some((p) => p.startsWith('mounts.js.rules.0.seconds')), 'a rule option')
  t.ok(read.problems.some((p) => p.startsWith('mounts.js.rules.1.rule')), 'an unknown rule kind')
  t.ok(read.problems.some((p) => p.startsWith('waivers.0')), 'a waiver without its expiry')
  const checks = parsePolicyDocument(JSON.stringify({
    mounts: { js: { rules: [{ rule: 'DenyIfPublishedAfter', at: '2026-02-30T00:00:00Z' }] } },
    waivers: [{ package: 'a', versions: '1.0.0', reason: 'r', by: 'me', expires: '2026-06-01T00:00:00Z' }],
  }), true, NOW)
  t.match(checks, { ok: false, problems: [/^mounts\.js\.rules\[0\] \(DenyIfPublishedAfter\) at: /, /^waivers\[0\] .* more than 30 days away/] })
  t.match(parsePolicyDocument('mounts: [', false, NOW), { ok: false, problems: [/line 1/] }, 'a syntax error is located, not quoted')
  t.match(parsePolicyDocument('[]', true, NOW), { ok: false, problems: ['the policy document is not a mapping'] })
})

async function fixture(t: Test, text: string) {
  const dir = await mkdtemp(join(tmpdir(), 'policy-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'policy.yaml')
  await writeFile(file, text)
  const clock = new ManualClock(NOW)
  const logger = new RecordingLogger()
  const config = { policy: { file, pollSeconds: 0 }, mounts: { js: { rules: quarantine } } } as unknown as Config
  const boot = await bootPolicy(config, clock, logger)
  if (boot === undefined) throw new Error('no boot policy')
  const effective = withPolicyRules(config, boot)
  const policy = mountPolicy({ ecosystem: 'js', rules: effective.mounts.js?.rules ?? [], waivers: boot.document.waivers ?? [], configuredMaxAgeSeconds: 0, slot: new AdvisorySlot(), logger, clock })
  const reloader = new PolicyReloader({ boot, mounts: new Map([['js', { policy, configured: quarantine }]]), pollSeconds: 0, logger, clock })
  const fresh: VersionFacts = { ecosystem: 'js', name: 'left-pad', version: '1.0.1', publishedAt: new Date(NOW - 3_600_000) }
  const verdict = (): string => policy.evaluator.evaluate(fresh, 'admission').verdict
  return { file, logger, policy, reloader, verdict, config }
}

t.test('a reload applies a changed document whole and moves the generation; the same one again changes nothing', async (t) => {
  const { file, logger, policy, reloader, verdict } = await fixture(t, 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: 0 } ] } }\n')
  t.equal(verdict(), 'admit', 'the boot document\'s rules, not the configured quarantine')
  t.match(logger.find(POLICY_APPLIED).map((r) => r.data), [{ trigger: 'boot', file, waivers: 0, mounts: ['js'] }])
  const before = policy.generation()
  await reloader.reload('sighup')
  t.same(reloader.counts, { applied: 0, unchanged: 1, refused: 0 })
  t.equal(policy.generation(), before, 'an unchanged document keeps the retained answers')
  await writeFile(file, 'waivers: []\n')
  await reloader.reload('sighup')
  t.same(reloader.counts, { applied: 1, unchanged: 1, refused: 0 })
  t.equal(verdict(), 'deny', 'a mount the document no longer names goes back to its configured rules')
  t.not(policy.generation(), before)
  t.equal(logger.find(POLICY_APPLIED).length, 2)
})

t.test('a bad document is refused whole: the policy in force stays, one error line names every problem', async (t) => {
  const { file, logger, policy, reloader, verdict } = await fixture(t, 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: 0 } ] } }\n')
  const before = policy.generation()
  // One valid change (js rules) beside two invalid ones: none of it applies.
  await writeFile(file, 'mounts: { js: { rules: [ { rule: DenyIfPublishedAfter, at: "tomorrow" } ] } }\nwaivers: [ { package: a, versions: "1", reason: r, by: me } ]\n')
  await reloader.reload('poll')
  t.equal(verdict(), 'admit')
  t.equal(policy.generation(), before)
  const refused = logger.find(POLICY_REFUSED)
  t.equal(refused.length, 1)
  t.equal(refused[0]?.level, 'error')
  t.match(refused[0]?.data, { trigger: 'poll', file, message: /^policy document .* refused, \d+ problems?: / })
  t.ok(((refused[0]?.data['problems'] as string[]) ?? []).length >= 1)
  await rm(file)
  await reloader.reload('sighup')
  t.match(logger.find(POLICY_REFUSED)[1]?.data, { trigger: 'sighup', problems: [/^cannot read /] }, 'a vanished file is refused too')
  t.equal(verdict(), 'admit')
  await writeFile(file, 'mounts: { js: { rules: [ { rule: DenyIfCve } ] } }\n')
  await reloader.reload('sighup')
  t.match(logger.find(POLICY_REFUSED)[2]?.data, { problems: [/advisory database, which this role did not open at boot; restart/] })
  t.same(reloader.counts, { applied: 0, unchanged: 0, refused: 3 })
})

t.test('boot: an unreadable or invalid document stops the role with CONFIG_INVALID (exit 2)', async (t) => {
  const clock = new ManualClock(NOW)
  const logger = new RecordingLogger()
  const missing = { policy: { file: join(tmpdir(), 'no-such-policy.yaml'), pollSeconds: 0 }, mounts: {} } as unknown as Config
  await t.rejects(bootPolicy(missing, clock, logger), { code: 'CONFIG_INVALID', message: /cannot read/ })
  t.equal(await bootPolicy({ policy: { pollSeconds: 30 }, mounts: {} } as unknown as Config, clock, logger), undefined, 'no policy.file: nothing read')
})
