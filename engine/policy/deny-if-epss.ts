/**
 * `DenyIfEpss`: denies a version when an advisory affecting it has an EPSS
 * probability at or above `threshold` (SPEC.md 1.7). An advisory with no
 * EPSS score does not count here (`DenyIfCve` is the rule for those).
 *
 * A database that does not carry the exact marker `epss_status=available`
 * cannot vet by EPSS; readiness never accepts one for an EPSS mount (SPEC.md
 * 3.1), and should one be handed over anyway the rule reports it as
 * unavailable (`no_database`) instead of reading absent scores as zero.
 */
import type { AdvisoryDatabase, AdvisoryMatch } from '../advisory/artifact/database.js'
import type { Phase } from './decision.js'
import { RecentMemo } from './recent-memo.js'
import { affectingOrOutcome, CONSULTED, sameMatches, unavailableOutcomes, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfEpssConfig } from './rule-schema.js'

const NO_EPSS: RuleOutcome = Object.freeze({
  kind: 'unavailable',
  cause: 'no_database',
  detail: 'the advisory database carries no EPSS scores (epss_status is not available)',
})

const withoutEpss = (database: AdvisoryDatabase): RuleOutcome | undefined =>
  (database.metadata.epssStatus === 'available' ? undefined : NO_EPSS)

export function denyIfEpss(config: DenyIfEpssConfig, phases: ReadonlySet<Phase>): Rule {
  const threshold = config.threshold
  // Recent outcomes (a deny or CONSULTED) by the lookup result they came from (see sameMatches).
  const outcomes = new RecentMemo<readonly AdvisoryMatch[], RuleOutcome>(8, sameMatches)
  const unavailable = unavailableOutcomes()
  return {
    kind: 'DenyIfEpss',
    phases,
    onUnavailable: config.onUnavailable ?? 'refuse',
    evaluate(facts, scope): RuleOutcome {
      const matches = affectingOrOutcome(scope, unavailable, withoutEpss)
      if (!Array.isArray(matches)) return matches as RuleOutcome
      if (matches.length === 0) return CONSULTED
      const known = outcomes.get(matches)
      if (known !== undefined) return known
      const over = matches.filter((m) => m.epss !== undefined && m.epss >= threshold)
      const outcome: RuleOutcome = over.length === 0
        ? CONSULTED
        : Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'epss', evidence: Object.freeze(over.map((m) => `${m.id} epss=${m.epss}`)) })
      outcomes.set(matches, outcome)
      return outcome
    },
  }
}
