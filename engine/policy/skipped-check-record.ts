/**
 * The skipped-check record of one ecosystem (SPEC.md 6.2, 8): when the
 * public artifact gate admits a version while an advisory deny set to
 * `onUnavailable: skip` could not vet it, one warning names package,
 * version, rule and cause, once per package, version and skipped rule set
 * for the life of the outage. The record forgets everything when the source
 * recovers (wire `clear` to AdvisoryOutage's `onRecovered`), and holds at
 * most 4096 identities, forgetting the oldest beyond that.
 *
 * The caller feeds only public artifact admissions; a trusted read never
 * comes here (SPEC.md 6.2).
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { ServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { Decision, VersionFacts } from './decision.js'

export const ADMITTED_WITH_SKIPPED_CHECK_MESSAGE = 'admitted with a check skipped for unavailability'

/** SPEC.md 8: identities per ecosystem. */
export const SKIPPED_CHECK_RECORD_CAPACITY = 4096

export interface SkippedCheckRecordOptions {
  readonly ecosystem: Ecosystem
  readonly logger: Logger
  readonly capacity?: number
}

export class SkippedCheckRecord {
  #ecosystem: Ecosystem
  #logger: Logger
  #capacity: number
  /** Insertion-ordered: the first key is the oldest identity. */
  #seen = new Set<string>()

  constructor(options: SkippedCheckRecordOptions) {
    const capacity = options.capacity ?? SKIPPED_CHECK_RECORD_CAPACITY
    if (!Number.isInteger(capacity) || capacity < 1) throw new ServiceError('CONFIG_INVALID', { message: `capacity must be a positive integer, got ${capacity}` })
    this.#ecosystem = options.ecosystem
    this.#logger = options.logger
    this.#capacity = capacity
  }

  get size(): number { return this.#seen.size }

  /**
   * Notes one public artifact decision; logs the warning when it admitted
   * with skipped checks and this identity has not been logged yet. Returns
   * true when it logged.
   */
  admitted(facts: VersionFacts, decision: Decision): boolean {
    if (decision.verdict !== 'admit' || decision.skipped.length === 0) return false
    const rules = [...new Set(decision.skipped.map((s) => s.rule))].sort()
    const causes = [...new Set(decision.skipped.map((s) => s.cause))].sort()
    // JSON keeps the parts apart whatever characters a name or version holds.
    const key = JSON.stringify([facts.name, facts.version, rules])
    if (this.#seen.has(key)) return false
    this.#seen.add(key)
    if (this.#seen.size > this.#capacity) {
      const oldest = this.#seen.values().next().value
      if (oldest !== undefined) this.#seen.delete(oldest)
    }
    this.#logger.warn(ADMITTED_WITH_SKIPPED_CHECK_MESSAGE, {
      ecosystem: this.#ecosystem,
      package: facts.name,
      version: facts.version,
      rule: rules.join(','),
      cause: causes.join(','),
    })
    return true
  }

  /** Forgets every identity: the source recovered, so the next outage warns afresh. */
  clear(): void { this.#seen.clear() }
}
