/**
 * The Dredger's own copy of the advisory database (issue 31 item 4): one
 * advisory consumer per mount with a `DenyIfMalicious` rule that applies to
 * revocation, polling the store every `advisories.pollIntervalSeconds` like
 * the proxy's (server/roles/advisory-wiring.ts), so the Dredger removes a
 * version a malware record names in its first cycle after the database that
 * names it is swapped in (engine/dredger/revocation-judge.ts). A Dredger
 * with no such rule opens no store and polls nothing.
 */
import type { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { Config, MountConfig } from '../../engine/config/config.js'
import type { MountKey } from '../../engine/config/schema.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { attachAdvisoryConsumers } from './advisory-wiring.js'
import { openObjectStore } from './object-store.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import type { RoleContext } from './role-context.js'

export interface DredgerAdvisories {
  readonly slots: ReadonlyMap<MountKey, AdvisorySlot>
  /** One poll of every consumer (the dry run reads the database once before it plans). */
  poll(): Promise<void>
  stop(): Promise<void>
}

/** True when a rule of the list removes on a malware record. */
export function revokesMalware(rules: readonly RuleConfig[]): boolean {
  return rules.some((rule) => rule.rule === 'DenyIfMalicious' && (rule.appliesTo === undefined || rule.appliesTo.includes('revocation')))
}

/** The consumers, started unless `start` is false; undefined when no mount revokes on a malware record. */
export async function dredgerAdvisories(ctx: Pick<RoleContext, 'config' | 'logger' | 'clock' | 'env'>, start = true, forwardProxy?: ForwardProxy): Promise<DredgerAdvisories | undefined> {
  const { config, logger, clock } = ctx
  const mounts: Partial<Record<MountKey, MountConfig>> = {}
  for (const [key, mount] of Object.entries(config.mounts) as [MountKey, MountConfig | undefined][]) {
    if (mount !== undefined && revokesMalware(mount.rules)) mounts[key] = mount
  }
  if (Object.keys(mounts).length === 0) return undefined
  const store = await openObjectStore(config.store, clock, ctx.env, forwardProxy)
  const slots = new Map<MountKey, AdvisorySlot>()
  const attached = attachAdvisoryConsumers({
    config: { advisories: config.advisories, mounts: mounts as Config['mounts'] },
    logger,
    clock,
    // The Dredger's readiness does not wait for the database: identity denials work without it, and no database removes nothing.
    readiness: { markAdvisoryReady: () => undefined },
    slots,
    store,
    start,
  })
  return {
    slots,
    poll: async () => { await Promise.all([...attached.consumers.values()].map((consumer) => consumer.poll())) },
    stop: () => attached.stop(),
  }
}
