import type { Decision, Verdict } from '../../engine/policy/decision.js'

/** A Decision of the given verdict, as a rule list's evaluator would hand it back, for tests that stand in for the rule evaluator. */
export function decision(verdict: Verdict, extra: Partial<Decision> = {}): Decision {
  return {
    verdict,
    rule: verdict === 'admit' ? 'AllowIfOlderThan' : undefined,
    ruleIndex: verdict === 'admit' ? 0 : undefined,
    reason: verdict === 'admit' ? 'quarantine' : 'default',
    evidence: [],
    skipped: [],
    advisory: [],
    ...extra,
  }
}
