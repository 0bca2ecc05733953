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
import { RevocationJudge } from '../../engine/dredger/revocation-judge.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { WaiverConfig } from '../../engine/policy/waivers.js'
import type { PolicyTarget } from './policy-reloader.js'

export class JudgeSlot implements PolicyTarget {
  readonly #key: MountKey
  #judge: RevocationJudge

  constructor(key: MountKey, rules: readonly RuleConfig[], waivers: readonly WaiverConfig[]) {
    this.#key = key
    this.#judge = new RevocationJudge(key, rules, waivers)
  }

  /** The judge of the rules in force. */
  get judge(): RevocationJudge { return this.#judge }

  swap(rules: readonly RuleConfig[], waivers: readonly WaiverConfig[]): void {
    this.#judge = new RevocationJudge(this.#key, rules, waivers)
  }
}

/** A dredged mount whose judge is read from `slot` at each use, so each cycle plans with the judge a reload last put there. */
export function judgedMount(slot: JudgeSlot, mount: Omit<DredgedMount, 'judge'>): DredgedMount {
  return { ...mount, get judge() { return slot.judge } }
}
