/**
 * `DenyIfTrustDowngrade` (issue 17 item 6): denies a public version whose
 * publishing trust is lower than the strongest trust of any version of the
 * same package published earlier, the shape of pnpm's `trustPolicy:
 * no-downgrade` enforced for every client. Levels (decision.ts TrustLevel):
 * trusted publisher (`_npmUser.trustedPublisher`) above provenance
 * (`dist.attestations.provenance`) above none; "earlier" is by the
 * document's `time`, strictly before, and a stable version is compared with
 * earlier stable versions only (pnpm's reading: a prerelease line published
 * from CI does not bind the stable line). A version without a publish time
 * is compared with every other version of its kind. The facts come from the
 * packument (engine/packument/version-history.ts); a version without them
 * (a caller that did not read the history) is not judged.
 *
 * The evidence names both levels and the earlier version. A trusted
 * publisher version can never be a downgrade: the common case returns
 * before anything is built.
 */
import type { EarlierTrust, Phase, TrustLevel } from './decision.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIfTrustDowngradeConfig } from './rule-schema.js'

export const TRUST_WORDS: Readonly<Record<TrustLevel, string>> = Object.freeze({
  0: 'no trust evidence',
  1: 'a provenance attestation',
  2: 'a trusted publisher',
})

export function trustEvidence(level: TrustLevel, earlier: EarlierTrust): readonly string[] {
  return Object.freeze([`trust: ${TRUST_WORDS[level]}`, `earlier: ${earlier.version} with ${TRUST_WORDS[earlier.level]}`])
}

export function denyIfTrustDowngrade(_config: DenyIfTrustDowngradeConfig, phases: ReadonlySet<Phase>): Rule {
  return {
    kind: 'DenyIfTrustDowngrade',
    phases,
    onUnavailable: undefined,
    evaluate(facts): RuleOutcome {
      const level = facts.trust
      const earlier = facts.earlierTrust
      if (level === undefined || earlier === undefined || earlier.level <= level) return ABSTAIN
      return Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'trust_downgrade', evidence: trustEvidence(level, earlier) })
    },
  }
}
