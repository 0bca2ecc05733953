/**
 * The policy of one mount, as its request paths call back into it: the
 * main thread's evaluator over the mount's serving advisory database, the
 * options the workers build their own evaluator from, and the two feeds of
 * the SPEC.md 3.3 outage state and the SPEC.md 6.2 skipped-check warning.
 *
 * The evaluator is pure (decision.ts): decisions come back carrying their
 * advisory observations and skipped checks, and only here do they turn into
 * log lines. A listing's decisions feed the outage state alone (the
 * skipped-check warning is about an admitted public artifact, SPEC.md 6.2);
 * an artifact decision feeds both. The outage's recovery clears the
 * skipped-check record, so the next outage warns afresh.
 *
 * The rules and waivers in force can be swapped (`swap`, a reloaded policy
 * document, issue 31): the evaluator is rebuilt and the generation moves,
 * so no answer retained under the old policy is served after the swap and
 * every worker rebuilds its evaluator on its next task. The advisory
 * maximum age stays the boot one: it sizes the advisory consumer.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { AdvisorySlot } from '../advisory/consumer/advisory-slot.js'
import type { Clock } from '../clock.js'
import type { Logger } from '../log/logger.js'
import { maxAgeFor } from './advisory-max-age.js'
import { generationKey, rulesDigest, shortDigest } from './generation-key.js'
import { AdvisoryOutage } from './advisory-outage.js'
import type { AdvisoryObservation, Decision, Evaluator, RuleKind, VersionFacts } from './decision.js'
import type { RuleConfig } from './rule-schema.js'
import { SkippedCheckRecord } from './skipped-check-record.js'
import { createPolicyEvaluator } from './waived-evaluator.js'
import { WaiverAdmissions } from './waiver-admissions.js'
import { SignalWithholdings } from './signal-withholdings.js'
import type { WaiverConfig } from './waivers.js'
import { MalwareRefusals } from './malware-refusals.js'
import { privateMalwareGate, type PrivateVerdict } from './private-malware-gate.js'

/** info, once per mount at boot (SPEC.md 8): the advisory push maximum age, with its origin. */
export const ADVISORY_MAX_AGE_MESSAGE = 'advisory database maximum age'

/**
 * What a worker needs to build the mount's evaluator (workers/policy-gate.ts):
 * plain data that crosses the thread boundary, the database as the shared
 * buffer every worker reads (DESIGN.md).
 */
export interface PolicyGateOptions {
  /** Changes whenever `rules` or `advisory` change. */
  readonly generation: number
  readonly ecosystem: Ecosystem
  readonly rules: readonly RuleConfig[]
  /** Every waiver of the policy document; the worker keeps this mount's. */
  readonly waivers: readonly WaiverConfig[]
  readonly maxAgeSeconds: number
  readonly advisory: { readonly shared: SharedArrayBuffer; readonly publishedAt: number | undefined } | undefined
  /** The mount's `publish.scopes`: names the private side's malware judgement never reads (private-malware-gate.ts). */
  readonly ownedScopes?: readonly string[]
}

/** A listing's decisions, as a packument or a project page reports them. */
export interface ListingObservations {
  readonly observations: readonly { readonly version?: string; readonly decision: Decision; readonly private?: true }[]
  /** Advisory rules that consulted the database successfully while rendering the listing. */
  readonly advisoryAnswered: readonly RuleKind[]
}

export interface MountPolicyOptions {
  readonly ecosystem: Ecosystem
  readonly rules: readonly RuleConfig[]
  /** The policy document's waivers (engine/policy/waivers.ts); default none. */
  readonly waivers?: readonly WaiverConfig[]
  /** `advisories.maxAgeSeconds`: positive is a pin; 0 or unset derives it from the rules (SPEC.md 8). */
  readonly configuredMaxAgeSeconds: number | undefined
  /** The mount's serving advisory database, filled by the advisory consumer. */
  readonly slot: AdvisorySlot
  readonly logger: Logger
  readonly clock: Clock
  /**
   * The mount's first-party names (`publish.scopes`, and the test the
   * root builds from them, engine/publish/publish-scope.ts `ownsName`):
   * never judged on the private side. The scopes go to the workers as data.
   */
  readonly firstParty?: { readonly scopes: readonly string[]; readonly owns: (name: string) => boolean }
}

export interface MountPolicy {
  readonly slot: AdvisorySlot
  /** The advisory push maximum age of this mount (SPEC.md 8). */
  readonly maxAgeSeconds: number
  /** The main thread's evaluator of the policy in force (artifact decisions); workers build their own from `gateOptions`. */
  readonly evaluator: Evaluator
  /** The rules in force, for the refusal sentences (engine/policy/explain.ts). */
  readonly rules: () => readonly RuleConfig[]
  /** Moves on every database swap and policy swap: the workers' evaluators are keyed by it (a count of this process's swaps). */
  readonly generation: () => number
  /**
   * The rules-and-database generation as every replica computes it, across
   * restarts (generation-key.ts): what retained answers are keyed by. It
   * digests the rules and waivers in force, so a policy swap moves it too.
   */
  readonly generationKey: () => string
  /** Puts new rules and waivers in force; the caller has validated them (ruleProblems, waiverProblems). */
  readonly swap: (rules: readonly RuleConfig[], waivers: readonly WaiverConfig[]) => void
  /** Admissions through a waiver so far (`service.policy.waiver.admissions`). */
  readonly waiverAdmissions: () => number
  /**
   * The private side's one judgement (private-malware-gate.ts): the refusal
   * of a private version a malware record names, or undefined to serve it;
   * counted and logged as a malware refusal when it refuses.
   */
  readonly privateVerdict: PrivateVerdict
  /** Versions refused because a malware record names them, by side (`service.policy.malware.refusals`). */
  readonly malwareRefusals: () => Readonly<Record<'public' | 'private', number>>
  /** Versions withheld by DenyIfInstallScriptChanged and DenyIfDependencyAdded, by signal (`service.policy.signal.withheld`). */
  readonly signalWithholdings: () => Readonly<Record<string, number>>
  readonly gateOptions: () => PolicyGateOptions
  /** A listing's decisions of `packageName`: outage tracking and the waiver admissions. */
  readonly observe: (outcome: ListingObservations, packageName: string) => void
  /** One public artifact decision: outage tracking and the skipped-check warning (SPEC.md 3.3, 6.2). */
  readonly observeDecision: (facts: VersionFacts, decision: Decision) => void
}

export function mountPolicy(options: MountPolicyOptions): MountPolicy {
  const { ecosystem, slot, logger, clock } = options
  const maxAge = maxAgeFor(options.rules, options.configuredMaxAgeSeconds)
  logger.info(ADVISORY_MAX_AGE_MESSAGE, { ecosystem, seconds: maxAge.seconds, origin: maxAge.origin })
  const skipped = new SkippedCheckRecord({ ecosystem, logger })
  const waived = new WaiverAdmissions(ecosystem, logger)
  const signals = new SignalWithholdings()
  const outage = new AdvisoryOutage({ ecosystem, logger, clock, onRecovered: () => skipped.clear() })
  const context = { ecosystem, database: () => slot.database(), clock, maxAgeSeconds: maxAge.seconds }
  let rules = options.rules
  let waivers = options.waivers ?? []
  let evaluator = createPolicyEvaluator(rules, waivers, context)
  const ownedScopes = options.firstParty?.scopes ?? []
  const firstParty = ownedScopes.length === 0 ? undefined : options.firstParty?.owns
  let privateGate = privateMalwareGate(rules, waivers, context, firstParty)
  const malware = new MalwareRefusals(ecosystem, logger)
  const policyDigest = (): string => (waivers.length === 0 ? rulesDigest(rules) : shortDigest({ rules, waivers }))
  let digest = policyDigest()
  // One number for both causes of change: it moves when the serving database or the policy does.
  let generation = 0
  let slotGeneration = slot.generation
  const currentGeneration = (): number => {
    if (slot.generation !== slotGeneration) {
      slotGeneration = slot.generation
      generation++
    }
    return generation
  }
  // Computed once per change: every listing request reads it.
  let keyed = { generation: -1, key: '' }
  return {
    slot,
    maxAgeSeconds: maxAge.seconds,
    get evaluator() { return evaluator },
    rules: () => rules,
    generation: currentGeneration,
    generationKey: () => {
      const now = currentGeneration()
      if (keyed.generation !== now) {
        const serving = slot.serving
        keyed = { generation: now, key: generationKey({ rulesDigest: digest, advisory: serving === undefined ? undefined : { etag: serving.etag, publishedAt: serving.publishedAt } }) }
      }
      return keyed.key
    },
    swap: (nextRules, nextWaivers) => {
      evaluator = createPolicyEvaluator(nextRules, nextWaivers, context)
      privateGate = privateMalwareGate(nextRules, nextWaivers, context, firstParty)
      rules = nextRules
      waivers = nextWaivers
      digest = policyDigest()
      generation++
    },
    waiverAdmissions: () => waived.count,
    privateVerdict: (name, version) => {
      const refusal = privateGate?.(name, version)
      if (refusal !== undefined) malware.observe('private', name, version, refusal)
      return refusal
    },
    malwareRefusals: () => malware.counts,
    signalWithholdings: () => signals.counts,
    observeDecision: (facts, decision) => {
      malware.observe('public', facts.name, facts.version, decision)
      if (decision.advisory.length > 0) outage.observe(decision.advisory)
      skipped.admitted(facts, decision)
      waived.observe(facts.name, facts.version, decision)
      signals.observe(facts.name, facts.version, decision)
    },
    gateOptions: () => {
      const serving = slot.serving
      return {
        generation: currentGeneration(),
        ecosystem,
        rules,
        waivers,
        maxAgeSeconds: maxAge.seconds,
        advisory: serving === undefined ? undefined : { shared: serving.shared, publishedAt: serving.publishedAt?.getTime() },
        ...(ownedScopes.length === 0 ? {} : { ownedScopes }),
      }
    },
    observe: (outcome, packageName) => {
      for (const observation of outcome.observations) {
        const { version, decision } = observation
        if (version === undefined) continue
        waived.observe(packageName, version, decision)
        malware.observe(observation.private === true ? 'private' : 'public', packageName, version, decision)
        signals.observe(packageName, version, decision)
      }
      // One failing rule anywhere in the listing keeps the outage; a listing whose advisory rules all answered ends it.
      const failing: AdvisoryObservation[] = []
      for (const { decision } of outcome.observations) for (const o of decision.advisory) if (o.cause !== undefined) failing.push(o)
      if (failing.length > 0) outage.observe(failing)
      else if (outcome.advisoryAnswered.length > 0) outage.observe(outcome.advisoryAnswered.map((rule) => ({ rule, cause: undefined })))
    },
  }
}
