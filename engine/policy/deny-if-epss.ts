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
import type { Phase } from './decision.js'
import { CONSULTED, faultDetail, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfEpssConfig } from './rule-schema.js'

export function denyIfEpss(config: DenyIfEpssConfig, phases: ReadonlySet<Phase>): Rule {
  const threshold = config.threshold
  return {
    kind: 'DenyIfEpss',
    phases,
    onUnavailable: config.onUnavailable ?? 'refuse',
    evaluate(facts, scope): RuleOutcome {
      const access = scope.advisory()
      if (access.state === 'expired') return { kind: 'expired', detail: access.detail, ageSeconds: access.ageSeconds, maxAgeSeconds: access.maxAgeSeconds }
      if (access.state === 'unavailable') return { kind: 'unavailable', cause: access.cause, detail: access.detail }
      if (access.database.metadata.epssStatus !== 'available') {
        return { kind: 'unavailable', cause: 'no_database', detail: 'the advisory database carries no EPSS scores (epss_status is not available)' }
      }
      let matches
      try {
        matches = access.database.affecting(facts.name, facts.version)
      } catch (error) {
        return { kind: 'unavailable', cause: 'lookup_fault', detail: faultDetail(error) }
      }
      const over = matches.filter((m) => m.epss !== undefined && m.epss >= threshold)
      if (over.length === 0) return CONSULTED
      const evidence = over.map((m) => `${m.id} epss=${m.epss}`)
      return { kind: 'decide', verdict: 'deny', reason: 'epss', evidence }
    },
  }
}
