/**
 * `DenyIfInstallScriptChanged` (issue 31 item 5): a public version whose
 * `preinstall`, `install` or `postinstall` is new or differs from its
 * previous version's is withheld until it is `seconds` old (from the
 * upstream's publish time); from then on the rule abstains and the rules
 * after it decide. Unlike DenyIfInstallScriptAdded it also catches a hook
 * that already existed and was rewritten, as in one 2025 compromise.
 *
 * "Previous version" is DenyIfInstallScriptAdded's (engine/packument/
 * version-history.ts), and what counts as a change is engine/packument/
 * manifest-changes.ts's. The age is checked first: a version past its
 * quarantine costs no comparison. A first version is not judged; a version
 * without a publish time that changed its scripts stays withheld.
 */
import type { Phase } from './decision.js'
import { inQuarantine } from './history-quarantine.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfInstallScriptChangedConfig } from './rule-schema.js'

export function denyIfInstallScriptChanged(config: DenyIfInstallScriptChangedConfig, phases: ReadonlySet<Phase>): Rule {
  const quarantineMs = config.seconds * 1000
  return {
    kind: 'DenyIfInstallScriptChanged',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      if (!inQuarantine(facts, scope.now, quarantineMs)) return ABSTAIN
      const change = facts.installScriptChange
      if (change === undefined) return ABSTAIN
      const evidence = [
        ...change.added.map((hook) => `${hook} added since ${change.since}`),
        ...change.changed.map((hook) => `${hook} changed since ${change.since}`),
      ]
      return Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'install_script_changed', evidence: Object.freeze(evidence) })
    },
  }
}
