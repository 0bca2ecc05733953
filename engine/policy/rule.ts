/**
 * One compiled rule and what it can say about a version. Rules are pure: the
 * evaluator (evaluator.ts) turns their outcomes into a Decision, applying
 * `onUnavailable` and first-decides-stops (SPEC.md 1.7).
 */
import type { AdvisoryDatabase } from '../advisory/database.js'
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

/** Describes a thrown lookup fault without its stack, for the outage log. */
export function faultDetail(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}
