/**
 * `DenyIfCve`: denies a version that any known advisory affects (SPEC.md 1.7).
 *
 * Decision: every advisory counts, not only those carrying a CVE id. OSV
 * malware records (`MAL-*`) and many GHSA records have no CVE alias, and a
 * security proxy that admitted known malware because nobody filed a CVE for
 * it would fail at its one job. The evidence lists the advisory ids (and
 * their CVE aliases).
 */
import type { AdvisoryMatch } from '../advisory/artifact/database.js'
import type { Phase } from './decision.js'
import { RecentMemo } from './recent-memo.js'
import { affectingOrOutcome, CONSULTED, sameMatches, unavailableOutcomes, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfCveConfig } from './rule-schema.js'

export function denyIfCve(config: DenyIfCveConfig, phases: ReadonlySet<Phase>): Rule {
  // Recent denies by the lookup result they came from (see sameMatches).
  const denies = new RecentMemo<readonly AdvisoryMatch[], RuleOutcome>(8, sameMatches)
  const unavailable = unavailableOutcomes()
  return {
    kind: 'DenyIfCve',
    phases,
    onUnavailable: config.onUnavailable ?? 'refuse',
    evaluate(facts, scope): RuleOutcome {
      const matches = affectingOrOutcome(scope, unavailable)
      if (!Array.isArray(matches)) return matches as RuleOutcome
      if (matches.length === 0) return CONSULTED
      const known = denies.get(matches)
      if (known !== undefined) return known
      const evidence: string[] = []
      for (const m of matches) {
        evidence.push(m.id)
        for (const cve of m.cves) if (cve !== m.id) evidence.push(cve)
      }
      const deny: RuleOutcome = Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'cve', evidence: Object.freeze(evidence) })
      denies.set(matches, deny)
      return deny
    },
  }
}
