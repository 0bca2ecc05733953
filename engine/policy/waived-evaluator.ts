/**
 * A mount's evaluator with its waivers in front (engine/policy/waivers.ts):
 * a version an unexpired waiver names is admitted before any rule is
 * consulted, except the malware rules (MALWARE_RULE_KINDS), which are judged
 * first unless the waiver overrides them. Built the same way on the main
 * thread (mount-policy.ts) and in every worker (workers/policy-gate.ts), so
 * both paths decide alike.
 *
 * Without waivers for the mount it is the rule evaluator itself: nothing is
 * added to the packument hot path. With some, a version costs one map
 * lookup by name; a name no waiver names goes straight to the rules.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { Decision, Evaluator, Phase, RuleKind, VersionFacts } from './decision.js'
import { createEvaluator, type EvaluationContext } from './evaluator.js'
import type { RuleConfig } from './rule-schema.js'
import { compileWaivers, MALWARE_RULE_KINDS, waiverKey, type CompiledWaiver, type WaiverConfig } from './waivers.js'

const NOTHING: readonly never[] = Object.freeze([])

interface Waived {
  readonly waiver: CompiledWaiver
  readonly decision: Decision
}

/** The admit a waiver hands back, one frozen Decision per waiver. */
function waiverDecision(waiver: CompiledWaiver): Decision {
  const { ref } = waiver
  return Object.freeze({
    verdict: 'admit',
    rule: undefined,
    ruleIndex: undefined,
    reason: 'waiver',
    evidence: Object.freeze([`waived by ${ref.by} until ${ref.expires}: ${ref.reason}`]),
    skipped: NOTHING,
    advisory: NOTHING,
    waiver: ref,
  })
}

/** The malware rules of a list, in order, as their own evaluator, with each one's index in the whole list. */
function malwareEvaluator(rules: readonly RuleConfig[], context: EvaluationContext, kinds: ReadonlySet<RuleKind>): { evaluator: Evaluator; indices: readonly number[] } | undefined {
  const indices: number[] = []
  const picked: RuleConfig[] = []
  rules.forEach((rule, index) => {
    if (!kinds.has(rule.rule)) return
    picked.push(rule)
    indices.push(index)
  })
  return picked.length === 0 ? undefined : { evaluator: createEvaluator(picked, context), indices }
}

export interface PolicyEvaluatorOptions {
  /** Which rule kinds are malware rules; MALWARE_RULE_KINDS unless a test says otherwise. */
  readonly malwareKinds?: ReadonlySet<RuleKind>
}

/**
 * The evaluator of a mount's rules in force: its rules, behind its waivers
 * (those of `waivers` whose mount is `context.ecosystem`). Throws
 * CONFIG_INVALID for a rule `ruleProblems` names, as createEvaluator does.
 */
export function createPolicyEvaluator(rules: readonly RuleConfig[], waivers: readonly WaiverConfig[], context: EvaluationContext, options: PolicyEvaluatorOptions = {}): Evaluator {
  const inner = createEvaluator(rules, context)
  const compiled = compileWaivers(context.ecosystem, waivers)
  if (compiled.length === 0) return inner
  const ecosystem: Ecosystem = context.ecosystem
  const byName = new Map<string, Waived[]>()
  for (const waiver of compiled) {
    const key = waiverKey(ecosystem, waiver.ref.package)
    const list = byName.get(key) ?? []
    list.push({ waiver, decision: waiverDecision(waiver) })
    byName.set(key, list)
  }
  const malware = malwareEvaluator(rules, context, options.malwareKinds ?? MALWARE_RULE_KINDS)

  const holding = (facts: VersionFacts, now: number): Waived | undefined => {
    const list = byName.get(waiverKey(ecosystem, facts.name))
    if (list === undefined) return undefined
    for (const waived of list) {
      if (now < waived.waiver.expiresMs && waived.waiver.matcher.matches(facts.name, facts.version)) return waived
    }
    return undefined
  }

  return {
    needs: inner.needs,
    ageSteps: inner.ageSteps,
    evaluate(facts: VersionFacts, phase: Phase): Decision {
      const waived = holding(facts, context.clock.now())
      if (waived === undefined) return inner.evaluate(facts, phase)
      if (malware !== undefined && !waived.waiver.ref.overrideMalware) {
        const judged = malware.evaluator.evaluate(facts, phase)
        // Only a malware rule's own refusal beats the waiver; its deny by default is no decision.
        if (judged.rule !== undefined && judged.verdict !== 'admit') {
          return Object.freeze({ ...judged, ruleIndex: judged.ruleIndex === undefined ? undefined : malware.indices[judged.ruleIndex] })
        }
      }
      return waived.decision
    },
    regateAt(packageName: string, now: number): number | undefined {
      let next: number | undefined
      for (const { waiver } of byName.get(waiverKey(ecosystem, packageName)) ?? []) {
        if (waiver.expiresMs > now && (next === undefined || waiver.expiresMs < next)) next = waiver.expiresMs
      }
      return next
    },
  }
}
