/** `DenyIdentity`: denies a named package version or range (SPEC.md 1.7). */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { ServiceError } from '../errors.js'
import type { Phase } from './decision.js'
import { identityMatcher } from './identity-matcher.js'
import { ABSTAIN, type Rule, type RuleOutcome } from './rule.js'
import type { DenyIdentityConfig } from './rule-schema.js'

export function denyIdentity(config: DenyIdentityConfig, ecosystem: Ecosystem, phases: ReadonlySet<Phase>): Rule {
  const matcher = identityMatcher(ecosystem, config.package, config.versions)
  if (typeof matcher === 'string') {
    throw new ServiceError('CONFIG_INVALID', { message: `DenyIdentity for ${config.package}: ${matcher}`, data: { ecosystem } })
  }
  const evidence = Object.freeze([`${config.package}@${config.versions}`])
  const deny: RuleOutcome = Object.freeze({ kind: 'decide', verdict: 'deny', reason: 'identity', evidence })
  return {
    kind: 'DenyIdentity',
    phases,
    onUnavailable: undefined,
    evaluate: (facts) => (matcher.matches(facts.name, facts.version) ? deny : ABSTAIN),
  }
}
