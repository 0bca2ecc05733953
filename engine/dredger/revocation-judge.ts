/**
 * Which held versions the Dredger removes (SPEC.md 1.6, 1.7): those an
 * identity denial (`DenyIdentity`) or a malware record (`DenyIfMalicious`,
 * issue 31 item 4) denies in the `revocation` phase. A rule
 * with `appliesTo: [admission]` never removes anything; unset `appliesTo`
 * means both phases.
 *
 * The judge runs the mount's identity denials through the policy evaluator
 * (engine/policy/evaluator.ts) in the `revocation` phase, so phases,
 * first-rule-decides and the ecosystem's version reading are the policy
 * engine's own. Only identity denials are handed to it: the Dredger never
 * deletes on a vulnerability advisory rule (DenyIfCve, DenyIfEpss), and the allow rules
 * (quarantine, remediation) say when a new public version may be admitted,
 * not that a named identity may stay. Deny by default is no removal either:
 * only a decision of a DenyIdentity rule removes. A DenyIdentity limited by
 * `packages` is judged with its selector, as at admission: one whose
 * selector does not select its own package never removes anything, and its
 * package is no candidate.
 *
 * Malware records are identity facts too (an OSV `MAL-` record names exact
 * versions, or every version of a package that is malware from its first
 * publish), so DenyIfMalicious is judged here with the Dredger's own copy of
 * the serving advisory database (`database`, polled like the proxy's). Its
 * candidates are not a fixed list: after each database swap, the next cycle
 * sweeps the inventory's packages that the database has a malware record
 * for (`malwareSweep`), and the sweep is done once a cycle finishes it
 * without a failed read or removal. While the database cannot answer (none
 * yet, past its maximum age) the rule removes nothing: an outage never
 * deletes.
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
import type { AdvisoryDatabase, Ecosystem } from '../advisory/artifact/database.js'
import { systemClock } from '../clock.js'
import { maxAgeFor } from '../policy/advisory-max-age.js'
import { mayNameMalware } from '../policy/deny-if-malicious.js'
import type { Evaluator } from '../policy/decision.js'
import { packageSelector } from '../policy/package-selector.js'
import type { RuleConfig } from '../policy/rule-schema.js'
import { createPolicyEvaluator } from '../policy/waived-evaluator.js'
import type { WaiverConfig } from '../policy/waivers.js'

/** The Dredger's advisory database of a mount and the maximum push age it honours (DenyIfMalicious). */
export interface JudgeAdvisories {
  readonly database: () => AdvisoryDatabase | undefined
  /** `advisories.maxAgeSeconds` (0 or unset derives it from the rules, SPEC.md 8). */
  readonly configuredMaxAgeSeconds?: number | undefined
}

function inRevocation(rule: RuleConfig): boolean {
  return rule.appliesTo === undefined || rule.appliesTo.includes('revocation')
}

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
  readonly #database: (() => AdvisoryDatabase | undefined) | undefined
  /** The database whose malware records the last finished sweep covered. */
  #swept: AdvisoryDatabase | undefined

  constructor(mount: Ecosystem, rules: readonly RuleConfig[], waivers: readonly WaiverConfig[] = [], advisories?: JudgeAdvisories) {
    this.#mount = mount
    const judged: RuleConfig[] = []
    const labels: string[] = []
    const candidates = new Set<string>()
    let malware = false
    rules.forEach((rule, index) => {
      if (rule.rule === 'DenyIfMalicious' && advisories !== undefined) {
        // `skip`: a database that cannot answer removes nothing and must not stop the identity denials after it.
        judged.push({ ...rule, onUnavailable: 'skip' })
        labels.push(`mounts.${mount}.rules[${index}] DenyIfMalicious`)
        if (inRevocation(rule)) malware = true
        return
      }
      if (rule.rule !== 'DenyIdentity') return
      judged.push(rule)
      labels.push(`mounts.${mount}.rules[${index}] DenyIdentity ${rule.package}@${rule.versions}`)
      const selects = packageSelector(mount, rule.packages)?.matches(rule.package) ?? true
      if (selects && inRevocation(rule)) candidates.add(rule.package)
    })
    this.#labels = labels
    this.#candidates = [...candidates]
    this.#database = malware ? advisories?.database : undefined
    // Identity denials read no advisory database and no time; DenyIfMalicious reads the database and honours its maximum age.
    this.#evaluator = createPolicyEvaluator(judged, waivers, {
      ecosystem: mount,
      database: this.#database ?? undefined,
      clock: systemClock,
      maxAgeSeconds: maxAgeFor(rules, advisories?.configuredMaxAgeSeconds).seconds,
    })
  }

  /**
   * The database whose malware records a cycle must sweep the inventories
   * for (it was swapped in since the last finished sweep), or undefined.
   */
  malwareSweep(): AdvisoryDatabase | undefined {
    const database = this.#database?.()
    return database === undefined || database === this.#swept ? undefined : database
  }

  /** A cycle finished the sweep of `database` (every read and removal done). */
  markSwept(database: AdvisoryDatabase): void {
    this.#swept = database
  }

  /** Whether `database` has a malware record for `name`: the sweep judges only those packages. */
  namesMalware(database: AdvisoryDatabase, name: string): boolean {
    return mayNameMalware(database, name)
  }

  /** The package names that revocation-phase identity denials name: what a candidate cycle looks up. */
  get candidates(): readonly string[] {
    return this.#candidates
  }

  /** The rule that revokes `name@version`, or undefined when none does. */
  judge(name: string, version: string): Verdict | undefined {
    const decision = this.#evaluator.evaluate({ ecosystem: this.#mount, name, version, publishedAt: undefined }, 'revocation')
    if (decision.verdict !== 'deny' || decision.ruleIndex === undefined) return undefined
    const label = this.#labels[decision.ruleIndex] as string
    if (decision.rule === 'DenyIdentity') return { rule: label }
    // The label names the records, so the removal's log line says which feed entry removed it.
    if (decision.rule === 'DenyIfMalicious') return { rule: `${label} ${decision.evidence.join(',')}` }
    return undefined
  }
}
