/**
 * One compiled rule and what it can say about a version. Rules are pure: the
 * evaluator (evaluator.ts) turns their outcomes into a Decision, applying
 * `onUnavailable` and first-decides-stops (SPEC.md 1.7).
 */
import type { AdvisoryDatabase, AdvisoryMatch } from '../advisory/artifact/database.js'
import type { Phase, RuleKind, UnavailableCause, VersionFacts } from './decision.js'
import type { OnUnavailable } from './rule-schema.js'

/**
 * Whether advisory rules may read the database for this evaluation, worked
 * out once per evaluation (advisory-access.ts).
 */
export type AdvisoryAccess =
  | { readonly state: 'ready'; readonly database: AdvisoryDatabase }
  | { readonly state: 'unavailable'; readonly cause: UnavailableCause; readonly detail: string }
  /** The push is at or past the maximum age, or has no publication time (SPEC.md 3.5). */
  | { readonly state: 'expired'; readonly detail: string; readonly ageSeconds: number | undefined; readonly maxAgeSeconds: number }

export interface RuleScope {
  /** Milliseconds since the epoch, fixed for one evaluation. */
  readonly now: number
  /** The advisory access, computed on first use. */
  advisory(): AdvisoryAccess
  /**
   * `database.affecting(name, version)` for the evaluated version, read once
   * per evaluation and shared by every rule that asks (DenyIfCve, DenyIfEpss
   * and AllowIfRemediatesCve all do). Only when `advisory()` is ready; throws
   * what the lookup throws (a fault is not remembered, so each rule sees it).
   */
  affecting(database: AdvisoryDatabase): readonly AdvisoryMatch[]
  /** `database.remediating(name, version)`, read once per evaluation like `affecting`. */
  remediating(database: AdvisoryDatabase): readonly AdvisoryMatch[]
}

export type RuleOutcome =
  | { readonly kind: 'abstain' }
  | { readonly kind: 'decide'; readonly verdict: 'admit' | 'deny'; readonly reason: string; readonly evidence: readonly string[] }
  /** An advisory deny that could consult the database and found nothing to deny. */
  | { readonly kind: 'consulted' }
  /** An advisory deny that could not consult the database. */
  | { readonly kind: 'unavailable'; readonly cause: UnavailableCause; readonly detail: string }
  | { readonly kind: 'expired'; readonly detail: string; readonly ageSeconds: number | undefined; readonly maxAgeSeconds: number }

export const ABSTAIN: RuleOutcome = Object.freeze({ kind: 'abstain' })
export const CONSULTED: RuleOutcome = Object.freeze({ kind: 'consulted' })

export interface Rule {
  readonly kind: RuleKind
  /** Phases the rule applies to (`appliesTo`; unset means both). */
  readonly phases: ReadonlySet<Phase>
  /** For the advisory denies; undefined for the others. */
  readonly onUnavailable: OnUnavailable | undefined
  evaluate(facts: VersionFacts, scope: RuleScope): RuleOutcome
}

/**
 * True when two lookup results hold the same advisory objects in the same
 * order. A rule that decides from a lookup remembers its recent outcomes
 * with the results they came from (RecentMemo), and hands the same frozen
 * outcome back when a result repeats (versions of one packument mostly share
 * their advisories), so a deny does not rebuild its evidence per version.
 */
export function sameMatches(a: readonly AdvisoryMatch[], b: readonly AdvisoryMatch[] | undefined): boolean {
  if (a === b) return true
  if (b === undefined || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The outcome of an advisory deny whose access is unavailable, one frozen
 * object per access object: the evaluation scope hands back the same access
 * while the cause lasts, so an outage refuses version after version with one
 * shared outcome (and the evaluator with one shared Decision).
 */
export function unavailableOutcomes(): (access: Extract<AdvisoryAccess, { state: 'unavailable' }>) => RuleOutcome {
  let lastAccess: AdvisoryAccess | undefined
  let lastOutcome: RuleOutcome | undefined
  return (access) => {
    if (access !== lastAccess || lastOutcome === undefined) {
      lastOutcome = Object.freeze({ kind: 'unavailable', cause: access.cause, detail: access.detail })
      lastAccess = access
    }
    return lastOutcome
  }
}

/**
 * The opening every advisory deny shares: the advisories affecting the
 * version, or the outcome when the database cannot answer (a push past its
 * maximum age, no usable database, a lookup fault). `refuse` lets a rule turn
 * away a database it cannot use (DenyIfEpss without EPSS scores) before the
 * lookup. An outcome is an object, the matches an array.
 */
export function affectingOrOutcome(
  scope: RuleScope,
  unavailable: ReturnType<typeof unavailableOutcomes>,
  refuse?: (database: AdvisoryDatabase) => RuleOutcome | undefined,
): readonly AdvisoryMatch[] | RuleOutcome {
  const access = scope.advisory()
  if (access.state === 'expired') return { kind: 'expired', detail: access.detail, ageSeconds: access.ageSeconds, maxAgeSeconds: access.maxAgeSeconds }
  if (access.state === 'unavailable') return unavailable(access)
  const refused = refuse?.(access.database)
  if (refused !== undefined) return refused
  try {
    return scope.affecting(access.database)
  } catch (error) {
    return { kind: 'unavailable', cause: 'lookup_fault', detail: faultDetail(error) }
  }
}

/** Describes a thrown lookup fault without its stack, for the outage log. */
export function faultDetail(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}
