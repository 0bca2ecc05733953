/**
 * `DenyIfMalicious` (issue 31 item 4): denies a version that an OSV
 * malicious-package record names. Such a record (`MAL-` id, the OSV
 * malicious-packages feed) is an identity fact, not a vulnerability: it says
 * these bytes are hostile. It names exact versions (`versions: [...]`, matched
 * by ecosystem equality, osv-evaluate.ts) or, for a package that is malware
 * from its first publish, every version (`introduced: "0"` with no bound).
 *
 * Unlike DenyIfCve it is judged in both phases by default and on the private
 * side too (engine/policy/private-malware-gate.ts), so a version admitted and
 * mirrored before its record appeared stops being served within one poll and
 * is removed by the Dredger in its next cycle; and a waiver does not pass it
 * unless it says `overrideMalware` (waivers.ts MALWARE_RULE_KINDS).
 *
 * It reads the same shared lookup as the other advisory rules
 * (`scope.affecting`), after asking the database whether the name has any
 * malware record at all (`hasMalware`, one package lookup): on a name with
 * none it consults nothing more. The evidence is the MAL ids.
 */
import type { AdvisoryDatabase, AdvisoryMatch } from '../advisory/artifact/database.js'
import type { Phase } from './decision.js'
import { RecentMemo } from './recent-memo.js'
import { affectingOrOutcome, CONSULTED, sameMatches, unavailableOutcomes, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfMaliciousConfig } from './rule-schema.js'

/** The id prefix of the OSV malicious-packages feed. */
export const MALWARE_ID_PREFIX = 'MAL-'

/** Whether an advisory is a malicious-package record. */
export function isMalwareRecord(match: AdvisoryMatch): boolean {
  return match.id.startsWith(MALWARE_ID_PREFIX)
}

/**
 * True when the database may hold a malware record for `name`: a database
 * that cannot say (a test double without `hasMalware`) is asked by lookup.
 */
export function mayNameMalware(database: AdvisoryDatabase, name: string): boolean {
  return database.hasMalware === undefined || database.hasMalware(name)
}

export function denyIfMalicious(config: DenyIfMaliciousConfig, phases: ReadonlySet<Phase>): Rule {
  const denies = new RecentMemo<readonly AdvisoryMatch[], RuleOutcome>(8, sameMatches)
  const unavailable = unavailableOutcomes()
  return {
    kind: 'DenyIfMalicious',
    phases,
    onUnavailable: config.onUnavailable ?? 'refuse',
    evaluate(facts, scope): RuleOutcome {
      // A name with no malware record: nothing more to read (the compiled database remembers the last name it found).
      const matches = affectingOrOutcome(scope, unavailable, (database) => (mayNameMalware(database, facts.name) ? undefined : CONSULTED))
      if (!Array.isArray(matches)) return matches as RuleOutcome
      if (matches.length === 0) return CONSULTED
      const known = denies.get(matches)
      if (known !== undefined) return known
      const evidence = matches.filter(isMalwareRecord).map((m) => m.id)
      const outcome: RuleOutcome = evidence.length === 0
        ? CONSULTED
        : Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'malware', evidence: Object.freeze(evidence) })
      denies.set(matches, outcome)
      return outcome
    },
  }
}
