/**
 * One shared table of evaluator cases (STYLE.md: one suite for every
 * behaviour of the interface). Times are relative to the evaluation's `now`.
 */
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import type { MemoryAdvisory } from '../doubles/memory-advisory-database.js'
import type { AdvisoryObservation, Phase, SkippedCheck, Verdict } from '../../engine/policy/decision.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'

export const DAY = 86_400

export const JS_ADVISORIES: readonly MemoryAdvisory[] = [
  { id: 'GHSA-35jh-r3h4-6jhm', package: 'lodash', aliases: ['CVE-2021-23337'], ranges: [{ introduced: '0', fixed: '4.17.21' }], epss: 0.7 },
  { id: 'GHSA-vh95-rmgr-6w4m', package: 'minimist', aliases: ['CVE-2020-7598'], ranges: [{ introduced: '0', fixed: '1.2.2' }], epss: 0.02 },
  { id: 'MAL-2025-1', package: 'evil-pkg', versions: ['1.0.1'] },
  { id: 'GHSA-none-epss-0000', package: 'quiet-lib', ranges: [{ introduced: '2.0.0', lastAffected: '2.0.3' }] },
  { id: 'GHSA-with-draw-0000', package: 'withdrawn-lib', ranges: [{ introduced: '0' }], withdrawn: true },
  { id: 'GHSA-fixd-in20-0000', package: 'two-faced', ranges: [{ introduced: '0', fixed: '2.0.0' }] },
  { id: 'MAL-2025-2', package: 'two-faced', versions: ['2.0.0'] },
]

export const PY_ADVISORIES: readonly MemoryAdvisory[] = [
  { id: 'PYSEC-2023-1', package: 'Django', aliases: ['CVE-2023-1111'], ranges: [{ introduced: '4.0', fixed: '4.1.7' }], epss: 0.6 },
]

export interface CaseDatabase {
  /** Push age in seconds at evaluation time; null: the store reported no publication time. */
  readonly pushAgeSeconds: number | null
  readonly epssStatus?: 'available' | 'unavailable'
  readonly lookupFault?: boolean
}

export interface EvaluatorCase {
  readonly name: string
  readonly ecosystem?: Ecosystem
  readonly rules: readonly RuleConfig[]
  /** undefined: before the first sync (no database). */
  readonly database?: CaseDatabase
  readonly maxAgeSeconds?: number
  readonly breakerOpen?: boolean
  readonly phase?: Phase
  readonly facts: { readonly name: string; readonly version: string; readonly publishedAgoSeconds?: number }
  readonly expect: {
    readonly verdict: Verdict
    readonly rule?: string
    readonly ruleIndex?: number
    readonly reason: string
    readonly evidence?: readonly string[]
    readonly skipped?: readonly SkippedCheck[]
    readonly advisory?: readonly Pick<AdvisoryObservation, 'rule' | 'cause'>[]
    readonly ageSeconds?: number
    readonly maxAgeSeconds?: number
  }
}

const fresh: CaseDatabase = { pushAgeSeconds: 3600, epssStatus: 'available' }
const quarantine: RuleConfig = { rule: 'AllowIfOlderThan', seconds: 7 * DAY }

export const EVALUATOR_CASES: readonly EvaluatorCase[] = [
  // First decides, deny by default.
  {
    name: 'no rules: deny by default',
    rules: [],
    facts: { name: 'left-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', reason: 'default', evidence: [], skipped: [], advisory: [] },
  },
  {
    name: 'no rule decides: deny by default',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }, quarantine],
    facts: { name: 'other', version: '1.0.0', publishedAgoSeconds: DAY },
    expect: { verdict: 'deny', reason: 'default' },
  },
  {
    name: 'the first rule that decides stops: an identity deny before the quarantine',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }, quarantine],
    facts: { name: 'left-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', ruleIndex: 0, reason: 'identity', evidence: ['left-pad@1.3.0'] },
  },
  {
    name: 'the first rule that decides stops: the quarantine admits before a later identity deny',
    rules: [quarantine, { rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }],
    facts: { name: 'left-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 0, reason: 'quarantine' },
  },

  // Identity by range.
  {
    name: 'identity by semver range: inside',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '>=1.2.0 <1.4.0' }, quarantine],
    facts: { name: 'left-pad', version: '1.3.5', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },
  {
    name: 'identity by semver range: a pre-release inside the range is denied too',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '^1.2.0' }, quarantine],
    facts: { name: 'left-pad', version: '1.9.0-rc.1', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },
  {
    name: 'identity by semver range: outside',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '>=1.2.0 <1.4.0' }, quarantine],
    facts: { name: 'left-pad', version: '1.4.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },
  {
    name: 'identity: another package of the same version is not named',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '*' }, quarantine],
    facts: { name: 'right-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },
  {
    name: 'identity, py: exact version compared by PEP 440 and name by PEP 503',
    ecosystem: 'py',
    rules: [{ rule: 'DenyIdentity', package: 'Foo_Bar', versions: '1.0' }, quarantine],
    facts: { name: 'foo-bar', version: '1.0.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },
  {
    name: 'identity, py: a specifier set',
    ecosystem: 'py',
    rules: [{ rule: 'DenyIdentity', package: 'requests', versions: '>=2.0,<2.31' }, quarantine],
    facts: { name: 'requests', version: '2.30.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },
  {
    name: 'identity, py: outside the specifier set',
    ecosystem: 'py',
    rules: [{ rule: 'DenyIdentity', package: 'requests', versions: '>=2.0,<2.31' }, quarantine],
    facts: { name: 'requests', version: '2.31.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },

  // appliesTo.
  {
    name: 'appliesTo [admission]: skipped in the revocation phase',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0', appliesTo: ['admission'] }, quarantine],
    phase: 'revocation',
    facts: { name: 'left-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 1, reason: 'quarantine' },
  },
  {
    name: 'appliesTo [admission]: decides in the admission phase',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0', appliesTo: ['admission'] }, quarantine],
    phase: 'admission',
    facts: { name: 'left-pad', version: '1.3.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },
  {
    name: 'appliesTo [revocation]: an advisory deny not applying is not reached and observes nothing',
    rules: [{ rule: 'DenyIfCve', appliesTo: ['revocation'] }, quarantine],
    phase: 'admission',
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine', advisory: [], skipped: [] },
  },
  {
    name: 'appliesTo unset: applies to revocation',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }],
    phase: 'revocation',
    facts: { name: 'left-pad', version: '1.3.0' },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity' },
  },

  // DenyIfCve.
  {
    name: 'DenyIfCve: an advisory with a CVE denies; the evidence names it',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: fresh,
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: {
      verdict: 'deny', rule: 'DenyIfCve', ruleIndex: 0, reason: 'cve',
      evidence: ['GHSA-35jh-r3h4-6jhm', 'CVE-2021-23337'], advisory: [{ rule: 'DenyIfCve', cause: undefined }],
    },
  },
  {
    name: 'DenyIfCve: a malware record without a CVE denies',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: fresh,
    facts: { name: 'evil-pkg', version: '1.0.1', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIfCve', reason: 'cve', evidence: ['MAL-2025-1'] },
  },
  {
    name: 'DenyIfCve: the fixed version is not affected; consulted, the next rule decides',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: fresh,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine', advisory: [{ rule: 'DenyIfCve', cause: undefined }] },
  },
  {
    name: 'DenyIfCve: a withdrawn advisory does not deny',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: fresh,
    facts: { name: 'withdrawn-lib', version: '1.0.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },
  {
    name: 'DenyIfCve, py: a PEP 440 range',
    ecosystem: 'py',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: fresh,
    facts: { name: 'django', version: '4.1.6', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIfCve', reason: 'cve', evidence: ['PYSEC-2023-1', 'CVE-2023-1111'] },
  },

  // onUnavailable.
  {
    name: 'onUnavailable unset, no database: refused as unavailable',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: {
      verdict: 'unavailable', rule: 'DenyIfCve', ruleIndex: 0, reason: 'no_database',
      skipped: [], advisory: [{ rule: 'DenyIfCve', cause: 'no_database' }],
    },
  },
  {
    name: 'onUnavailable refuse names the unset behaviour',
    rules: [{ rule: 'DenyIfEpss', threshold: 0.5, onUnavailable: 'refuse' }, quarantine],
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'unavailable', rule: 'DenyIfEpss', reason: 'no_database' },
  },
  {
    name: 'onUnavailable skip, no database: skipped and recorded; the quarantine admits',
    rules: [{ rule: 'DenyIfCve', onUnavailable: 'skip' }, quarantine],
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: {
      verdict: 'admit', rule: 'AllowIfOlderThan', ruleIndex: 1, reason: 'quarantine',
      skipped: [{ rule: 'DenyIfCve', cause: 'no_database' }], advisory: [{ rule: 'DenyIfCve', cause: 'no_database' }],
    },
  },
  {
    name: 'onUnavailable skip on both advisory denies: both recorded, then deny by default',
    rules: [{ rule: 'DenyIfCve', onUnavailable: 'skip' }, { rule: 'DenyIfEpss', threshold: 0.1, onUnavailable: 'skip' }, quarantine],
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: DAY },
    expect: {
      verdict: 'deny', reason: 'default',
      skipped: [{ rule: 'DenyIfCve', cause: 'no_database' }, { rule: 'DenyIfEpss', cause: 'no_database' }],
    },
  },
  {
    name: 'a lookup fault is unavailable with cause lookup_fault',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: { ...fresh, lookupFault: true },
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'unavailable', rule: 'DenyIfCve', reason: 'lookup_fault', advisory: [{ rule: 'DenyIfCve', cause: 'lookup_fault' }] },
  },
  {
    name: 'an open breaker is unavailable; skip skips it',
    rules: [{ rule: 'DenyIfCve', onUnavailable: 'skip' }, quarantine],
    database: fresh,
    breakerOpen: true,
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine', skipped: [{ rule: 'DenyIfCve', cause: 'breaker_open' }] },
  },
  {
    name: 'rules before the advisory deny decide without the database',
    rules: [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }, { rule: 'DenyIfCve' }],
    facts: { name: 'left-pad', version: '1.3.0' },
    expect: { verdict: 'deny', rule: 'DenyIdentity', reason: 'identity', advisory: [] },
  },

  // Push age (SPEC.md 3.5).
  {
    name: 'push age below the maximum: normal',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: { pushAgeSeconds: 3 * DAY - 1 },
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIfCve', reason: 'cve' },
  },
  {
    name: 'push age at the maximum: expired, with age and maximum',
    rules: [{ rule: 'DenyIfCve' }, quarantine],
    database: { pushAgeSeconds: 3 * DAY },
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: {
      verdict: 'expired', rule: 'DenyIfCve', ruleIndex: 0, reason: 'expired',
      ageSeconds: 3 * DAY, maxAgeSeconds: 3 * DAY, advisory: [{ rule: 'DenyIfCve', cause: 'expired' }],
    },
  },
  {
    name: 'push age past the maximum: onUnavailable skip does not waive it',
    rules: [{ rule: 'DenyIfEpss', threshold: 0.5, onUnavailable: 'skip' }, quarantine],
    database: { pushAgeSeconds: 10 * DAY, epssStatus: 'available' },
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'expired', rule: 'DenyIfEpss', reason: 'expired', ageSeconds: 10 * DAY, maxAgeSeconds: 3 * DAY, skipped: [] },
  },
  {
    name: 'push age past the maximum: an open breaker does not skip past it',
    rules: [{ rule: 'DenyIfCve', onUnavailable: 'skip' }, quarantine],
    database: { pushAgeSeconds: 10 * DAY },
    breakerOpen: true,
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'expired', rule: 'DenyIfCve', reason: 'expired' },
  },
  {
    name: 'no publication time: treated as expired',
    rules: [{ rule: 'DenyIfCve', onUnavailable: 'skip' }, quarantine],
    database: { pushAgeSeconds: null },
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'expired', rule: 'DenyIfCve', reason: 'expired', maxAgeSeconds: 3 * DAY },
  },
  {
    name: 'push age past the maximum: AllowIfRemediatesCve abstains',
    rules: [{ rule: 'AllowIfRemediatesCve' }, quarantine],
    database: { pushAgeSeconds: 10 * DAY },
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: DAY },
    expect: { verdict: 'deny', reason: 'default', advisory: [] },
  },
  {
    name: 'push age past the maximum does not touch rules that do not read the database',
    rules: [quarantine, { rule: 'DenyIfCve' }],
    database: { pushAgeSeconds: 10 * DAY },
    maxAgeSeconds: 3 * DAY,
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },

  // Quarantine boundaries.
  {
    name: 'quarantine: exactly the quarantine old admits',
    rules: [quarantine],
    facts: { name: 'left-pad', version: '1.0.0', publishedAgoSeconds: 7 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },
  {
    name: 'quarantine: a second younger abstains',
    rules: [quarantine],
    facts: { name: 'left-pad', version: '1.0.0', publishedAgoSeconds: 7 * DAY - 1 },
    expect: { verdict: 'deny', reason: 'default' },
  },
  {
    name: 'quarantine: an unknown publish time abstains',
    rules: [quarantine],
    facts: { name: 'left-pad', version: '1.0.0' },
    expect: { verdict: 'deny', reason: 'default' },
  },
  {
    name: 'quarantine: a publish time in the future abstains',
    rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
    facts: { name: 'left-pad', version: '1.0.0', publishedAgoSeconds: -60 },
    expect: { verdict: 'deny', reason: 'default' },
  },

  // EPSS threshold.
  {
    name: 'EPSS at the threshold denies',
    rules: [{ rule: 'DenyIfEpss', threshold: 0.7 }, quarantine],
    database: fresh,
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'deny', rule: 'DenyIfEpss', reason: 'epss', evidence: ['GHSA-35jh-r3h4-6jhm epss=0.7'] },
  },
  {
    name: 'EPSS below the threshold: consulted, the next rule decides',
    rules: [{ rule: 'DenyIfEpss', threshold: 0.5 }, quarantine],
    database: fresh,
    facts: { name: 'minimist', version: '1.2.0', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine', advisory: [{ rule: 'DenyIfEpss', cause: undefined }] },
  },
  {
    name: 'EPSS: an advisory without a score does not count',
    rules: [{ rule: 'DenyIfEpss', threshold: 0 }, quarantine],
    database: fresh,
    facts: { name: 'quiet-lib', version: '2.0.3', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine' },
  },
  {
    name: 'EPSS: a database without epss_status=available cannot vet',
    rules: [{ rule: 'DenyIfEpss', threshold: 0.5 }, quarantine],
    database: { pushAgeSeconds: 3600, epssStatus: 'unavailable' },
    facts: { name: 'lodash', version: '4.17.20', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'unavailable', rule: 'DenyIfEpss', reason: 'no_database' },
  },

  // Remediation.
  {
    name: 'remediation: the fix published inside the quarantine is admitted',
    rules: [{ rule: 'DenyIfCve' }, { rule: 'AllowIfRemediatesCve' }, quarantine],
    database: fresh,
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: DAY },
    expect: {
      verdict: 'admit', rule: 'AllowIfRemediatesCve', ruleIndex: 1, reason: 'remediates',
      evidence: ['GHSA-35jh-r3h4-6jhm'], advisory: [{ rule: 'DenyIfCve', cause: undefined }],
    },
  },
  {
    name: 'remediation: a fix that another advisory affects abstains',
    rules: [{ rule: 'AllowIfRemediatesCve' }, quarantine],
    database: fresh,
    facts: { name: 'two-faced', version: '2.0.0', publishedAgoSeconds: DAY },
    expect: { verdict: 'deny', reason: 'default' },
  },
  {
    name: 'remediation: a version that fixes nothing abstains',
    rules: [{ rule: 'AllowIfRemediatesCve' }, quarantine],
    database: fresh,
    facts: { name: 'lodash', version: '4.17.22', publishedAgoSeconds: DAY },
    expect: { verdict: 'deny', reason: 'default' },
  },
  {
    name: 'remediation: abstains without a database, and reports no outage',
    rules: [{ rule: 'AllowIfRemediatesCve' }, quarantine],
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: DAY },
    expect: { verdict: 'deny', reason: 'default', advisory: [], skipped: [] },
  },
  {
    name: 'remediation: abstains on a lookup fault',
    rules: [{ rule: 'AllowIfRemediatesCve' }, quarantine],
    database: { ...fresh, lookupFault: true },
    facts: { name: 'lodash', version: '4.17.21', publishedAgoSeconds: 100 * DAY },
    expect: { verdict: 'admit', rule: 'AllowIfOlderThan', reason: 'quarantine', advisory: [] },
  },
  {
    name: 'remediation, py: the fixed version by PEP 440',
    ecosystem: 'py',
    rules: [{ rule: 'AllowIfRemediatesCve' }],
    database: fresh,
    facts: { name: 'django', version: '4.1.7', publishedAgoSeconds: 60 },
    expect: { verdict: 'admit', rule: 'AllowIfRemediatesCve', reason: 'remediates', evidence: ['PYSEC-2023-1'] },
  },
]
