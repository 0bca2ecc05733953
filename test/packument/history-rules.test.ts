/**
 * DenyIfTrustDowngrade and DenyIfInstallScriptAdded on fixture histories,
 * through the packument pipeline as the worker runs it (scanner flags, merge,
 * the mount's evaluator), in both forms, and the selected-version records
 * the artifact route gates on again.
 */
import t from 'tap'
import type { Decide } from '../../engine/packument/merge.js'
import { runPackumentPipeline, type PackumentOutcome } from '../../engine/packument/pipeline.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { manifest, utf8 } from './helpers.js'

const NOW = Date.UTC(2026, 0, 10)
const HOUR = 3_600_000
const DAY = 24 * HOUR

interface Release {
  readonly version: string
  /** ms since the epoch; undefined: no `time` entry. */
  readonly at: number | undefined
  readonly extra?: Record<string, unknown>
}

const PROVENANCE = { predicateType: 'https://slsa.dev/provenance/v1' }

function withProvenance(name: string, version: string): Record<string, unknown> {
  const base = manifest(name, version)
  return { dist: { ...(base['dist'] as object), attestations: { url: 'https://upstream.test/attestations', provenance: PROVENANCE } } }
}

function trustedPublisher(name: string, version: string): Record<string, unknown> {
  return { ...withProvenance(name, version), _npmUser: { name: 'GitHub Actions', email: 'npm@example.test', trustedPublisher: { id: 'github', oidcConfigId: 'oidc:1' } } }
}

function document(name: string, releases: readonly Release[]): Uint8Array {
  const time: Record<string, string> = { created: new Date(Date.UTC(2020, 0, 1)).toISOString(), modified: new Date(NOW - HOUR).toISOString() }
  for (const r of releases) if (r.at !== undefined) time[r.version] = new Date(r.at).toISOString()
  return utf8(JSON.stringify({
    _id: name,
    name,
    'dist-tags': { latest: releases[releases.length - 1]!.version },
    versions: Object.fromEntries(releases.map((r) => [r.version, { ...manifest(name, r.version), ...r.extra }])),
    time,
  }))
}

function gate(rules: readonly RuleConfig[]): { decide: Decide; evaluate: (facts: VersionFacts) => Decision } {
  const evaluator = createEvaluator(rules, { ecosystem: 'js', database: undefined, clock: { now: () => NOW }, maxAgeSeconds: 86_400 })
  const evaluate = (facts: VersionFacts): Decision => evaluator.evaluate(facts, 'admission')
  return { decide: Object.assign(evaluate, { needs: evaluator.needs }), evaluate }
}

const RULES: readonly RuleConfig[] = [
  { rule: 'DenyIfTrustDowngrade' },
  { rule: 'DenyIfInstallScriptAdded', seconds: 86_400 },
  { rule: 'AllowIfOlderThan', seconds: 0 },
]

function run(name: string, releases: readonly Release[], rules = RULES, abbreviated = false): { outcome: PackumentOutcome; kept: string[]; evaluate: (facts: VersionFacts) => Decision } {
  const { decide, evaluate } = gate(rules)
  const outcome = runPackumentPipeline({ packageName: name, baseUrl: 'http://proxy.test', abbreviated, decide, privateEtag: undefined, publicEtag: undefined }, undefined, [document(name, releases)])
  const body = outcome.body === undefined ? { versions: {} } : JSON.parse(new TextDecoder().decode(outcome.body)) as { versions: Record<string, unknown> }
  return { outcome, kept: Object.keys(body.versions).sort(), evaluate }
}

/** The artifact route's gate: the selected-version record's facts, without the document. */
function artifactDecision(outcome: PackumentOutcome, evaluate: (facts: VersionFacts) => Decision, name: string, version: string): Decision {
  const record = outcome.selected.find((s) => s.version === version)
  if (record === undefined) throw new Error(`no selected record for ${version}`)
  return evaluate({ ...record.history, ecosystem: 'js', name, version, publishedAt: record.publishedAt === undefined ? undefined : new Date(record.publishedAt) })
}

for (const abbreviated of [false, true]) {
  const form = abbreviated ? 'abbreviated' : 'full'

  t.test(`${form}: provenance, then a version without it, is a downgrade`, async (t) => {
    const name = 'prov-pkg'
    const releases: Release[] = [
      { version: '1.0.0', at: NOW - 30 * DAY },
      { version: '1.1.0', at: NOW - 20 * DAY, extra: withProvenance(name, '1.1.0') },
      { version: '1.2.0', at: NOW - 10 * DAY },
      { version: '1.3.0-beta.1', at: NOW - 5 * DAY },
      { version: '1.3.0', at: NOW - 2 * DAY, extra: withProvenance(name, '1.3.0') },
    ]
    const { outcome, kept, evaluate } = run(name, releases, RULES, abbreviated)
    t.same(kept, ['1.0.0', '1.1.0', '1.3.0'], 'the versions without provenance after 1.1.0 are withheld; 1.0.0 came before any')
    for (const version of ['1.2.0', '1.3.0-beta.1']) {
      const decision = artifactDecision(outcome, evaluate, name, version)
      t.equal(decision.verdict, 'deny', `${version}: the artifact path refuses it too`)
      t.equal(decision.rule, 'DenyIfTrustDowngrade')
      t.equal(decision.reason, 'trust_downgrade')
      t.same(decision.evidence, ['trust: no trust evidence', 'earlier: 1.1.0 with a provenance attestation'], 'both levels and the earlier version')
      const explained = explainRefusal(decision, { ecosystem: 'js', name, version, publishedAt: undefined }, RULES, NOW)
      t.match(explained?.message, /less trust than an earlier version.*1\.1\.0 with a provenance attestation.*DenyIfTrustDowngrade \(rule 1\)/)
    }
    t.equal(artifactDecision(outcome, evaluate, name, '1.3.0').verdict, 'admit')
  })

  t.test(`${form}: a trusted publisher, then provenance only, is a downgrade; earlier is by time, not semver`, async (t) => {
    const name = 'tp-pkg'
    const releases: Release[] = [
      { version: '1.0.0', at: NOW - 30 * DAY, extra: trustedPublisher(name, '1.0.0') },
      { version: '1.1.0', at: NOW - 20 * DAY, extra: withProvenance(name, '1.1.0') },
      { version: '1.2.0', at: NOW - 10 * DAY, extra: trustedPublisher(name, '1.2.0') },
      // A backport of an older line published later still follows the trusted publisher of 1.0.0.
      { version: '0.9.1', at: NOW - 5 * DAY, extra: withProvenance(name, '0.9.1') },
    ]
    const { outcome, kept, evaluate } = run(name, releases, RULES, abbreviated)
    t.same(kept, ['1.0.0', '1.2.0'])
    const decision = artifactDecision(outcome, evaluate, name, '1.1.0')
    t.same(decision.evidence, ['trust: a provenance attestation', 'earlier: 1.0.0 with a trusted publisher'])
    t.equal(artifactDecision(outcome, evaluate, name, '0.9.1').verdict, 'deny')

    const later = run('late-pkg', [
      { version: '1.0.1', at: NOW - 20 * DAY },
      { version: '2.0.0', at: NOW - 30 * DAY, extra: trustedPublisher('late-pkg', '2.0.0') },
      { version: '1.0.2', at: NOW - 10 * DAY },
    ], RULES, abbreviated)
    t.same(later.kept, ['2.0.0'], '1.0.2, published after 2.0.0, is a downgrade; 1.0.1 was published before it')
    t.ok(later.outcome.selected.some((s) => s.version === '1.0.1'))
  })

  t.test(`${form}: a stable version is compared with earlier stable versions only (pnpm's reading)`, async (t) => {
    const name = 'pre-pkg'
    const { kept } = run(name, [
      { version: '1.0.0-rc.1', at: NOW - 20 * DAY, extra: withProvenance(name, '1.0.0-rc.1') },
      { version: '1.0.0', at: NOW - 10 * DAY },
      { version: '1.1.0-rc.1', at: NOW - 5 * DAY },
    ], RULES, abbreviated)
    t.same(kept, ['1.0.0', '1.0.0-rc.1'], 'the stable 1.0.0 passes; the prerelease 1.1.0-rc.1 is compared with every earlier version')
  })

  t.test(`${form}: an install script added is withheld until older than the quarantine`, async (t) => {
    const name = 'script-pkg'
    const releases: Release[] = [
      { version: '1.0.0', at: NOW - 40 * DAY },
      { version: '1.1.0', at: NOW - 30 * DAY, extra: { scripts: { postinstall: 'node aged.js' } } },
      { version: '1.2.0', at: NOW - 20 * DAY },
      { version: '2.0.0', at: NOW - 10 * DAY },
      // Added after 1.2.0 had none, published an hour ago.
      { version: '2.1.0', at: NOW - HOUR, extra: { scripts: { preinstall: 'curl evil' } } },
      // A backport: its previous version is 1.2.0 (no script), not 2.1.0 published before it.
      { version: '1.2.1', at: NOW - HOUR / 2, extra: { scripts: { install: 'node-gyp rebuild' } } },
      // npm's own flag counts too; its previous version 2.1.0 has a script, so nothing is added.
      { version: '2.1.1', at: NOW - HOUR / 4, extra: { hasInstallScript: true } },
    ]
    const { outcome, kept, evaluate } = run(name, releases, RULES, abbreviated)
    t.same(kept, ['1.0.0', '1.1.0', '1.2.0', '2.0.0', '2.1.1'], '1.1.0 added a script long ago and is past the quarantine')
    const decision = artifactDecision(outcome, evaluate, name, '2.1.0')
    t.equal(decision.rule, 'DenyIfInstallScriptAdded')
    t.same(decision.evidence, ['install script added since 2.0.0'])
    const backport = artifactDecision(outcome, evaluate, name, '1.2.1')
    t.same(backport.evidence, ['install script added since 1.2.0'], 'the previous version is the greatest lower one published before it')
    const explained = explainRefusal(decision, { ecosystem: 'js', name, version: '2.1.0', publishedAt: new Date(NOW - HOUR), scriptAddedAfter: '2.0.0' }, RULES, NOW)
    t.equal(explained?.admittedFrom, new Date(NOW - HOUR + DAY).toISOString(), 'the 403 sentence says when the quarantine ends')
    t.match(explained?.message, /adds an install script .* that 2\.0\.0 did not have.*until 2026-01-10T23:00:00\.000Z/)

    const flagged = run('flag-pkg', [
      { version: '1.0.0', at: NOW - 40 * DAY },
      { version: '1.0.1', at: NOW - HOUR, extra: { hasInstallScript: true } },
      { version: '1.0.2', at: NOW - HOUR / 2, extra: { hasInstallScript: false } },
    ], RULES, abbreviated)
    t.same(flagged.kept, ['1.0.0', '1.0.2'], '`hasInstallScript: true` alone counts; false does not')

    const first = run('first-pkg', [{ version: '1.0.0', at: NOW - HOUR, extra: { scripts: { postinstall: 'x' } } }], RULES, abbreviated)
    t.same(first.kept, ['1.0.0'], 'a first version has no previous version: not judged')
  })
}

t.test('a version without a publish time', async (t) => {
  const name = 'untimed-pkg'
  const { outcome, kept, evaluate } = run(name, [
    { version: '1.0.0', at: NOW - 30 * DAY, extra: withProvenance(name, '1.0.0') },
    { version: '1.1.0', at: undefined },
  ])
  t.same(kept, ['1.0.0'])
  const decision = artifactDecision(outcome, evaluate, name, '1.1.0')
  t.equal(decision.rule, 'DenyIfTrustDowngrade', 'is compared with every other version, so the downgrade is seen')
  t.same(decision.evidence, ['trust: no trust evidence', 'earlier: 1.0.0 with a provenance attestation'])
})

t.test('packages: a rule whose selector does not match abstains', async (t) => {
  const name = 'prov-pkg'
  const releases: Release[] = [
    { version: '1.0.0', at: NOW - 30 * DAY, extra: withProvenance(name, '1.0.0') },
    { version: '1.1.0', at: NOW - HOUR, extra: { scripts: { postinstall: 'x' } } },
  ]
  t.same(run(name, releases, [{ rule: 'DenyIfTrustDowngrade', packages: ['@other/*', 'prov-*'] }, { rule: 'AllowIfOlderThan', seconds: 0 }]).kept, ['1.0.0'])
  t.same(run(name, releases, [
    { rule: 'DenyIfTrustDowngrade', packages: ['@other/*', 'left-pad'] },
    { rule: 'DenyIfInstallScriptAdded', seconds: 86_400, packages: ['other'] },
    { rule: 'AllowIfOlderThan', seconds: 0 },
  ]).kept, ['1.0.0', '1.1.0'], 'neither rule speaks about prov-pkg')
})

t.test('no history rule: no history facts are read or carried', async (t) => {
  const name = 'prov-pkg'
  const { outcome, kept } = run(name, [
    { version: '1.0.0', at: NOW - 30 * DAY, extra: withProvenance(name, '1.0.0') },
    { version: '1.1.0', at: NOW - HOUR, extra: { scripts: { postinstall: 'x' } } },
  ], [{ rule: 'AllowIfOlderThan', seconds: 0 }])
  t.same(kept, ['1.0.0', '1.1.0'])
  t.ok(outcome.selected.every((s) => s.history === undefined), 'the selected records carry no history')
})
