/**
 * Configuration of `packages` and the two history rules (issue 17 item 6):
 * accepted with their keys, refused at load (so at boot, exit 2, and by
 * `service check-config`) with every problem named: a bad pattern in the
 * mount's grammar, an empty list, an unknown key, a missing `seconds`. The
 * two supply-chain signals of issue 31 item 5 (DenyIfInstallScriptChanged,
 * DenyIfDependencyAdded) likewise, js mount only.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig, type LoadResult } from '../../engine/config/load.js'
import { createEvaluator, ruleProblems } from '../../engine/policy/evaluator.js'
import { needsAdvisoryDatabase } from '../../engine/policy/advisory-max-age.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'

async function load(t: Test, yaml: string): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), 'config-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  await writeFile(file, yaml)
  return loadConfig({ configPath: file, env: {}, npmRegistry: () => 'https://public.example/' })
}

t.test('accepted: packages on every rule kind, both history rules', async (t) => {
  const result = await load(t, `
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
    rules:
      - { rule: DenyIdentity, package: left-pad, versions: "1.3.0", packages: [left-pad] }
      - { rule: DenyIfTrustDowngrade, packages: ["@acme/*", "critical-*"] }
      - { rule: DenyIfInstallScriptAdded, seconds: 604800, appliesTo: [admission] }
      - { rule: AllowIfOlderThan, seconds: 86400, packages: ["@types/*"] }
      - { rule: AllowIfOlderThan, seconds: 604800 }
  py:
    upstreams: { public: { url: "https://public.example/py/" } }
    rules:
      - { rule: AllowIfOlderThan, seconds: 0, packages: ["Django_*"] }
`)
  if (!result.ok) t.fail(JSON.stringify(result.problems))
  t.ok(result.ok)
})

t.test('refused: bad patterns per ecosystem, empty lists, unknown keys, missing seconds', async (t) => {
  const result = await load(t, `
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
    rules:
      - { rule: DenyIfTrustDowngrade, packages: ["a/b"] }
      - { rule: DenyIfInstallScriptAdded }
      - { rule: AllowIfOlderThan, seconds: 0, packages: [] }
      - { rule: DenyIfTrustDowngrade, seconds: 5 }
      - { rule: DenyIfCve, packages: ["ok", "@scope"] }
  py:
    upstreams: { public: { url: "https://public.example/py/" } }
    rules:
      - { rule: AllowIfOlderThan, seconds: 0, packages: ["@scope/x"] }
      - { rule: DenyIfTrustDowngrade }
`)
  t.equal(result.ok, false)
  const found = result.ok ? [] : result.problems
  const paths = found.map((p) => p.path)
  t.ok(paths.includes('mounts.js.rules.0.packages.0'), 'a / without a scope')
  t.ok(paths.includes('mounts.js.rules.1.seconds') || paths.includes('mounts.js.rules.1'), 'DenyIfInstallScriptAdded needs seconds')
  t.ok(paths.some((p) => p.startsWith('mounts.js.rules.2.packages')), 'an empty list is refused')
  t.ok(paths.includes('mounts.js.rules.3.seconds'), 'DenyIfTrustDowngrade takes no seconds: unknown rule key')
  t.ok(paths.includes('mounts.js.rules.4.packages.1'), 'a scope without /*')
  t.ok(paths.includes('mounts.py.rules.0.packages.0'), 'py names have no scopes')
  t.ok(paths.includes('mounts.py.rules.1.rule'), 'the history rules read npm facts: js only')
  t.match(found.find((p) => p.path === 'mounts.js.rules.0.packages.0'), { message: /has a \/ but no @scope/ })
})

t.test('the evaluator refuses what the loader refuses', async (t) => {
  const rules: RuleConfig[] = [{ rule: 'AllowIfOlderThan', seconds: 0, packages: ['bad pattern'] }]
  t.equal(ruleProblems('js', rules).length, 1)
  t.throws(() => createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => 0 }, maxAgeSeconds: 1 }))
})

t.test('the history rules need no advisory database: readiness does not wait for one', async (t) => {
  t.equal(needsAdvisoryDatabase([{ rule: 'DenyIfTrustDowngrade' }, { rule: 'DenyIfInstallScriptAdded', seconds: 1 }, { rule: 'AllowIfOlderThan', seconds: 0 }]), false)
  const evaluator = createEvaluator([{ rule: 'DenyIfTrustDowngrade' }, { rule: 'DenyIfInstallScriptAdded', seconds: 1 }], { ecosystem: 'js', database: undefined, clock: { now: () => 0 }, maxAgeSeconds: 1 })
  t.same(evaluator.needs, { trust: true, installScripts: true })
  const decision = evaluator.evaluate({ ecosystem: 'js', name: 'p', version: '1.0.0', publishedAt: undefined, trust: 0, earlierTrust: { level: 1, version: '0.9.0' } }, 'admission')
  t.equal(decision.rule, 'DenyIfTrustDowngrade', 'decides without a database')
  t.same(decision.advisory, [], 'and no advisory observation')
})

t.test('the two signals: accepted on the js mount', async (t) => {
  const result = await load(t, `
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
    rules:
      - { rule: DenyIfInstallScriptChanged, seconds: 604800 }
      - { rule: DenyIfDependencyAdded, seconds: 259200, packages: ["@acme/*"], appliesTo: [admission] }
      - { rule: AllowIfOlderThan, seconds: 86400 }
`)
  if (!result.ok) t.fail(JSON.stringify(result.problems))
  t.ok(result.ok)
})

t.test('the two signals: refused without seconds, with an unknown key, on the py mount', async (t) => {
  const result = await load(t, `
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
    rules:
      - { rule: DenyIfInstallScriptChanged }
      - { rule: DenyIfDependencyAdded, seconds: 5, dev: true }
  py:
    upstreams: { public: { url: "https://public.example/py/" } }
    rules:
      - { rule: DenyIfInstallScriptChanged, seconds: 5 }
      - { rule: DenyIfDependencyAdded, seconds: 5 }
`)
  t.equal(result.ok, false)
  const paths = result.ok ? [] : result.problems.map((p) => p.path)
  t.ok(paths.includes('mounts.js.rules.0.seconds') || paths.includes('mounts.js.rules.0'), 'seconds is required')
  t.ok(paths.includes('mounts.js.rules.1.dev'), 'an unknown rule key')
  t.ok(paths.includes('mounts.py.rules.0.rule'), 'DenyIfInstallScriptChanged is js only')
  t.ok(paths.includes('mounts.py.rules.1.rule'), 'DenyIfDependencyAdded is js only')
  t.match(ruleProblems('py', [{ rule: 'DenyIfDependencyAdded', seconds: 5 }]), [/DenyIfDependencyAdded reads npm packument facts .* applies to the js mount only/])
})

t.test('the two signals: no advisory database; the facts they read and their longest quarantine', async (t) => {
  const rules = [{ rule: 'DenyIfInstallScriptChanged', seconds: 60 }, { rule: 'DenyIfDependencyAdded', seconds: 120 }] as const
  t.equal(needsAdvisoryDatabase(rules), false)
  const evaluator = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => 0 }, maxAgeSeconds: 1 })
  t.same(evaluator.needs, { trust: false, installScripts: false, scriptChanges: true, dependencies: true, signalsWithinMs: 120_000 })
  t.same(evaluator.ageSteps('p'), [60_000, 120_000], 'a retained answer is re-gated when either quarantine ends')
  const published = new Date(-30_000)
  const change = { since: '1.0.0', added: [], changed: ['postinstall'] }
  t.match(evaluator.evaluate({ ecosystem: 'js', name: 'p', version: '1.0.1', publishedAt: published, installScriptChange: change }, 'admission'),
    { verdict: 'deny', rule: 'DenyIfInstallScriptChanged', reason: 'install_script_changed', evidence: ['postinstall changed since 1.0.0'] })
  const old = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => 60_000 }, maxAgeSeconds: 1 })
  t.match(old.evaluate({ ecosystem: 'js', name: 'p', version: '1.0.1', publishedAt: published, installScriptChange: change, dependencyAddition: { since: '1.0.0', names: ['x'] } }, 'admission'),
    { verdict: 'deny', rule: 'DenyIfDependencyAdded', evidence: ['dependency x added since 1.0.0'] }, 'past the first quarantine, the second still holds')
  const older = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => 120_000 }, maxAgeSeconds: 1 })
  t.match(older.evaluate({ ecosystem: 'js', name: 'p', version: '1.0.1', publishedAt: published, installScriptChange: change, dependencyAddition: { since: '1.0.0', names: ['x'] } }, 'admission'),
    { verdict: 'deny', rule: undefined, reason: 'default' }, 'past both: they abstain, and no rule admits')
})
