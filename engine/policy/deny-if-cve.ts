/**
 * `DenyIfCve`: denies a version that any known advisory affects (SPEC.md 1.7).
 *
 * Decision: every advisory counts, not only those carrying a CVE id. OSV
 * malware records (`MAL-*`) and many GHSA records have no CVE alias, and a
 * security proxy that admitted known malware because nobody filed a CVE for
 * it would fail at its one job. The evidence lists the advisory ids (and
 * their CVE aliases).
 */
import type { Phase } from './decision.js'
import { CONSULTED, faultDetail, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfCveConfig } from './rule-schema.js'

export function denyIfCve(config: DenyIfCveConfig, phases: ReadonlySet<Phase>): Rule {
  return {
    kind: 'DenyIfCve',
    phases,
    onUnavailable: config.onUnavailable ?? 'refuse',
    evaluate(facts, scope): RuleOutcome {
      const access = scope.advisory()
      if (access.state === 'expired') return { kind: 'expired', detail: access.detail, ageSeconds: access.ageSeconds, maxAgeSeconds: access.maxAgeSeconds }
      if (access.state === 'unavailable') return { kind: 'unavailable', cause: access.cause, detail: access.detail }
      let matches
      try {
        matches = access.database.affecting(facts.name, facts.version)
      } catch (error) {
        return { kind: 'unavailable', cause: 'lookup_fault', detail: faultDetail(error) }
      }
      if (matches.length === 0) return CONSULTED
      const evidence = matches.flatMap((m) => [m.id, ...m.cves.filter((c) => c !== m.id)])
      return { kind: 'decide', verdict: 'deny', reason: 'cve', evidence }
    },
  }
}
