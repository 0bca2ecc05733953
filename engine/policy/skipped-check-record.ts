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
import type { Logger } from '../log/logger.js'
import type { Decision, VersionFacts } from './decision.js'
import { OnceRecord } from './once-record.js'

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
  #seen: OnceRecord

  constructor(options: SkippedCheckRecordOptions) {
    this.#seen = new OnceRecord(options.capacity ?? SKIPPED_CHECK_RECORD_CAPACITY)
    this.#ecosystem = options.ecosystem
    this.#logger = options.logger
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
    if (!this.#seen.first(JSON.stringify([facts.name, facts.version, rules]))) return false
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
