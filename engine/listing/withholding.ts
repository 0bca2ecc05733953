/**
 * What a listing's gate leaves for the main thread, shared by the packument
 * merge (engine/packument/merge.ts) and the `py` project page
 * (engine/pypi/project-page.ts): the decisions it must see, and when no
 * version survived, why (SPEC.md 4.2: the most recoverable cause wins), with
 * the refusal the route answers.
 */
import { advisoryExpired, ServiceError } from '../errors.js'
import type { Decision } from '../policy/decision.js'

/** A decision the main thread must see: a skipped check or an advisory rule that could not consult the database. */
export interface VersionObservation {
  readonly version: string
  readonly decision: Decision
  /** Set on the refusal of a private version (the private side's malware judgement, engine/policy/private-malware-gate.ts). */
  readonly private?: true
}

/** Why nothing survived (SPEC.md 4.2: the most recoverable cause wins). */
export interface Withholding {
  readonly code: 'ADVISORY_UNAVAILABLE' | 'ADVISORY_EXPIRED' | 'POLICY_WITHHELD'
  readonly ageSeconds?: number
  readonly maxAgeSeconds?: number
  /** POLICY_WITHHELD: how many public versions each cause withheld, for the envelope's sentence (issue 17 item 5). */
  readonly causes?: Readonly<Record<string, number>>
}

/** Why the refused `decisions` withheld everything, `unservable` more withheld before any rule; undefined when none was refused. */
export function withholdingOf(decisions: readonly Decision[], unservable: number): Withholding | undefined {
  let expired: Decision | undefined
  let denied = unservable > 0
  const causes: Record<string, number> = unservable > 0 ? { unservable } : {}
  for (const decision of decisions) {
    if (decision.verdict === 'unavailable') return { code: 'ADVISORY_UNAVAILABLE' }
    if (decision.verdict === 'expired') expired ??= decision
    else {
      denied = true
      const cause = NAMED_CAUSES.has(decision.reason) ? decision.reason : 'not_admitted'
      causes[cause] = (causes[cause] ?? 0) + 1
    }
  }
  if (expired !== undefined) {
    return {
      code: 'ADVISORY_EXPIRED',
      ...(expired.ageSeconds === undefined ? {} : { ageSeconds: expired.ageSeconds }),
      ...(expired.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: expired.maxAgeSeconds }),
    }
  }
  return denied ? { code: 'POLICY_WITHHELD', causes } : undefined
}

const NAMED_CAUSES: ReadonlySet<string> = new Set(['cve', 'epss', 'identity', 'trust_downgrade', 'install_script_added', 'freeze', 'malware', 'install_script_changed', 'dependency_added'])

const CAUSE_WORDS: Readonly<Record<string, string>> = {
  trust_downgrade: 'published with less trust than an earlier version (DenyIfTrustDowngrade)',
  install_script_added: 'adding an install script, in its quarantine (DenyIfInstallScriptAdded)',
  install_script_changed: 'adding or rewriting an install script, in its quarantine (DenyIfInstallScriptChanged)',
  dependency_added: 'adding a dependency, in its quarantine (DenyIfDependencyAdded)',
  cve: 'with known advisories (DenyIfCve)',
  epss: 'with advisories above the exploit-probability threshold (DenyIfEpss)',
  identity: 'denied by name and version (DenyIdentity)',
  freeze: 'published after the freeze, or without a publish time (DenyIfPublishedAfter)',
  malware: 'named by a malicious-package record (DenyIfMalicious)',
  not_admitted: 'in quarantine or admitted by no rule (ask for one version\'s tarball to see when it is admitted)',
  unservable: 'unservable (an unreadable or disagreeing key, or no usable integrity digest)',
}

/** 'every public version is withheld by policy: 2 with known advisories (DenyIfCve), 1 ...' */
export function withholdingSentence(causes: Readonly<Record<string, number>>): string {
  const parts = Object.entries(causes).filter(([, n]) => n > 0).map(([cause, n]) => `${n} ${CAUSE_WORDS[cause] ?? cause}`)
  return parts.length === 0 ? 'withheld by policy' : `every public version is withheld by policy: ${parts.join(', ')}`
}

/** The refusal the listing route answers with when nothing survived, or undefined to serve the document. */
export function withholdingError(withholding: Withholding | undefined): ServiceError | undefined {
  if (withholding === undefined) return undefined
  if (withholding.code === 'ADVISORY_EXPIRED') return advisoryExpired(withholding.ageSeconds, withholding.maxAgeSeconds)
  if (withholding.code === 'POLICY_WITHHELD' && withholding.causes !== undefined) {
    return new ServiceError('POLICY_WITHHELD', { message: withholdingSentence(withholding.causes), data: { causes: withholding.causes } })
  }
  return new ServiceError(withholding.code)
}
