/**
 * The rule evaluator of one mount (SPEC.md 1.7, 3.3, 3.5): rules in order,
 * the first that decides stops; when none decides, deny by default.
 *
 * It is pure (no logging, nothing kept between calls that could change a
 * decision), so it can run in a worker: what the main thread logs (outages,
 * skipped checks) leaves in the Decision as observations (see decision.ts).
 *
 * It is on the path of every public version of every packument, so the
 * common path allocates nothing: each phase's rule list is planned once
 * (PhasePlan), each lookup is read once per evaluation and shared by the
 * rules (EvaluationScope), and a frozen outcome a rule hands back again
 * (the same advisories, the quarantine admit, an outage) gets back the same
 * frozen Decision. Decisions are shared, frozen, plain data objects (they
 * cross the worker boundary by structured clone).
 *
 * Advisory denies (`DenyIfCve`, `DenyIfEpss`) that cannot consult the
 * database follow `onUnavailable`: `skip` records a SkippedCheck and goes on
 * to the next rule; unset (or `refuse`) refuses with verdict 'unavailable'
 * (a retryable 503). A push at or past its maximum age refuses with verdict
 * 'expired' whatever `onUnavailable` says (SPEC.md 3.5).
 */
import type { AdvisoryDatabase, AdvisoryMatch, Ecosystem } from '../advisory/artifact/database.js'
import type { Clock } from '../clock.js'
import { ServiceError } from '../errors.js'
import { NO_FACT_NEEDS, RULE_KINDS, type AdvisoryObservation, type Decision, type Evaluator, type FactNeeds, type Phase, type RuleKind, type SkippedCheck, type VersionFacts } from './decision.js'
import { advisoryAccess } from './advisory-access.js'
import { allowIfOlderThan } from './allow-if-older-than.js'
import { allowIfRemediatesCve } from './allow-if-remediates-cve.js'
import { denyIdentity } from './deny-identity.js'
import { denyIfCve } from './deny-if-cve.js'
import { denyIfEpss } from './deny-if-epss.js'
import { denyIfMalicious } from './deny-if-malicious.js'
import { denyIfDependencyAdded } from './deny-if-dependency-added.js'
import { denyIfInstallScriptAdded } from './deny-if-install-script-added.js'
import { denyIfInstallScriptChanged } from './deny-if-install-script-changed.js'
import { denyIfPublishedAfter } from './deny-if-published-after.js'
import { denyIfTrustDowngrade } from './deny-if-trust-downgrade.js'
import { identityMatcher } from './identity-matcher.js'
import { parseInstant } from './instant.js'
import { packageSelector, selectorProblem } from './package-selector.js'
import { RecentMemo } from './recent-memo.js'
import { ABSTAIN, type AdvisoryAccess, type Rule, type RuleOutcome, type RuleScope } from './rule.js'
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

function compileKind(config: RuleConfig, ecosystem: Ecosystem, phases: ReadonlySet<Phase>): Rule {
  switch (config.rule) {
    case 'DenyIdentity': return denyIdentity(config, ecosystem, phases)
    case 'DenyIfCve': return denyIfCve(config, phases)
    case 'DenyIfEpss': return denyIfEpss(config, phases)
    case 'AllowIfRemediatesCve': return allowIfRemediatesCve(config, phases)
    case 'AllowIfOlderThan': return allowIfOlderThan(config, phases)
    case 'DenyIfTrustDowngrade': return denyIfTrustDowngrade(config, phases)
    case 'DenyIfInstallScriptAdded': return denyIfInstallScriptAdded(config, phases)
    case 'DenyIfPublishedAfter': return denyIfPublishedAfter(config, phases)
    case 'DenyIfMalicious': return denyIfMalicious(config, phases)
    case 'DenyIfInstallScriptChanged': return denyIfInstallScriptChanged(config, phases)
    case 'DenyIfDependencyAdded': return denyIfDependencyAdded(config, phases)
  }
}

/**
 * A rule limited by `packages` abstains for any other package, before it
 * reads anything (an advisory deny then neither consults the database nor
 * counts as having consulted it).
 */
function compileRule(config: RuleConfig, ecosystem: Ecosystem): Rule {
  const phases = config.appliesTo === undefined ? BOTH_PHASES : new Set<Phase>(config.appliesTo)
  const rule = compileKind(config, ecosystem, phases)
  const selector = packageSelector(ecosystem, config.packages)
  if (selector === undefined) return rule
  return {
    kind: rule.kind,
    phases: rule.phases,
    onUnavailable: rule.onUnavailable,
    evaluate: (facts, scope) => (selector.matches(facts.name) ? rule.evaluate(facts, scope) : ABSTAIN),
  }
}

/**
 * The history rules read npm packument facts (`_npmUser`, `dist.attestations`,
 * `scripts`, dependency lists) that a `py` project page does not carry: on a
 * `py` mount they would never decide, so they are refused rather than
 * silently inert.
 */
const NPM_ONLY_RULES: ReadonlySet<unknown> = new Set(['DenyIfTrustDowngrade', 'DenyIfInstallScriptAdded', 'DenyIfInstallScriptChanged', 'DenyIfDependencyAdded'])

export function npmOnlyProblem(ecosystem: Ecosystem, kind: unknown): string | undefined {
  if (ecosystem !== 'py' || !NPM_ONLY_RULES.has(kind)) return undefined
  return `${String(kind)} reads npm packument facts (publisher, attestations, install scripts, dependencies) that a py index does not carry; it applies to the js mount only`
}

/** The history facts a rule list reads (decision.ts FactNeeds), whatever the phase. */
export function factNeeds(rules: readonly RuleConfig[]): FactNeeds {
  const trust = rules.some((rule) => rule.rule === 'DenyIfTrustDowngrade')
  const installScripts = rules.some((rule) => rule.rule === 'DenyIfInstallScriptAdded')
  const scriptChanges = rules.some((rule) => rule.rule === 'DenyIfInstallScriptChanged')
  const dependencies = rules.some((rule) => rule.rule === 'DenyIfDependencyAdded')
  if (!trust && !installScripts && !scriptChanges && !dependencies) return NO_FACT_NEEDS
  // The two signals' needs are named only when read, so a list without them keeps its shape.
  if (!scriptChanges && !dependencies) return Object.freeze({ trust, installScripts })
  const signalsWithinMs = Math.max(...rules.map((rule) => (rule.rule === 'DenyIfInstallScriptChanged' || rule.rule === 'DenyIfDependencyAdded' ? rule.seconds * 1000 : 0)))
  return Object.freeze({ trust, installScripts, ...(scriptChanges ? { scriptChanges } : {}), ...(dependencies ? { dependencies } : {}), signalsWithinMs })
}

/**
 * Problems the schema cannot see (a `versions` that is no range of the
 * ecosystem, a `packages` pattern outside the ecosystem's grammar, a history
 * rule on a `py` mount), one sentence each, so the config module can report every
 * problem at once (STYLE.md rule 5). Empty when the list is valid.
 */
export function ruleProblems(ecosystem: Ecosystem, rules: readonly RuleConfig[]): string[] {
  const problems: string[] = []
  rules.forEach((rule, index) => {
    for (const pattern of rule.packages ?? []) {
      const problem = selectorProblem(ecosystem, pattern)
      if (problem !== undefined) problems.push(`mounts.${ecosystem}.rules[${index}] (${rule.rule}) packages: ${problem}`)
    }
    const npmOnly = npmOnlyProblem(ecosystem, rule.rule)
    if (npmOnly !== undefined) problems.push(`mounts.${ecosystem}.rules[${index}] (${rule.rule}): ${npmOnly}`)
    if (rule.rule === 'DenyIfPublishedAfter') {
      const at = parseInstant(rule.at)
      if (typeof at === 'string') problems.push(`mounts.${ecosystem}.rules[${index}] (DenyIfPublishedAfter) at: ${at}`)
    }
    if (rule.rule !== 'DenyIdentity') return
    const matcher = identityMatcher(ecosystem, rule.package, rule.versions)
    if (typeof matcher === 'string') problems.push(`mounts.${ecosystem}.rules[${index}] (DenyIdentity ${rule.package}): ${matcher}`)
  })
  return problems
}

/**
 * The ages, in milliseconds after publication, at which an admission
 * decision about a version of `packageName` can change with nothing else
 * changing: the quarantines of the AllowIfOlderThan, DenyIfInstallScriptAdded,
 * DenyIfInstallScriptChanged and DenyIfDependencyAdded rules that apply to it. A retained answer is
 * re-gated when one of its versions reaches one (issue 17 item 2).
 */
function ageStepsOf(rules: readonly RuleConfig[], ecosystem: Ecosystem): (packageName: string) => readonly number[] {
  const timed = rules.flatMap((rule) => {
    if (rule.rule !== 'AllowIfOlderThan' && rule.rule !== 'DenyIfInstallScriptAdded' && rule.rule !== 'DenyIfInstallScriptChanged' && rule.rule !== 'DenyIfDependencyAdded') return []
    if (rule.appliesTo !== undefined && !rule.appliesTo.includes('admission')) return []
    return [{ ms: rule.seconds * 1000, selector: packageSelector(ecosystem, rule.packages) }]
  })
  if (timed.length === 0) return () => NOTHING
  const unselected = timed.every((step) => step.selector === undefined) ? Object.freeze(timed.map((step) => step.ms)) : undefined
  return (packageName) => unselected ?? timed.flatMap((step) => (step.selector === undefined || step.selector.matches(packageName) ? [step.ms] : []))
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

type DecisionFields = Pick<Decision, 'verdict' | 'rule' | 'ruleIndex' | 'reason' | 'evidence' | 'skipped' | 'advisory'>

function frozenDecision(fields: DecisionFields, ages?: { ageSeconds: number | undefined; maxAgeSeconds: number }): Decision {
  const decision: Decision = ages === undefined
    ? { verdict: fields.verdict, rule: fields.rule, ruleIndex: fields.ruleIndex, reason: fields.reason, evidence: fields.evidence, skipped: fields.skipped, advisory: fields.advisory }
    : ages.ageSeconds === undefined
      ? { ...fields, maxAgeSeconds: ages.maxAgeSeconds }
      : { ...fields, ageSeconds: ages.ageSeconds, maxAgeSeconds: ages.maxAgeSeconds }
  return Object.freeze(decision)
}

/** A rule's evidence as the decision keeps it: frozen (rules hand over frozen arrays, so mostly as is). */
function frozenEvidence(evidence: readonly string[]): readonly string[] {
  return Object.isFrozen(evidence) ? evidence : Object.freeze([...evidence])
}

/**
 * The rules that apply in one phase, in order, and what the common path
 * needs precomputed. On that path every advisory deny reached consulted the
 * database, so the observations a decision carries depend only on where it
 * stopped (`consulted[p]`), nothing was skipped, and a rule that hands back
 * the same frozen outcome gets the same frozen Decision. Anything else (an
 * outage, an expired push) leaves the common path for `observedPath`, which
 * builds the lists one by one.
 */
class PhasePlan {
  readonly rules: readonly Rule[]
  /** Each rule's index in the mount's list. */
  readonly indices: readonly number[]
  /** The outcome kind that passes on with no decision: 'consulted' for an advisory deny, else 'abstain'. */
  readonly passes: readonly RuleOutcome['kind'][]
  /** consulted[p]: one successful observation for each advisory deny before position p. */
  readonly consulted: readonly (readonly AdvisoryObservation[])[]
  readonly denyByDefault: Decision
  /** Per position: recent frozen outcomes of that rule and their Decisions. */
  readonly #decisions: readonly RecentMemo<RuleOutcome, Decision>[]
  /** Per position: recent frozen 'unavailable' outcomes that refused there, and their Decisions. */
  readonly #refusals: readonly RecentMemo<RuleOutcome, Decision>[]

  constructor(compiled: readonly Rule[], phase: Phase) {
    const rules: Rule[] = []
    const indices: number[] = []
    compiled.forEach((rule, index) => {
      if (!rule.phases.has(phase)) return
      rules.push(rule)
      indices.push(index)
    })
    this.rules = rules
    this.indices = indices
    this.passes = rules.map((rule) => (rule.onUnavailable === undefined ? 'abstain' : 'consulted'))
    const consulted: (readonly AdvisoryObservation[])[] = [NOTHING]
    for (const rule of rules) {
      const before = consulted[consulted.length - 1] as readonly AdvisoryObservation[]
      consulted.push(rule.onUnavailable === undefined ? before : Object.freeze([...before, consultedBy(rule.kind)]))
    }
    this.consulted = consulted
    this.denyByDefault = frozenDecision({ verdict: 'deny', rule: undefined, ruleIndex: undefined, reason: 'default', evidence: NOTHING, skipped: NOTHING, advisory: consulted[rules.length] as readonly AdvisoryObservation[] })
    this.#decisions = rules.map(() => new RecentMemo<RuleOutcome, Decision>(8, Object.is))
    this.#refusals = rules.map(() => new RecentMemo<RuleOutcome, Decision>(4, Object.is))
  }

  /**
   * The refusal of an advisory deny at position p that could not consult the
   * database and is not set to skip, reached on the common path: the same
   * frozen outcome (an outage, version after version) is the same Decision.
   */
  refused(p: number, unavailable: Extract<RuleOutcome, { kind: 'unavailable' }>): Decision {
    const memo = this.#refusals[p] as RecentMemo<RuleOutcome, Decision>
    const known = memo.get(unavailable)
    if (known !== undefined) return known
    const rule = this.rules[p] as Rule
    const decision = frozenDecision({
      verdict: 'unavailable',
      rule: rule.kind,
      ruleIndex: this.indices[p],
      reason: unavailable.cause,
      evidence: NOTHING,
      skipped: NOTHING,
      advisory: Object.freeze([...(this.consulted[p] as readonly AdvisoryObservation[]), { rule: rule.kind, cause: unavailable.cause, detail: unavailable.detail }]),
    })
    if (Object.isFrozen(unavailable)) memo.set(unavailable, decision)
    return decision
  }

  /** The decision of the rule at position p on the common path; `decide` is that rule's outcome. */
  decided(p: number, decide: Extract<RuleOutcome, { kind: 'decide' }>): Decision {
    const memo = this.#decisions[p] as RecentMemo<RuleOutcome, Decision>
    const known = memo.get(decide)
    if (known !== undefined) return known
    const rule = this.rules[p] as Rule
    const decision = frozenDecision({
      verdict: decide.verdict,
      rule: rule.kind,
      ruleIndex: this.indices[p],
      reason: decide.reason,
      evidence: frozenEvidence(decide.evidence),
      skipped: NOTHING,
      // A deciding advisory deny consulted the database too.
      advisory: this.consulted[p + 1] as readonly AdvisoryObservation[],
    })
    // Only a frozen outcome is the same outcome the next time it is handed back.
    if (Object.isFrozen(decide)) memo.set(decide, decision)
    return decision
  }
}

/** One shared, frozen "consulted the database" observation per rule kind. */
const CONSULTED_BY: Readonly<Record<RuleKind, AdvisoryObservation>> = Object.freeze(
  Object.fromEntries(RULE_KINDS.map((rule) => [rule, Object.freeze({ rule, cause: undefined })])) as Record<RuleKind, AdvisoryObservation>,
)
function consultedBy(rule: RuleKind): AdvisoryObservation {
  return CONSULTED_BY[rule]
}

/**
 * The rest of an evaluation from position `start`, whose outcome (`first`)
 * left the common path: the original rule-by-rule walk that collects
 * observations and skipped checks.
 */
function observedPath(plan: PhasePlan, start: number, first: RuleOutcome, facts: VersionFacts, scope: RuleScope): Decision {
  const skipped: SkippedCheck[] = []
  const advisory: AdvisoryObservation[] = [...(plan.consulted[start] as readonly AdvisoryObservation[])]
  const decision = (fields: Pick<Decision, 'verdict' | 'rule' | 'ruleIndex' | 'reason' | 'evidence'>, ages?: { ageSeconds: number | undefined; maxAgeSeconds: number }): Decision =>
    frozenDecision({ ...fields, skipped: Object.freeze(skipped), advisory: Object.freeze(advisory) }, ages)

  for (let p = start; p < plan.rules.length; p++) {
    const rule = plan.rules[p] as Rule
    const index = plan.indices[p] as number
    const outcome = p === start ? first : rule.evaluate(facts, scope)
    switch (outcome.kind) {
      case 'abstain':
        continue
      case 'consulted':
        advisory.push(consultedBy(rule.kind))
        continue
      case 'decide':
        if (rule.onUnavailable !== undefined) advisory.push(consultedBy(rule.kind))
        return decision({ verdict: outcome.verdict, rule: rule.kind, ruleIndex: index, reason: outcome.reason, evidence: frozenEvidence(outcome.evidence) })
      case 'expired':
        advisory.push({ rule: rule.kind, cause: 'expired', detail: outcome.detail })
        return decision({ verdict: 'expired', rule: rule.kind, ruleIndex: index, reason: 'expired', evidence: NOTHING }, { ageSeconds: outcome.ageSeconds, maxAgeSeconds: outcome.maxAgeSeconds })
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
}

/**
 * The scope of one evaluation, reused by every evaluation of one evaluator
 * (evaluate is synchronous and never re-entered): the advisory access and
 * the two lookups of the evaluated version are worked out at most once and
 * forgotten when the evaluation ends.
 */
class EvaluationScope implements RuleScope {
  now = 0
  #facts: VersionFacts | undefined
  #access: AdvisoryAccess | undefined
  #affecting: readonly AdvisoryMatch[] | undefined
  #remediating: readonly AdvisoryMatch[] | undefined
  readonly #readDatabase: () => AdvisoryDatabase | undefined
  readonly #breakerOpen: () => boolean
  readonly #maxAgeSeconds: number
  readonly #maxAgeMs: number
  /** The last ready access and its database: a ready access is the same object while nothing changes. */
  #ready: AdvisoryAccess | undefined
  #readyDatabase: AdvisoryDatabase | undefined
  /** The last unavailable access (no database, breaker open). */
  #unavailable: AdvisoryAccess | undefined

  constructor(readDatabase: () => AdvisoryDatabase | undefined, breakerOpen: () => boolean, maxAgeSeconds: number) {
    this.#readDatabase = readDatabase
    this.#breakerOpen = breakerOpen
    this.#maxAgeSeconds = maxAgeSeconds
    this.#maxAgeMs = maxAgeSeconds * 1000
  }

  begin(facts: VersionFacts, now: number): void {
    this.#facts = facts
    this.now = now
  }

  /** Forgets the evaluation, so the scope holds no version (nor the packument behind it) between calls. */
  end(): void {
    this.#facts = undefined
    this.#access = undefined
    this.#affecting = undefined
    this.#remediating = undefined
  }

  advisory(): AdvisoryAccess {
    if (this.#access !== undefined) return this.#access
    const database = this.#readDatabase()
    if (database !== undefined && database === this.#readyDatabase) {
      // advisory-access.ts's checks for a database already found ready: a NaN time fails the comparison and goes the long way.
      const published = database.publishedAt?.getTime()
      if (published !== undefined && this.now - published < this.#maxAgeMs && !this.#breakerOpen()) return (this.#access = this.#ready as AdvisoryAccess)
    }
    let access = advisoryAccess({ database, now: this.now, maxAgeSeconds: this.#maxAgeSeconds, breakerOpen: this.#breakerOpen() })
    if (access.state === 'ready') {
      this.#ready = access
      this.#readyDatabase = access.database
    } else if (access.state === 'unavailable') {
      // The same cause as last time is the same access object, so the rules can share their outcome (rule.ts unavailableOutcomes).
      const last = this.#unavailable
      if (last !== undefined && last.state === 'unavailable' && last.cause === access.cause && last.detail === access.detail) access = last
      else this.#unavailable = access
    }
    return (this.#access = access)
  }

  affecting(database: AdvisoryDatabase): readonly AdvisoryMatch[] {
    const facts = this.#facts as VersionFacts
    return (this.#affecting ??= database.affecting(facts.name, facts.version))
  }

  remediating(database: AdvisoryDatabase): readonly AdvisoryMatch[] {
    const facts = this.#facts as VersionFacts
    return (this.#remediating ??= database.remediating(facts.name, facts.version))
  }
}

/** Builds a mount's evaluator; throws CONFIG_INVALID for a rule `ruleProblems` would name. */
export function createEvaluator(rules: readonly RuleConfig[], context: EvaluationContext): Evaluator {
  guardContext(context)
  const problems = ruleProblems(context.ecosystem, rules)
  if (problems.length > 0) throw new ServiceError('CONFIG_INVALID', { message: problems.join('; '), data: { problems } })
  const compiled = rules.map((rule) => compileRule(rule, context.ecosystem))
  const readDatabase = typeof context.database === 'function'
    ? context.database
    : ((database) => () => database)(context.database)
  const scope = new EvaluationScope(readDatabase, context.breakerOpen ?? (() => false), context.maxAgeSeconds)
  const admission = new PhasePlan(compiled, 'admission')
  const revocation = new PhasePlan(compiled, 'revocation')
  // A phase outside the type applies no rule: deny by default, as before plans existed.
  const none = new PhasePlan([], 'admission')

  return {
    needs: factNeeds(rules),
    ageSteps: ageStepsOf(rules, context.ecosystem),
    evaluate(facts: VersionFacts, phase: Phase): Decision {
      if (facts.ecosystem !== context.ecosystem) {
        throw new ServiceError('INTERNAL', { message: `a ${facts.ecosystem} version was handed to the ${context.ecosystem} evaluator` })
      }
      const plan = phase === 'admission' ? admission : phase === 'revocation' ? revocation : none
      scope.begin(facts, context.clock.now())
      try {
        const planned = plan.rules
        for (let p = 0; p < planned.length; p++) {
          const outcome = (planned[p] as Rule).evaluate(facts, scope)
          if (outcome.kind === plan.passes[p]) continue
          if (outcome.kind === 'decide') return plan.decided(p, outcome)
          const rule = planned[p] as Rule
          if (outcome.kind === 'unavailable' && rule.onUnavailable !== 'skip') return plan.refused(p, outcome)
          return observedPath(plan, p, outcome, facts, scope)
        }
        return plan.denyByDefault
      } finally {
        scope.end()
      }
    },
  }
}
