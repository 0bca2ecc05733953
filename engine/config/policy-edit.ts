/**
 * The edits `service policy waive` and `service policy freeze` make to the
 * store's policy document (issue 31 items 2 and 3), as pure functions of
 * the document: the caller validates the result whole
 * (engine/config/policy-document.ts) before anything is written.
 */
import type { RuleConfig } from '../policy/rule-schema.js'
import type { WaiverConfig } from '../policy/waivers.js'
import type { PolicyDocument } from './policy-document.js'
import { MOUNT_KEYS, type MountKey } from './schema.js'

/** The document with one more waiver, after those it had. */
export function withWaiver(document: PolicyDocument, waiver: WaiverConfig): PolicyDocument {
  return { ...document, waivers: [...(document.waivers ?? []), waiver] }
}

/**
 * A freeze the command put: a `DenyIfPublishedAfter` at the top of a list
 * with no `packages` and no `appliesTo`. A narrower one is an operator's own
 * rule and stays where it is.
 */
function isCommandFreeze(rule: RuleConfig | undefined): boolean {
  return rule?.rule === 'DenyIfPublishedAfter' && rule.packages === undefined && rule.appliesTo === undefined
}

/**
 * The document with `DenyIfPublishedAfter { at }` at the top of the rules of
 * every mount it names and every mount of `configured` (a mount the document
 * did not name gets its configured rules under the freeze, since naming it
 * replaces them). A freeze already at the top is replaced, not stacked.
 */
export function withFreeze(document: PolicyDocument, at: string, configured: Partial<Record<MountKey, readonly RuleConfig[]>>): { document: PolicyDocument; mounts: MountKey[] } {
  const mounts: NonNullable<PolicyDocument['mounts']> = { ...document.mounts }
  const frozen: MountKey[] = []
  for (const key of MOUNT_KEYS) {
    const rules = document.mounts?.[key]?.rules ?? configured[key]
    if (rules === undefined) continue
    const rest = isCommandFreeze(rules[0]) ? rules.slice(1) : rules
    mounts[key] = { rules: [{ rule: 'DenyIfPublishedAfter', at }, ...rest] }
    frozen.push(key)
  }
  return { document: { ...document, mounts }, mounts: frozen }
}
