/**
 * The rule evaluator of one mount (SPEC.md 1.7, 3.3, 3.5): rules in order,
 * the first that decides stops; when none decides, deny by default.
 *
 * It is pure (no logging, no state between calls), so it can run in a
 * worker: what the main thread logs (outages, skipped checks) leaves in the
 * Decision as observations (see decision.ts).
 *
 * Advisory denies (`DenyIfCve`, `DenyIfEpss`) that cannot consult the
 * database follow `onUnavailable`: `skip` records a SkippedCheck and goes on
 * to the next rule; unset (or `refuse`) refuses with verdict 'unavailable'
 * (a retryable 503). A push at or past its maximum age refuses with verdict
 * 'expired' whatever `onUnavailable` says (SPEC.md 3.5).
 */
import type { AdvisoryDatabase, Ecosystem } from '../advisory/database.js'
import type { Clock } from '../clock.js'
import { ServiceError } from '../errors.js'
import type { AdvisoryObservation, Decision, Evaluator, Phase, SkippedCheck, VersionFacts } from './decision.js'
import { advisoryAccess } from './advisory-access.js'
import { allowIfOlderThan } from './allow-if-older-than.js'
import { allowIfRemediatesCve } from './allow-if-remediates-cve.js'
import { denyIdentity } from './deny-identity.js'
import { denyIfCve } from './deny-if-cve.js'
import { denyIfEpss } from './deny-if-epss.js'
import { identityMatcher } from './identity-matcher.js'
import type { AdvisoryAccess, Rule, RuleScope } from './rule.js'
import type { RuleConfig } from './rule-schema.js'

export interface EvaluationContext {
  /** The mount's ecosystem; rules read versions and names in its terms. */
  readonly ecosystem: Ecosystem
  /**
   * The mount's serving advisory database, or undefined before the first
   * sync. A function is read at every evaluation, so a swapped-in database is
   * seen without rebuilding the evaluator.
   */
  readonly database: AdvisoryDatabase | undefined | (() => AdvisoryDatabase | undefined)
  readonly clock: Clock
  /** The mount's maximum push age (advisory-max-age.ts), seconds. */
  readonly maxAgeSeconds: number
  /** True while the breaker in front of the advisory lookups is open (cause `breaker_open`). */
  readonly breakerOpen?: () => boolean
}

const BOTH_PHASES: ReadonlySet<Phase> = new Set<Phase>(['admission', 'revocation'])

function compileRule(config: RuleConfig, ecosystem: Ecosystem): Rule {
  const phases = config.appliesTo === undefined ? BOTH_PHASES : new Set<Phase>(config.appliesTo)
  switch (config.rule) {
    case 'DenyIdentity': return denyIdentity(config, ecosystem, phases)
    case 'DenyIfCve': return denyIfCve(config, phases)
    case 'DenyIfEpss': return denyIfEpss(config, phases)
    case 'AllowIfRemediatesCve': return allowIfRemediatesCve(config, phases)
    case 'AllowIfOlderThan': return allowIfOlderThan(config, phases)
  }
}

/**
 * Problems the schema cannot see (a `versions` that is no range of the
 * ecosystem), one sentence each, so the config module can report every
 * problem at once (STYLE.md rule 5). Empty when the list is valid.
 */
export function ruleProblems(ecosystem: Ecosystem, rules: readonly RuleConfig[]): string[] {
  const problems: string[] = []
  rules.forEach((rule, index) => {
    if (rule.rule !== 'DenyIdentity') return
    const matcher = identityMatcher(ecosystem, rule.package, rule.versions)
    if (typeof matcher === 'string') problems.push(`mounts.${ecosystem}.rules[${index}] (DenyIdentity ${rule.package}): ${matcher}`)
  })
  return problems
}

function guardContext(context: EvaluationContext): void {
  if (context.ecosystem !== 'js' && context.ecosystem !== 'py') {
    throw new ServiceError('CONFIG_INVALID', { message: `unknown ecosystem ${String(context.ecosystem)}` })
  }
  if (!Number.isFinite(context.maxAgeSeconds) || context.maxAgeSeconds <= 0) {
    throw new ServiceError('CONFIG_INVALID', { message: `maxAgeSeconds must be a positive number of seconds, got ${context.maxAgeSeconds}` })
  }
}

const NOTHING: readonly never[] = Object.freeze([])

/** Builds a mount's evaluator; throws CONFIG_INVALID for a rule `ruleProblems` would name. */
export function createEvaluator(rules: readonly RuleConfig[], context: EvaluationContext): Evaluator {
  guardContext(context)
  const problems = ruleProblems(context.ecosystem, rules)
  if (problems.length > 0) throw new ServiceError('CONFIG_INVALID', { message: problems.join('; '), data: { problems } })
  const compiled = rules.map((rule) => compileRule(rule, context.ecosystem))
  const readDatabase = typeof context.database === 'function'
    ? context.database
    : ((database) => () => database)(context.database)
  const breakerOpen = context.breakerOpen ?? (() => false)

  return {
    evaluate(facts: VersionFacts, phase: Phase): Decision {
      if (facts.ecosystem !== context.ecosystem) {
        throw new ServiceError('INTERNAL', { message: `a ${facts.ecosystem} version was handed to the ${context.ecosystem} evaluator` })
      }
      const now = context.clock.now()
      let access: AdvisoryAccess | undefined
      const scope: RuleScope = {
        now,
        advisory: () => (access ??= advisoryAccess({
          database: readDatabase(),
          now,
          maxAgeSeconds: context.maxAgeSeconds,
          breakerOpen: breakerOpen(),
        })),
      }
      const skipped: SkippedCheck[] = []
      const advisory: AdvisoryObservation[] = []
      const decision = (fields: Pick<Decision, 'verdict' | 'rule' | 'ruleIndex' | 'reason' | 'evidence'> & { ageSeconds?: number; maxAgeSeconds?: number }): Decision =>
        Object.freeze({ ...fields, skipped: Object.freeze(skipped), advisory: Object.freeze(advisory) })

      for (let index = 0; index < compiled.length; index++) {
        const rule = compiled[index] as Rule
        if (!rule.phases.has(phase)) continue
        const outcome = rule.evaluate(facts, scope)
        switch (outcome.kind) {
          case 'abstain':
            continue
          case 'consulted':
            advisory.push({ rule: rule.kind, cause: undefined })
            continue
          case 'decide':
            if (rule.onUnavailable !== undefined) advisory.push({ rule: rule.kind, cause: undefined })
            return decision({ verdict: outcome.verdict, rule: rule.kind, ruleIndex: index, reason: outcome.reason, evidence: Object.freeze([...outcome.evidence]) })
          case 'expired': {
            advisory.push({ rule: rule.kind, cause: 'expired', detail: outcome.detail })
            const ages = outcome.ageSeconds === undefined ? { maxAgeSeconds: outcome.maxAgeSeconds } : { ageSeconds: outcome.ageSeconds, maxAgeSeconds: outcome.maxAgeSeconds }
            return decision({ verdict: 'expired', rule: rule.kind, ruleIndex: index, reason: 'expired', evidence: NOTHING, ...ages })
          }
          case 'unavailable':
            advisory.push({ rule: rule.kind, cause: outcome.cause, detail: outcome.detail })
            if (rule.onUnavailable === 'skip') {
              skipped.push({ rule: rule.kind, cause: outcome.cause })
              continue
            }
            return decision({ verdict: 'unavailable', rule: rule.kind, ruleIndex: index, reason: outcome.cause, evidence: NOTHING })
        }
      }
      return decision({ verdict: 'deny', rule: undefined, ruleIndex: undefined, reason: 'default', evidence: NOTHING })
    },
  }
}
