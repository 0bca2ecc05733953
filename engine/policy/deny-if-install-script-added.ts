/**
 * `DenyIfInstallScriptAdded` (issue 17 item 6): a public version that has an
 * install script (`preinstall`, `install` or `postinstall`, or
 * `hasInstallScript: true`) where its previous version had none is withheld
 * until it is `seconds` old (from the upstream's publish time); from then on
 * the rule abstains and the rules after it decide. A hijacked account's
 * postinstall is the classic payload; a quarantine on just that change
 * leaves ordinary releases alone.
 *
 * "Previous version" (engine/packument/version-history.ts): the greatest
 * version lower by semver among the versions published before this one (by
 * the document's `time`), so a backport 1.0.1 is compared with 1.0.0, not
 * with a 2.0.0 published in between. A first version with a script has no
 * previous version and is not judged. A version without a publish time is
 * compared with the greatest lower version of any time, and stays withheld
 * (its age is unknown), as AllowIfOlderThan never admits it either.
 */
import type { Phase } from './decision.js'
import { inQuarantine } from './history-quarantine.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfInstallScriptAddedConfig } from './rule-schema.js'

export function denyIfInstallScriptAdded(config: DenyIfInstallScriptAddedConfig, phases: ReadonlySet<Phase>): Rule {
  const quarantineMs = config.seconds * 1000
  return {
    kind: 'DenyIfInstallScriptAdded',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      if (facts.installScript !== true) return ABSTAIN
      const previous = facts.scriptAddedAfter
      if (previous === undefined) return ABSTAIN
      // Old enough: the quarantine is over. No time, or an unreadable one, never is.
      if (!inQuarantine(facts, scope.now, quarantineMs)) return ABSTAIN
      return Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'install_script_added', evidence: Object.freeze([`install script added since ${previous}`]) })
    },
  }
}
