/**
 * The policy document of a role, read at boot and again on SIGHUP and every
 * `policy.pollSeconds` (issue 31 item 1), so every replica and every role
 * converges on the file's rules without a restart (SPEC.md 9: convergence is
 * eventual, bounded by the poll).
 *
 * At boot an unreadable or invalid document stops the role (SPEC.md 7.2's
 * exit 2): `bootPolicy` throws CONFIG_INVALID naming every problem. After
 * boot a document is applied whole or not at all: one that does not
 * validate leaves the running policy in force, is logged once per read as
 * one error line naming every problem, and counted
 * (`service.policy.reloads{result=refused}`). A valid document whose digest
 * is that of the policy in force changes nothing (`unchanged`); another is
 * swapped into every mount (`applied`), which moves each mount's generation,
 * so no answer rendered under the old rules is served after the swap.
 */
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import { policyProblemsSentence, readPolicyDocument, type PolicyDocument } from '../../engine/config/policy-document.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import { ServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { MountPolicy } from '../../engine/policy/mount-policy.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { readsAdvisories } from './advisory-wiring.js'

/** info: a policy document was put in force (at boot, or a changed one after). */
export const POLICY_APPLIED = 'policy applied'
/** error: a policy document was refused whole; the policy in force stays. */
export const POLICY_REFUSED = 'policy document refused'

export type PolicyTrigger = 'boot' | 'sighup' | 'poll'

/** The policy a role boots with: the document's, with its digest; undefined without `policy.file`. */
export interface BootPolicy {
  readonly file: string
  readonly document: PolicyDocument
  readonly digest: string
}

/** Reads `policy.file` for the boot; throws CONFIG_INVALID (exit 2) when it cannot be read or does not validate. */
export async function bootPolicy(config: Config, clock: Clock, logger: Logger): Promise<BootPolicy | undefined> {
  const file = config.policy.file
  if (file === undefined) return undefined
  const read = await readPolicyDocument(file, clock.now())
  if (!read.ok) throw new ServiceError('CONFIG_INVALID', { message: policyProblemsSentence(file, read.problems) })
  logger.info(POLICY_APPLIED, { trigger: 'boot', file, digest: read.digest, ...summary(read.document) })
  return { file, document: read.document, digest: read.digest }
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

export interface PolicyReloaderOptions {
  readonly boot: BootPolicy
  /** Each mount's policy, with the rules its configuration gives (a mount the document does not name keeps them). */
  readonly mounts: ReadonlyMap<MountKey, { readonly policy: MountPolicy; readonly configured: readonly RuleConfig[] }>
  readonly pollSeconds: number
  readonly logger: Logger
  readonly clock: Clock
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
      this.#o.logger.error(POLICY_REFUSED, { trigger, file: this.#o.boot.file, problems: [String((error as Error)?.message ?? error)] })
    })
    return this.#chain
  }

  async #reload(trigger: PolicyTrigger): Promise<void> {
    const { boot, mounts, logger, clock } = this.#o
    const read = await readPolicyDocument(boot.file, clock.now())
    const problems = read.ok ? this.#roleProblems(read.document) : read.problems
    if (!read.ok || problems.length > 0) {
      this.#counts.refused++
      logger.error(POLICY_REFUSED, { trigger, file: boot.file, digestInForce: this.#digest, message: policyProblemsSentence(boot.file, problems), problems })
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
    logger.info(POLICY_APPLIED, { trigger, file: boot.file, digest: read.digest, ...summary(read.document) })
  }

  /**
   * What a valid document asks that this running role cannot do without a
   * restart: advisory rules on a mount that booted without them (its
   * advisory database was never opened, SPEC.md 3.4).
   */
  #roleProblems(document: PolicyDocument): string[] {
    const problems: string[] = []
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
