/**
 * Versions the two supply-chain signals withheld on one mount (issue 31
 * item 5): DenyIfInstallScriptChanged (`install_script_changed`) and
 * DenyIfDependencyAdded (`dependency_added`), for
 * `service.policy.signal.withheld{signal}`. Each version is counted once
 * per signal however many listings and artifact requests refuse it (a
 * popular package's young version is refused on every install), so the
 * counter reads as "versions caught". Fed by the main thread with the
 * decisions of listings (their observations) and of public artifact
 * requests. Holds at most 4096 identities per mount (as the skipped-check
 * record does, SPEC.md 8), forgetting the oldest, which then counts again.
 */
import type { Decision } from './decision.js'
import { OnceRecord } from './once-record.js'

/** The reasons of the two signals, as decisions carry them, and the label each counts under. */
export const SIGNAL_REASONS: ReadonlyMap<string, string> = new Map([
  ['install_script_changed', 'install_script_changed'],
  ['dependency_added', 'dependency_added'],
])

export const SIGNAL_WITHHOLDINGS_CAPACITY = 4096

export class SignalWithholdings {
  readonly #seen = new OnceRecord(SIGNAL_WITHHOLDINGS_CAPACITY)
  readonly #counts: Record<string, number> = { install_script_changed: 0, dependency_added: 0 }

  /** Versions withheld so far, by signal. */
  get counts(): Readonly<Record<string, number>> { return { ...this.#counts } }

  /** Notes one decision about `name@version`; counts it the first time a signal withholds that version. */
  observe(name: string, version: string, decision: Decision): void {
    const signal = SIGNAL_REASONS.get(decision.reason)
    if (signal === undefined || decision.verdict !== 'deny') return
    if (!this.#seen.first(JSON.stringify([signal, name, version]))) return
    this.#counts[signal] = (this.#counts[signal] ?? 0) + 1
  }
}
