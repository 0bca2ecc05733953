/**
 * The proxy's advisory consumers (SPEC.md 3.1, 3.4, 3.5): one per mount whose
 * rules read the advisory database (`DenyIfCve`, `DenyIfEpss`,
 * `AllowIfRemediatesCve`), polling the store every
 * `advisories.pollIntervalSeconds` and swapping the mount's AdvisorySlot.
 * The first accepted qualified generation marks the mount ready (one way;
 * a mount with no advisory deny was ready at boot and stays so).
 *
 * A mount that reads the database but has no slot in `slots` gets a new one,
 * added to the map, so its readiness can still leave the awaiting state.
 */
import { AdvisoryConsumer } from '../../engine/advisory/consumer/advisory-consumer.js'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import type { Logger } from '../../engine/log/logger.js'
import { maxAgeFor, needsEpss } from '../../engine/policy/advisory-max-age.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { ObjectStore } from '../../engine/store/object-store.js'

export interface AdvisoryReadiness {
  markAdvisoryReady(key: MountKey): void
}

export interface AttachAdvisoryConsumersOptions {
  readonly config: Pick<Config, 'advisories' | 'mounts'>
  readonly logger: Logger
  readonly clock: Clock
  readonly readiness: AdvisoryReadiness
  readonly slots: Map<MountKey, AdvisorySlot>
  readonly store: ObjectStore
  /** Default true; false leaves polling to the caller's `poll()` (tests on a manual clock). */
  readonly start?: boolean
}

export interface AdvisoryConsumers {
  readonly consumers: ReadonlyMap<MountKey, AdvisoryConsumer>
  /** Seconds since each mount's serving push (`service.advisory.source.age.seconds`); absent before the first sync. */
  ages(): Readonly<Partial<Record<MountKey, number>>>
  /** Seconds since each mount's serving database was compiled (`service.advisory.database.age.seconds`); absent while none serves. */
  databaseAges(): Readonly<Partial<Record<MountKey, number>>>
  stop(): Promise<void>
}

/** True when a rule of the list reads the advisory database. */
export function readsAdvisories(rules: readonly RuleConfig[]): boolean {
  return rules.some((r) => r.rule === 'DenyIfCve' || r.rule === 'DenyIfEpss' || r.rule === 'AllowIfRemediatesCve' || r.rule === 'DenyIfMalicious')
}

export function attachAdvisoryConsumers(options: AttachAdvisoryConsumersOptions): AdvisoryConsumers {
  const { config, logger, clock, readiness, slots, store } = options
  const consumers = new Map<MountKey, AdvisoryConsumer>()
  for (const key of MOUNT_KEYS) {
    const mount = config.mounts[key]
    if (mount === undefined || !readsAdvisories(mount.rules)) continue
    let slot = slots.get(key)
    if (slot === undefined) {
      slot = new AdvisorySlot()
      slots.set(key, slot)
    }
    consumers.set(key, new AdvisoryConsumer({
      ecosystem: key,
      store,
      key: advisoryObjectKey(key),
      slot,
      requireEpss: needsEpss(mount.rules),
      maxAgeSeconds: maxAgeFor(mount.rules, config.advisories.maxAgeSeconds).seconds,
      clock,
      logger,
      onAccepted: () => readiness.markAdvisoryReady(key),
    }))
  }
  if (options.start !== false) {
    for (const consumer of consumers.values()) consumer.start(config.advisories.pollIntervalSeconds * 1000)
  }
  return {
    consumers,
    ages: () => agesOf(consumers, (c) => c.pushAgeSeconds()),
    databaseAges: () => agesOf(consumers, (c) => c.databaseAgeSeconds()),
    stop: async () => { await Promise.all([...consumers.values()].map((c) => c.stop())) },
  }
}

function agesOf(consumers: ReadonlyMap<MountKey, AdvisoryConsumer>, age: (consumer: AdvisoryConsumer) => number | undefined): Partial<Record<MountKey, number>> {
  const out: Partial<Record<MountKey, number>> = {}
  for (const [key, consumer] of consumers) {
    const seconds = age(consumer)
    if (seconds !== undefined) out[key] = seconds
  }
  return out
}
