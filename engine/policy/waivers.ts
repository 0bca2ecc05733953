/**
 * Waivers (issue 31 item 2): break-glass admissions of named versions of one
 * package, for a bounded time, with a reason and an author. Nexus and
 * Artifactory call them waivers; teams that have none drop their age gates
 * the first time one urgently needed version sits in quarantine.
 *
 * A waiver admits ahead of every rule of its mount (the quarantine, an
 * identity denial, an advisory, the freeze), in both phases (the Dredger
 * does not remove a waived version while the waiver holds), except the
 * malware rules: a version a malware record names is denied even while a
 * waiver names it, unless the waiver says `overrideMalware: true`. That flag
 * should not be used: a malware record says the bytes are hostile, and no
 * deadline makes a hostile package safe to install; the one honest use is a
 * record known to be wrong, and then the record is what should be fixed.
 *
 * Expiry is mandatory and bounded: at most MAX_WAIVER_SECONDS after the
 * moment the document is read, so a forgotten waiver cannot outlive a
 * month. An expired waiver stays in the document harmlessly and admits
 * nothing from its `expires` on; a retained answer it shaped is gated again
 * at that instant (engine/listing/regate-at.ts).
 */
import Type, { type Static } from 'typebox'
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { RuleKind, WaiverRef } from './decision.js'
import { identityMatcher, normalizePyName, type IdentityMatcher } from './identity-matcher.js'
import { parseInstant } from './instant.js'

/** The longest a waiver may run: 30 days from when its document is read (documented in docs/policy.md). */
export const MAX_WAIVER_SECONDS = 30 * 86_400

/**
 * The rule kinds a waiver does not pass unless it says `overrideMalware`:
 * those that deny on a malware record (DenyIfMalicious, issue 31 item 4).
 * The evaluator judges them ahead of a matching waiver (waived-evaluator.ts).
 */
export const MALWARE_RULE_KINDS: ReadonlySet<RuleKind> = new Set<RuleKind>(['DenyIfMalicious'])

export const WAIVER_SCHEMA = Type.Object({
  /** The package, as the mount names it (`py`: compared after PEP 503 normalisation). */
  package: Type.String({ minLength: 1, maxLength: 214 }),
  /** `js`: an exact version or a semver range; `py`: an exact version or a PEP 440 specifier set (as DenyIdentity reads them). */
  versions: Type.String({ minLength: 1, maxLength: 256 }),
  /** Why: logged with every first admission and shown by the why route. */
  reason: Type.String({ minLength: 1, maxLength: 500 }),
  /** RFC 3339 instant with an offset; at most MAX_WAIVER_SECONDS after the document is read. */
  expires: Type.String({ minLength: 1 }),
  /** Who granted it. */
  by: Type.String({ minLength: 1, maxLength: 200 }),
  /** The mount whose versions it admits; default `js`. */
  mount: Type.Optional(Type.Union([Type.Literal('js'), Type.Literal('py')])),
  /** Pass the malware rules too. Do not: see the module comment. */
  overrideMalware: Type.Optional(Type.Boolean()),
}, { additionalProperties: false })

export type WaiverConfig = Static<typeof WAIVER_SCHEMA>

/** One waiver ready to match: its expiry in ms and its identity matcher. */
export interface CompiledWaiver {
  readonly ref: WaiverRef
  readonly expiresMs: number
  readonly matcher: IdentityMatcher
}

/** The mount a waiver applies to. */
export function waiverMount(waiver: WaiverConfig): Ecosystem {
  return waiver.mount ?? 'js'
}

/** The name a mount compares: `py` names after PEP 503 normalisation. */
export function waiverKey(ecosystem: Ecosystem, name: string): string {
  return ecosystem === 'py' ? normalizePyName(name) : name
}

/**
 * Problems the schema cannot see, one sentence each, located as
 * `waivers[i]`: a `versions` that is no range of the mount's ecosystem, an
 * `expires` that is no RFC 3339 instant, or one more than MAX_WAIVER_SECONDS
 * after `now`. An expiry already past is no problem: the waiver admits
 * nothing, and a document does not turn invalid as time passes.
 */
export function waiverProblems(waivers: readonly WaiverConfig[], now: number): string[] {
  const problems: string[] = []
  waivers.forEach((waiver, index) => {
    const at = `waivers[${index}] (${waiver.package}@${waiver.versions})`
    const matcher = identityMatcher(waiverMount(waiver), waiver.package, waiver.versions)
    if (typeof matcher === 'string') problems.push(`${at} versions: ${matcher}`)
    const expires = parseInstant(waiver.expires)
    if (typeof expires === 'string') problems.push(`${at} expires: ${expires}`)
    else if (expires - now > MAX_WAIVER_SECONDS * 1000) {
      problems.push(`${at} expires: ${waiver.expires} is more than ${MAX_WAIVER_SECONDS / 86_400} days away (the longest a waiver may run)`)
    }
  })
  return problems
}

/** The waivers of one mount, compiled; throws nothing: call waiverProblems first (an invalid one is left out). */
export function compileWaivers(ecosystem: Ecosystem, waivers: readonly WaiverConfig[]): CompiledWaiver[] {
  const compiled: CompiledWaiver[] = []
  for (const waiver of waivers) {
    if (waiverMount(waiver) !== ecosystem) continue
    const matcher = identityMatcher(ecosystem, waiver.package, waiver.versions)
    const expiresMs = parseInstant(waiver.expires)
    if (typeof matcher === 'string' || typeof expiresMs === 'string') continue
    compiled.push({
      ref: Object.freeze({ package: waiver.package, versions: waiver.versions, reason: waiver.reason, by: waiver.by, expires: waiver.expires, overrideMalware: waiver.overrideMalware === true }),
      expiresMs,
      matcher,
    })
  }
  return compiled
}
