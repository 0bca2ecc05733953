/**
 * `DenyIfPublishedAfter { at }` (issue 31 item 3): the freeze. Denies every
 * public version published upstream after the instant `at` (RFC 3339,
 * engine/policy/instant.ts), whatever its age: the standard response to a
 * worm that publishes from stolen accounts, since no quarantine length is
 * known to outlast it. A version published at or before `at` is left to the
 * rules after it.
 *
 * A version with no publish time (the public document gives none, or one
 * that is no date) is denied: it cannot be shown to predate the freeze, and
 * a worm's publish is exactly what must not slip through on a missing
 * field. `service policy freeze --at` puts this rule at the top of every
 * mount's rules, so it overrides every allow rule; a waiver still admits
 * the versions it names, since it is judged ahead of every rule
 * (engine/policy/waivers.ts says why).
 */
import type { Phase } from './decision.js'
import { parseInstant } from './instant.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfPublishedAfterConfig } from './rule-schema.js'

export function denyIfPublishedAfter(config: DenyIfPublishedAfterConfig, phases: ReadonlySet<Phase>): Rule {
  const at = parseInstant(config.at)
  // ruleProblems refuses an `at` that does not parse before any evaluator is built; NaN here denies everything, the safe side.
  const atMs = typeof at === 'number' ? at : NaN
  const after: RuleOutcome = Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'freeze', evidence: Object.freeze([`published after ${config.at}`]) })
  const unknown: RuleOutcome = Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'freeze', evidence: Object.freeze([`no publish time; frozen at ${config.at}`]) })
  return {
    kind: 'DenyIfPublishedAfter',
    phases,
    onUnavailable: undefined,
    evaluate(facts): RuleOutcome {
      const published = facts.publishedMs ?? facts.publishedAt?.getTime()
      if (published === undefined || Number.isNaN(published)) return unknown
      return published <= atMs ? ABSTAIN : after
    },
  }
}
