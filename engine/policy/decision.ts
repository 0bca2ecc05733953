/**
 * What the gate decides about one public version, and what it needs to know
 * to decide (SPEC.md 1.7, 3.3, 3.5). Shared by the rule evaluator
 * (engine/policy) and the packument and artifact paths that call it.
 *
 * The evaluator is pure: it returns observations (a skipped check, an
 * advisory rule that could not consult the database) instead of logging, so
 * it can run in a worker; the main thread feeds them to the outage tracker
 * and the skipped-check record, which own the log lines of SPEC.md 3.3/6.2.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'

export type Phase = 'admission' | 'revocation'

export const RULE_KINDS = [
  'DenyIdentity', 'DenyIfCve', 'DenyIfEpss', 'AllowIfRemediatesCve', 'AllowIfOlderThan', 'DenyIfTrustDowngrade', 'DenyIfInstallScriptAdded',
  'DenyIfPublishedAfter', 'DenyIfMalicious',
  'DenyIfInstallScriptChanged', 'DenyIfDependencyAdded',
] as const
export type RuleKind = (typeof RULE_KINDS)[number]

/**
 * Publishing trust of a version (the reading of pnpm's `trustPolicy:
 * no-downgrade`): 2 a trusted publisher (`_npmUser.trustedPublisher` is
 * set), 1 a provenance attestation (`dist.attestations.provenance` is set),
 * 0 neither.
 */
export type TrustLevel = 0 | 1 | 2

/** The strongest trust of the versions published before a version, and the first version published with it. */
export interface EarlierTrust {
  readonly level: TrustLevel
  readonly version: string
}

/**
 * What a version's own manifest and its package's history say, read from the
 * public document only when a configured rule needs it (FactNeeds); absent
 * otherwise. The artifact route carries them in the selected-version record
 * (engine/packument/merge.ts SelectedVersion), since it gates without the
 * document.
 */
export interface HistoryFacts {
  /** DenyIfTrustDowngrade: this version's trust. */
  readonly trust?: TrustLevel
  /** DenyIfTrustDowngrade: the strongest trust published earlier (undefined: none earlier had any). */
  readonly earlierTrust?: EarlierTrust
  /** DenyIfInstallScriptAdded: the manifest has preinstall, install or postinstall, or `hasInstallScript: true`. */
  readonly installScript?: boolean
  /**
   * DenyIfInstallScriptAdded, only for a version with an install script: the
   * previous version (the greatest lower semver version published before it)
   * when that one had no install script; undefined when it had one or there
   * is no previous version.
   */
  readonly scriptAddedAfter?: string
  /**
   * DenyIfInstallScriptChanged: how this version's install scripts differ
   * from its previous version's (the same previous version as above);
   * undefined when they do not, or there is no previous version.
   */
  readonly installScriptChange?: InstallScriptChange
  /** DenyIfDependencyAdded: the dependency names this version adds to its previous version's; undefined when none. */
  readonly dependencyAddition?: DependencyAddition
}

/** What DenyIfInstallScriptChanged found (engine/packument/manifest-changes.ts). */
export interface InstallScriptChange {
  /** The previous version compared with. */
  readonly since: string
  /** Hooks (`preinstall`, `install`, `postinstall`) set here and not there. */
  readonly added: readonly string[]
  /** Hooks set in both whose command differs. */
  readonly changed: readonly string[]
}

/** What DenyIfDependencyAdded found (engine/packument/manifest-changes.ts). */
export interface DependencyAddition {
  /** The previous version compared with. */
  readonly since: string
  /** The new names, sorted. */
  readonly names: readonly string[]
}

/** Which history facts the configured rules read: the packument path records only those. */
export interface FactNeeds {
  readonly trust: boolean
  readonly installScripts: boolean
  /** DenyIfInstallScriptChanged (absent: false). */
  readonly scriptChanges?: boolean
  /** DenyIfDependencyAdded (absent: false). */
  readonly dependencies?: boolean
  /**
   * The longest quarantine of those two rules, ms: a version older than that
   * when a listing is rendered can never be withheld by them again, so its
   * selected-version record carries no comparison (the work is done only
   * for young versions).
   */
  readonly signalsWithinMs?: number
}

export const NO_FACT_NEEDS: FactNeeds = Object.freeze({ trust: false, installScripts: false })

/** Whether a rule list reads any history fact at all (else the packument path builds no history). */
export function readsHistory(needs: FactNeeds | undefined): boolean {
  return needs !== undefined && (needs.trust || needs.installScripts || needs.scriptChanges === true || needs.dependencies === true)
}

/** The facts about one candidate version that rules read. */
export interface VersionFacts extends HistoryFacts {
  readonly ecosystem: Ecosystem
  readonly name: string
  readonly version: string
  /** The upstream's publish time for this version (`time[version]`), never when we first saw it. */
  readonly publishedAt: Date | undefined
  /**
   * Optional: the same time in milliseconds since the epoch, for a caller
   * that holds it without making a Date (the packument path). When given it
   * must agree with `publishedAt`; rules read it first.
   */
  readonly publishedMs?: number | undefined
}

/** Why an advisory rule could not consult the database (SPEC.md 3.3 causes). */
export type UnavailableCause = 'no_database' | 'expired' | 'lookup_fault' | 'breaker_open'

export interface AdvisoryObservation {
  readonly rule: RuleKind
  /** undefined: the rule consulted the database successfully. */
  readonly cause: UnavailableCause | undefined
  readonly detail?: string
}

export interface SkippedCheck {
  readonly rule: RuleKind
  readonly cause: UnavailableCause
}

/** What a decision admitted by a waiver carries (Decision.waiver): the waiver as written (engine/policy/waivers.ts), for logs and the why route. */
export interface WaiverRef {
  readonly package: string
  readonly versions: string
  readonly reason: string
  readonly by: string
  readonly expires: string
  readonly overrideMalware: boolean
}

/**
 * `admit` and `deny` are decisions of a rule (or deny by default, rule
 * undefined). `unavailable` is a refusal because an advisory rule could not
 * vet the version (retryable 503); `expired` is the same for a push past its
 * maximum age, which `onUnavailable: skip` never waives (SPEC.md 3.5).
 */
export type Verdict = 'admit' | 'deny' | 'unavailable' | 'expired'

export interface Decision {
  readonly verdict: Verdict
  /** The rule that decided; undefined for deny by default. */
  readonly rule: RuleKind | undefined
  /** Index of that rule in the mount's list. */
  readonly ruleIndex: number | undefined
  /** Short machine-readable reason, e.g. 'cve', 'epss', 'identity', 'quarantine', 'default'. */
  readonly reason: string
  /** Advisory ids or other evidence the rule acted on (kept in the decision and the log only). */
  readonly evidence: readonly string[]
  /** Advisory denies set to `onUnavailable: skip` that were skipped on the way to this verdict. */
  readonly skipped: readonly SkippedCheck[]
  /** Every advisory-denying rule reached, with whether it could consult the database. */
  readonly advisory: readonly AdvisoryObservation[]
  /** For `expired`: the push age and the maximum, seconds, for the 503 message. */
  readonly ageSeconds?: number
  readonly maxAgeSeconds?: number
  /** Set when a waiver admitted the version (reason 'waiver', no rule): the waiver as written (engine/policy/waivers.ts). */
  readonly waiver?: WaiverRef
}

export interface Evaluator {
  evaluate(facts: VersionFacts, phase: Phase): Decision
  /** The history facts the rules of this evaluator read (any phase). */
  readonly needs: FactNeeds
  /** The ages (ms after publication) at which an admission decision about a version of the package can change. */
  readonly ageSteps: (packageName: string) => readonly number[]
  /**
   * The first moment after `now` (ms since the epoch) at which a decision
   * about a version of the package can change with nothing else changing
   * (a waiver naming it expires); absent or undefined: none is known.
   */
  readonly regateAt?: (packageName: string, now: number) => number | undefined
}
