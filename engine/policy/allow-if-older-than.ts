/**
 * `AllowIfOlderThan`: the quarantine (SPEC.md 1.7). Admits a version whose
 * upstream publish time (`facts.publishedAt`, the packument's `time[version]`,
 * never when we first saw it) is at least `seconds` ago; abstains when it is
 * younger, in the future or unknown.
 */
import type { Phase } from './decision.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { AllowIfOlderThanConfig } from './rule-schema.js'

export function allowIfOlderThan(config: AllowIfOlderThanConfig, phases: ReadonlySet<Phase>): Rule {
  const quarantineMs = config.seconds * 1000
  return {
    kind: 'AllowIfOlderThan',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      const published = facts.publishedAt?.getTime()
      if (published === undefined || Number.isNaN(published)) return ABSTAIN
      if (scope.now - published < quarantineMs) return ABSTAIN
      return { kind: 'decide', verdict: 'admit', reason: 'quarantine', evidence: [`published ${facts.publishedAt?.toISOString()}`] }
    },
  }
}
