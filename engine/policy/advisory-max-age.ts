/**
 * What a mount's rule list asks of the advisory database (SPEC.md 3.1, 8).
 */
import type { RuleConfig } from './rule-schema.js'

const DAY_SECONDS = 86_400
/** SPEC.md 8: never under three days; a mount with no quarantine rule gets three days. */
export const MIN_MAX_AGE_SECONDS = 3 * DAY_SECONDS

export type MaxAgeOrigin = 'pin' | 'derived' | 'default'

export interface MaxAge {
  readonly seconds: number
  /** For the boot line naming value and origin once per mount. */
  readonly origin: MaxAgeOrigin
}

/**
 * The maximum age of an advisory push for one mount (SPEC.md 8).
 *
 * `advisories.maxAgeSeconds` set (positive) is a pin and wins as given; 0 or
 * unset derives it: a day ahead of the mount's earliest (shortest)
 * `AllowIfOlderThan` quarantine, that is the quarantine less one day, so the
 * shipped seven-day quarantine gives six days, and never under three days. A
 * mount with no quarantine rule gets three days.
 *
 * Why a day ahead: when a version leaves a quarantine of Q, the push that vets
 * it is at most Q less a day old, so it was made at least a day after the
 * version was published, and an advisory filed in that first day is in it.
 */
export function maxAgeFor(rules: readonly RuleConfig[], configuredMaxAgeSeconds?: number): MaxAge {
  if (configuredMaxAgeSeconds !== undefined && configuredMaxAgeSeconds > 0) {
    return { seconds: configuredMaxAgeSeconds, origin: 'pin' }
  }
  let earliest: number | undefined
  for (const rule of rules) {
    if (rule.rule === 'AllowIfOlderThan' && (earliest === undefined || rule.seconds < earliest)) earliest = rule.seconds
  }
  if (earliest === undefined) return { seconds: MIN_MAX_AGE_SECONDS, origin: 'default' }
  return { seconds: Math.max(MIN_MAX_AGE_SECONDS, earliest - DAY_SECONDS), origin: 'derived' }
}

/** True when the mount has a rule that denies on the database: readiness awaits the first sync (SPEC.md 3.1). */
export function needsAdvisoryDatabase(rules: readonly RuleConfig[]): boolean {
  return rules.some((rule) => rule.rule === 'DenyIfCve' || rule.rule === 'DenyIfEpss' || rule.rule === 'DenyIfMalicious')
}

/** True when the mount is EPSS-dependent: only an artifact marked `epss_status=available` qualifies (SPEC.md 3.1). */
export function needsEpss(rules: readonly RuleConfig[]): boolean {
  return rules.some((rule) => rule.rule === 'DenyIfEpss')
}
