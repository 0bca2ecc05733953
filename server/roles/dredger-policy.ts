/**
 * The Dredger's policy (issue 31 item 1): its removals follow the policy
 * document (`policy.file` or the store's, server/roles/policy-reloader.ts)
 * exactly as the proxy's admissions do, so a rule the document adds (a
 * `DenyIdentity`) withholds a version on the proxy and removes it from the
 * inventories in the Dredger's next cycle, and a waiver that admits a
 * version on the proxy keeps it in the inventories while it holds.
 *
 * Each dredged mount reads its judge from a JudgeSlot, which a reload
 * replaces whole; a cycle reads the document first (trigger `cycle`), so it
 * plans with the rules in force at its start.
 */
import type { MountKey } from '../../engine/config/schema.js'
import type { DredgedMount } from '../../engine/dredger/dredger.js'
import { RevocationJudge, type JudgeAdvisories } from '../../engine/dredger/revocation-judge.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { WaiverConfig } from '../../engine/policy/waivers.js'
import type { PolicyTarget } from './policy-reloader.js'

export class JudgeSlot implements PolicyTarget {
  readonly #key: MountKey
  readonly #advisories: JudgeAdvisories | undefined
  #judge: RevocationJudge

  /** `advisories`: the mount's advisory database when it removes on malware records (DenyIfMalicious), kept across swaps. */
  constructor(key: MountKey, rules: readonly RuleConfig[], waivers: readonly WaiverConfig[], advisories?: JudgeAdvisories) {
    this.#key = key
    this.#advisories = advisories
    this.#judge = new RevocationJudge(key, rules, waivers, advisories)
  }

  /** The judge of the rules in force. */
  get judge(): RevocationJudge { return this.#judge }

  swap(rules: readonly RuleConfig[], waivers: readonly WaiverConfig[]): void {
    // A new judge sweeps the inventories for malware records again: the rules that judge them may have changed.
    this.#judge = new RevocationJudge(this.#key, rules, waivers, this.#advisories)
  }
}

/** A dredged mount whose judge is read from `slot` at each use, so each cycle plans with the judge a reload last put there. */
export function judgedMount(slot: JudgeSlot, mount: Omit<DredgedMount, 'judge'>): DredgedMount {
  return { ...mount, get judge() { return slot.judge } }
}
