/**
 * `AllowIfRemediatesCve`: admits a version that fixes a known advisory, so a
 * security fix published inside the quarantine is not held back by it
 * (SPEC.md 1.7).
 *
 * It abstains when it has no database, when the evidence is too old (a push
 * at or past the maximum age, SPEC.md 3.5), on a lookup fault or an open
 * breaker: it never blocks and never reports an outage (SPEC.md 3.3). It
 * also abstains when any advisory affects the version itself: fixing one
 * advisory is no reason to admit a version another advisory (or a malware
 * record) names, whatever the order of the rules.
 */
import type { Phase } from './decision.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { AllowIfRemediatesCveConfig } from './rule-schema.js'

export function allowIfRemediatesCve(_config: AllowIfRemediatesCveConfig, phases: ReadonlySet<Phase>): Rule {
  return {
    kind: 'AllowIfRemediatesCve',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      const access = scope.advisory()
      if (access.state !== 'ready') return ABSTAIN
      try {
        const remediated = access.database.remediating(facts.name, facts.version)
        if (remediated.length === 0) return ABSTAIN
        if (access.database.affecting(facts.name, facts.version).length > 0) return ABSTAIN
        return { kind: 'decide', verdict: 'admit', reason: 'remediates', evidence: remediated.map((m) => m.id) }
      } catch {
        // A lookup fault leaves this rule without evidence; it abstains (SPEC.md 1.7).
        return ABSTAIN
      }
    },
  }
}
