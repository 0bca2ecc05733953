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
import type { AdvisoryMatch } from '../advisory/artifact/database.js'
import type { Phase } from './decision.js'
import { RecentMemo } from './recent-memo.js'
import { ABSTAIN, sameMatches, type Rule, type RuleOutcome } from './rule.js'
import type { AllowIfRemediatesCveConfig } from './rule-schema.js'

export function allowIfRemediatesCve(_config: AllowIfRemediatesCveConfig, phases: ReadonlySet<Phase>): Rule {
  // Recent admits by the lookup result they came from (see sameMatches).
  const admits = new RecentMemo<readonly AdvisoryMatch[], RuleOutcome>(8, sameMatches)
  return {
    kind: 'AllowIfRemediatesCve',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      const access = scope.advisory()
      if (access.state !== 'ready') return ABSTAIN
      try {
        const remediated = scope.remediating(access.database)
        if (remediated.length === 0) return ABSTAIN
        if (scope.affecting(access.database).length > 0) return ABSTAIN
        const known = admits.get(remediated)
        if (known !== undefined) return known
        const admit: RuleOutcome = Object.freeze({ kind: 'decide', verdict: 'admit', reason: 'remediates', evidence: Object.freeze(remediated.map((m) => m.id)) })
        admits.set(remediated, admit)
        return admit
      } catch {
        // A lookup fault leaves this rule without evidence; it abstains (SPEC.md 1.7).
        return ABSTAIN
      }
    },
  }
}
