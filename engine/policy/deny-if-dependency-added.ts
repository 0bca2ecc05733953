/**
 * `DenyIfDependencyAdded` (issue 31 item 5): a public version that depends
 * on a package name its previous version did not (in `dependencies`,
 * `optionalDependencies` or `peerDependencies`, engine/packument/
 * manifest-changes.ts) is withheld until it is `seconds` old (from the
 * upstream's publish time); from then on the rule abstains. One 2026
 * compromise shipped its payload as a brand-new dependency.
 *
 * "Previous version" is DenyIfInstallScriptAdded's (engine/packument/
 * version-history.ts). The age is checked first: a version past its
 * quarantine costs no comparison. A first version is not judged; a version
 * without a publish time that adds a dependency stays withheld.
 */
import type { Phase } from './decision.js'
import { inQuarantine } from './history-quarantine.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfDependencyAddedConfig } from './rule-schema.js'

export function denyIfDependencyAdded(config: DenyIfDependencyAddedConfig, phases: ReadonlySet<Phase>): Rule {
  const quarantineMs = config.seconds * 1000
  return {
    kind: 'DenyIfDependencyAdded',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      if (!inQuarantine(facts, scope.now, quarantineMs)) return ABSTAIN
      const addition = facts.dependencyAddition
      if (addition === undefined) return ABSTAIN
      const evidence = Object.freeze(addition.names.map((name) => `dependency ${name} added since ${addition.since}`))
      return Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'dependency_added', evidence })
    },
  }
}
