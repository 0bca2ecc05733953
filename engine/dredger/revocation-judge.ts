/**
 * Which held versions the Dredger removes (SPEC.md 1.6, 1.7): those an
 * identity denial (`DenyIdentity`) denies in the `revocation` phase. A rule
 * with `appliesTo: [admission]` never removes anything; unset `appliesTo`
 * means both phases.
 *
 * The judge runs the mount's identity denials through the policy evaluator
 * (engine/policy/evaluator.ts) in the `revocation` phase, so phases,
 * first-rule-decides and the ecosystem's version reading are the policy
 * engine's own. Only identity denials are handed to it: the Dredger never
 * deletes on an advisory rule (DenyIfCve, DenyIfEpss), and the allow rules
 * (quarantine, remediation) say when a new public version may be admitted,
 * not that a named identity may stay. Deny by default is no removal either:
 * only a decision of a DenyIdentity rule removes. A DenyIdentity limited by
 * `packages` is judged with its selector, as at admission: one whose
 * selector does not select its own package never removes anything, and its
 * package is no candidate.
 *
 * Waivers (issue 31 item 2) hold in this phase too: a version an unexpired
 * waiver names is not removed while the proxy admits it (the waived
 * evaluator, engine/policy/waived-evaluator.ts, with its malware rule
 * precedence).
 *
 * Decision: the history rules (DenyIfTrustDowngrade, DenyIfInstallScriptAdded)
 * are not judged here. Their facts are the public registry's history: who
 * published each version (`_npmUser`, `dist.attestations`) and when
 * (`time`). An inventory's document is the mirror's own copy, republished by
 * the mirror worker: its `_npmUser` and `time` record that republication,
 * not the public history, so judging them there would remove versions on
 * facts the public registry never stated. Both still gate every admission
 * (the artifact route included), so a version they refuse is never
 * mirrored in the first place.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { systemClock } from '../clock.js'
import { createPolicyEvaluator } from '../policy/waived-evaluator.js'
import type { Evaluator } from '../policy/decision.js'
import { packageSelector } from '../policy/package-selector.js'
import type { DenyIdentityConfig, RuleConfig } from '../policy/rule-schema.js'
import type { WaiverConfig } from '../policy/waivers.js'

export interface Verdict {
  /** e.g. `mounts.js.rules[0] DenyIdentity left-pad@1.3.0`: which rule, as the operator finds it in the configuration. */
  readonly rule: string
}

export class RevocationJudge {
  readonly #mount: Ecosystem
  readonly #evaluator: Evaluator
  /** Index in the identity-only list → index in the mount's list and its label. */
  readonly #labels: readonly string[]
  readonly #candidates: readonly string[]

  constructor(mount: Ecosystem, rules: readonly RuleConfig[], waivers: readonly WaiverConfig[] = []) {
    this.#mount = mount
    const identities: DenyIdentityConfig[] = []
    const labels: string[] = []
    const candidates = new Set<string>()
    rules.forEach((rule, index) => {
      if (rule.rule !== 'DenyIdentity') return
      identities.push(rule)
      labels.push(`mounts.${mount}.rules[${index}] DenyIdentity ${rule.package}@${rule.versions}`)
      const selects = packageSelector(mount, rule.packages)?.matches(rule.package) ?? true
      if (selects && (rule.appliesTo === undefined || rule.appliesTo.includes('revocation'))) candidates.add(rule.package)
    })
    this.#labels = labels
    this.#candidates = [...candidates]
    // Identity denials read no advisory database and no time: the clock and the maximum age are never consulted.
    this.#evaluator = createPolicyEvaluator(identities, waivers, { ecosystem: mount, database: undefined, clock: systemClock, maxAgeSeconds: 1 })
  }

  /** The package names that revocation-phase identity denials name: what a candidate cycle looks up. */
  get candidates(): readonly string[] {
    return this.#candidates
  }

  /** The rule that revokes `name@version`, or undefined when none does. */
  judge(name: string, version: string): Verdict | undefined {
    const decision = this.#evaluator.evaluate({ ecosystem: this.#mount, name, version, publishedAt: undefined }, 'revocation')
    if (decision.verdict !== 'deny' || decision.rule !== 'DenyIdentity' || decision.ruleIndex === undefined) return undefined
    return { rule: this.#labels[decision.ruleIndex] as string }
  }
}
