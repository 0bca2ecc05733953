/**
 * Admissions through a waiver on one mount (issue 31 item 2): each is
 * counted (`service.policy.waiver.admissions`), and the first of each
 * version under each waiver is logged at warn with the waiver's reason,
 * author and expiry, so an audit finds who let what through and why. Fed by
 * the main thread with the decisions of listings (their observations) and
 * of public artifact requests, so a version a listing and its artifact both
 * admit is logged once. Holds at most 4096 identities (as the skipped-check
 * record does, SPEC.md 8), forgetting the oldest.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { Logger } from '../log/logger.js'
import type { Decision } from './decision.js'
import { OnceRecord } from './once-record.js'

/** warn, once per version and waiver: a public version was admitted by a waiver, not by the rules. */
export const ADMITTED_BY_WAIVER_MESSAGE = 'admitted by a waiver'

export const WAIVER_ADMISSIONS_CAPACITY = 4096

export class WaiverAdmissions {
  readonly #ecosystem: Ecosystem
  readonly #logger: Logger
  readonly #seen = new OnceRecord(WAIVER_ADMISSIONS_CAPACITY)
  #count = 0

  constructor(ecosystem: Ecosystem, logger: Logger) {
    this.#ecosystem = ecosystem
    this.#logger = logger
  }

  /** Admissions through a waiver so far. */
  get count(): number { return this.#count }

  /** Notes one decision about `name@version`; counts and (the first time) logs it when a waiver admitted it. */
  observe(name: string, version: string, decision: Decision): void {
    const waiver = decision.waiver
    if (waiver === undefined || decision.verdict !== 'admit') return
    this.#count++
    if (!this.#seen.first(JSON.stringify([name, version, waiver.package, waiver.versions, waiver.expires, waiver.by]))) return
    this.#logger.warn(ADMITTED_BY_WAIVER_MESSAGE, {
      ecosystem: this.#ecosystem,
      package: name,
      version,
      waiver: `${waiver.package}@${waiver.versions}`,
      reason: waiver.reason,
      by: waiver.by,
      expires: waiver.expires,
      ...(waiver.overrideMalware ? { overrideMalware: true } : {}),
    })
  }
}
