/**
 * The policy document of a role, read at boot and again on SIGHUP and every
 * `policy.pollSeconds` (issue 31 item 1), so every replica and every role
 * converges on the document's rules without a restart (SPEC.md 9:
 * convergence is eventual, bounded by the poll). The document is a file
 * (`policy.file`) or the store's object (`policy.store`,
 * engine/config/policy-source.ts).
 *
 * At boot an unreadable or invalid document stops the role (SPEC.md 7.2's
 * exit 2): `bootPolicy` throws CONFIG_INVALID naming every problem. One
 * exception, for the store: an object that does not exist yet (no `service
 * policy push` so far) boots the role with its configured rules, logged at
 * warn, and the poll picks the object up once it is written; a store that
 * cannot be read is exit 2 like a file. After boot a document is applied
 * whole or not at all: one that does not validate leaves the running policy
 * in force, is logged once per read as one error line naming every problem,
 * and counted (`service.policy.reloads{result=refused}`). A valid document
 * whose digest is that of the policy in force changes nothing
 * (`unchanged`); another is swapped into every mount (`applied`), which
 * moves each mount's generation, so no answer rendered under the old rules
 * is served after the swap.
 */
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { policyProblemsSentence, type PolicyDocument } from '../../engine/config/policy-document.js'
import { filePolicySource, storePolicySource, type PolicySource } from '../../engine/config/policy-source.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import { ServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { WaiverConfig } from '../../engine/policy/waivers.js'
import type { ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import { readsAdvisories } from './advisory-wiring.js'
import { describeObjectStore, openObjectStore } from './object-store.js'

/** info: a policy document was put in force (at boot, or a changed one after). */
export const POLICY_APPLIED = 'policy applied'
/** error: a policy document was refused whole; the policy in force stays. */
export const POLICY_REFUSED = 'policy document refused'
/** warn: `policy.store` is set and the store holds no document yet: the configured rules are in force until one is pushed. */
export const POLICY_NOT_IN_STORE = 'policy document not in the store yet; the configured rules are in force'

/** `cycle`: the Dredger reads the document at the start of each cycle. */
export type PolicyTrigger = 'boot' | 'sighup' | 'poll' | 'cycle'

/** The digest a role boots with when the store holds no document: no document's digest equals it. */
const NO_DOCUMENT = 'none'

/** The policy a role boots with: the document's, with its digest and its source; undefined when the role reads no document. */
export interface BootPolicy {
  readonly source: PolicySource
  readonly document: PolicyDocument
  readonly digest: string
}

/** The source the configuration names: `policy.file`, the store's object (`policy.store`), or none. */
export async function policySourceOf(config: Config, clock: Clock, forwardProxy?: ForwardProxy): Promise<PolicySource | undefined> {
  if (config.policy.file !== undefined) return filePolicySource(config.policy.file)
  if (config.policy.store !== true) return undefined
  return storePolicySource(await openObjectStore(config.store, clock, undefined, forwardProxy), describeObjectStore(config.store))
}

/**
 * Reads the role's policy source for the boot; throws CONFIG_INVALID (exit 2)
 * when it cannot be read or does not validate. A store without the object
 * boots with the configured rules (an empty document, logged at warn).
 */
export async function bootPolicy(config: Config, clock: Clock, logger: Logger, forwardProxy?: ForwardProxy): Promise<BootPolicy | undefined> {
  const source = await policySourceOf(config, clock, forwardProxy)
  if (source === undefined) return undefined
  const read = await source.read(clock.now())
  if (!read.ok && read.absent === true) {
    logger.warn(POLICY_NOT_IN_STORE, { ...source.fields })
    return { source, document: {}, digest: NO_DOCUMENT }
  }
  if (!read.ok) throw new ServiceError('CONFIG_INVALID', { message: policyProblemsSentence(source.name, read.problems) })
  logger.info(POLICY_APPLIED, { trigger: 'boot', ...source.fields, digest: read.digest, ...summary(read.document) })
  return { source, document: read.document, digest: read.digest }
}

/** The configuration with each mount's rules replaced by the document's, where it names them. */
export function withPolicyRules(config: Config, boot: BootPolicy | undefined): Config {
  if (boot === undefined) return config
  const mounts: Record<string, unknown> = { ...config.mounts }
  for (const key of MOUNT_KEYS) {
    const mount = config.mounts[key]
    const rules = boot.document.mounts?.[key]?.rules
    if (mount !== undefined && rules !== undefined) mounts[key] = { ...mount, rules }
  }
  return { ...config, mounts: mounts as Config['mounts'] }
}

/** What a reload swaps: a mount's policy (engine/policy/mount-policy.ts), or the Dredger's judge of it. */
export interface PolicyTarget {
  swap(rules: readonly RuleConfig[], waivers: readonly WaiverConfig[]): void
}

export interface PolicyReloaderOptions {
  readonly boot: BootPolicy
  /** Each mount's policy, with the rules its configuration gives (a mount the document does not name keeps them). */
  readonly mounts: ReadonlyMap<MountKey, { readonly policy: PolicyTarget; readonly configured: readonly RuleConfig[] }>
  readonly pollSeconds: number
  readonly logger: Logger
  readonly clock: Clock
  /**
   * Default true: refuse an advisory rule on a mount that booted without one
   * (the proxy opened no advisory database for it). The Dredger, which never
   * reads the database, passes false.
   */
  readonly checkAdvisories?: boolean
}

export class PolicyReloader {
  readonly #o: PolicyReloaderOptions
  #digest: string
  #timer: NodeJS.Timeout | undefined
  /** One read at a time: a SIGHUP during a poll waits for it. */
  #chain: Promise<void> = Promise.resolve()
  readonly #counts = { applied: 0, unchanged: 0, refused: 0 }

  constructor(options: PolicyReloaderOptions) {
    this.#o = options
    this.#digest = options.boot.digest
  }

  /** Reads counted by result (`service.policy.reloads`). */
  get counts(): Readonly<Record<'applied' | 'unchanged' | 'refused', number>> { return { ...this.#counts } }

  /** The digest of the document in force. */
  get digest(): string { return this.#digest }

  start(): void {
    if (this.#o.pollSeconds <= 0 || this.#timer !== undefined) return
    this.#timer = setInterval(() => { void this.reload('poll') }, this.#o.pollSeconds * 1000)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** Reads the document again and applies it whole, or refuses it whole; never throws. */
  reload(trigger: PolicyTrigger): Promise<void> {
    this.#chain = this.#chain.then(() => this.#reload(trigger)).catch((error: unknown) => {
      this.#counts.refused++
      this.#o.logger.error(POLICY_REFUSED, { trigger, ...this.#o.boot.source.fields, problems: [String((error as Error)?.message ?? error)] })
    })
    return this.#chain
  }

  async #reload(trigger: PolicyTrigger): Promise<void> {
    const { boot, mounts, logger, clock } = this.#o
    const { source } = boot
    const read = await source.read(clock.now())
    // Still no object in the store since a boot without one: the configured rules stay, nothing to say at each poll.
    if (!read.ok && read.absent === true && this.#digest === NO_DOCUMENT) {
      this.#counts.unchanged++
      return
    }
    const problems = read.ok ? this.#roleProblems(read.document) : read.problems
    if (!read.ok || problems.length > 0) {
      this.#counts.refused++
      logger.error(POLICY_REFUSED, { trigger, ...source.fields, digestInForce: this.#digest, message: policyProblemsSentence(source.name, problems), problems })
      return
    }
    if (read.digest === this.#digest) {
      this.#counts.unchanged++
      return
    }
    const waivers = read.document.waivers ?? []
    for (const [key, { policy, configured }] of mounts) policy.swap(read.document.mounts?.[key]?.rules ?? configured, waivers)
    this.#digest = read.digest
    this.#counts.applied++
    logger.info(POLICY_APPLIED, { trigger, ...source.fields, digest: read.digest, ...summary(read.document) })
  }

  /**
   * What a valid document asks that this running role cannot do without a
   * restart: advisory rules on a mount that booted without them (its
   * advisory database was never opened, SPEC.md 3.4).
   */
  #roleProblems(document: PolicyDocument): string[] {
    const problems: string[] = []
    if (this.#o.checkAdvisories === false) return problems
    for (const [key, { configured }] of this.#o.mounts) {
      const rules = document.mounts?.[key]?.rules ?? configured
      if (readsAdvisories(rules) && !readsAdvisories(this.#bootRules(key))) {
        problems.push(`mounts.${key}.rules: an advisory rule needs the advisory database, which this role did not open at boot; restart it to apply`)
      }
    }
    return problems
  }

  #bootRules(key: MountKey): readonly RuleConfig[] {
    return this.#o.boot.document.mounts?.[key]?.rules ?? this.#o.mounts.get(key)?.configured ?? []
  }
}

/** What a log line says of a document: its waivers and the mounts whose rules it sets. */
function summary(document: PolicyDocument): { waivers: number; mounts: string[] } {
  return { waivers: document.waivers?.length ?? 0, mounts: MOUNT_KEYS.filter((k) => document.mounts?.[k] !== undefined) }
}
