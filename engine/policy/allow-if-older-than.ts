/**
 * `AllowIfOlderThan`: the quarantine (SPEC.md 1.7). Admits a version whose
 * upstream publish time (`facts.publishedAt`, the packument's `time[version]`,
 * never when we first saw it) is at least `seconds` ago; abstains when it is
 * younger, in the future or unknown.
 *
 * The admit is one frozen outcome built with the rule: its evidence names
 * the quarantine it passed, not the version's publish time (which the
 * caller's facts already hold), so admitting allocates nothing.
 */
import type { Phase } from './decision.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { AllowIfOlderThanConfig } from './rule-schema.js'

export function allowIfOlderThan(config: AllowIfOlderThanConfig, phases: ReadonlySet<Phase>): Rule {
  const quarantineMs = config.seconds * 1000
  const admit: RuleOutcome = Object.freeze({
    kind: 'decide',
    verdict: 'admit',
    reason: 'quarantine',
    evidence: Object.freeze([`published at least ${config.seconds} s ago`]),
  })
  return {
    kind: 'AllowIfOlderThan',
    phases,
    onUnavailable: undefined,
    evaluate(facts, scope): RuleOutcome {
      const published = facts.publishedMs ?? facts.publishedAt?.getTime()
      // No time, or NaN (an unreadable one), fails this comparison too, and abstains.
      if (published === undefined || !(scope.now - published >= quarantineMs)) return ABSTAIN
      return admit
    },
  }
}
