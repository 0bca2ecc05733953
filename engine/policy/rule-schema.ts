/**
 * The shape of one entry of a mount's `rules:` list (SPEC.md 1.7, 2.11;
 * DESIGN.md "Configuration sketch"), as typebox schemas the config module
 * embeds in the configuration schema.
 *
 * Each rule kind is its own closed object (additionalProperties false), so a
 * misspelt option such as `appliesto` is refused at boot as an unknown rule
 * key, exactly as a binary that predates `appliesTo` refuses it (SPEC.md 7.2,
 * 9). `RULE_SCHEMAS` is keyed by kind so the config module can check an entry
 * against the schema its `rule` names and report one precise problem instead
 * of every branch of the union.
 *
 * What a schema cannot check (that `versions` parses as a range of the
 * mount's ecosystem, that each `packages` pattern is one) is checked by
 * `ruleProblems` in evaluator.ts and by the config loader.
 */
import Type, { type Static } from 'typebox'

import type { RuleKind } from './decision.js'

export const PHASE_SCHEMA = Type.Union([Type.Literal('admission'), Type.Literal('revocation')])

/** Unset means both phases (SPEC.md 1.7). An empty list would switch the rule off silently, so it is refused. */
export const APPLIES_TO_SCHEMA = Type.Array(PHASE_SCHEMA, { minItems: 1, uniqueItems: true })

/**
 * SPEC.md 2.11 gives `skip` and says the unset behaviour also has a name; the
 * other values are "not shown". We name the unset behaviour `refuse`: the
 * version is refused with a retryable 503 (verdict 'unavailable'). There is
 * deliberately no `deny`/`admit`: an outage must neither look like a policy
 * decision (a 403 clients do not retry) nor admit silently (that is `skip`,
 * which at least logs each skipped identity, SPEC.md 6.2).
 */
export const ON_UNAVAILABLE_VALUES = ['skip', 'refuse'] as const
export type OnUnavailable = (typeof ON_UNAVAILABLE_VALUES)[number]
export const ON_UNAVAILABLE_SCHEMA = Type.Union([Type.Literal('skip'), Type.Literal('refuse')])

const closed = { additionalProperties: false } as const

/**
 * `packages` (package-selector.ts): exact names, `@scope/*` scopes and globs;
 * the rule abstains for any other package. Unset: every package. An empty
 * list would switch the rule off silently, so it is refused; the grammar of
 * each pattern is checked per ecosystem by `selectorProblem`.
 */
export const PACKAGES_SCHEMA = Type.Array(Type.String({ minLength: 1, maxLength: 214 }), { minItems: 1, uniqueItems: true })

export const DENY_IDENTITY_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIdentity'),
  package: Type.String({ minLength: 1 }),
  /** `js`: an exact version or a semver range. `py`: an exact version or a PEP 440 specifier set. */
  versions: Type.String({ minLength: 1 }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

export const DENY_IF_CVE_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfCve'),
  onUnavailable: Type.Optional(ON_UNAVAILABLE_SCHEMA),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

export const DENY_IF_EPSS_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfEpss'),
  /** EPSS probability, 0..1; a version is denied when an affecting advisory scores at or above it. */
  threshold: Type.Number({ minimum: 0, maximum: 1 }),
  onUnavailable: Type.Optional(ON_UNAVAILABLE_SCHEMA),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

export const ALLOW_IF_REMEDIATES_CVE_SCHEMA = Type.Object({
  rule: Type.Literal('AllowIfRemediatesCve'),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

export const ALLOW_IF_OLDER_THAN_SCHEMA = Type.Object({
  rule: Type.Literal('AllowIfOlderThan'),
  /** Quarantine length in seconds, measured from the upstream's publish time. */
  seconds: Type.Integer({ minimum: 0 }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfTrustDowngrade`: denies a version whose publishing trust is lower
 * than the strongest trust of a version of the package published before it
 * (engine/policy/deny-if-trust-downgrade.ts). No option besides the shared ones.
 */
export const DENY_IF_TRUST_DOWNGRADE_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfTrustDowngrade'),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfInstallScriptAdded`: withholds a version that adds an install script
 * its previous version did not have until it is `seconds` old
 * (engine/policy/deny-if-install-script-added.ts).
 */
export const DENY_IF_INSTALL_SCRIPT_ADDED_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfInstallScriptAdded'),
  /** Quarantine length in seconds, from the upstream's publish time; past it the rule abstains. */
  seconds: Type.Integer({ minimum: 0 }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfPublishedAfter`: the freeze; denies a version published upstream
 * after the instant `at` (engine/policy/deny-if-published-after.ts).
 */
export const DENY_IF_PUBLISHED_AFTER_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfPublishedAfter'),
  /**
   * RFC 3339 with an offset. Checked by `ruleProblems` and the config loader
   * (engine/policy/instant.ts), not by a schema pattern, so a refusal says
   * what an instant looks like rather than quoting a regular expression.
   */
  at: Type.String({ minLength: 1, description: 'RFC 3339 instant with an offset, e.g. 2026-03-01T12:00:00Z' }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfMalicious`: denies a version that an OSV malicious-package record
 * (`MAL-` id) names (engine/policy/deny-if-malicious.ts), in both phases by
 * default; on the js and py mounts the private side is judged by it too,
 * outside the publish scopes (docs/security.md "Malware records").
 */
export const DENY_IF_MALICIOUS_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfMalicious'),
  onUnavailable: Type.Optional(ON_UNAVAILABLE_SCHEMA),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfInstallScriptChanged`: withholds a version whose install scripts
 * are new or differ from its previous version's until it is `seconds` old
 * (engine/policy/deny-if-install-script-changed.ts).
 */
export const DENY_IF_INSTALL_SCRIPT_CHANGED_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfInstallScriptChanged'),
  /** Quarantine length in seconds, from the upstream's publish time; past it the rule abstains. */
  seconds: Type.Integer({ minimum: 0 }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

/**
 * `DenyIfDependencyAdded`: withholds a version that depends on a name its
 * previous version did not until it is `seconds` old
 * (engine/policy/deny-if-dependency-added.ts).
 */
export const DENY_IF_DEPENDENCY_ADDED_SCHEMA = Type.Object({
  rule: Type.Literal('DenyIfDependencyAdded'),
  /** Quarantine length in seconds, from the upstream's publish time; past it the rule abstains. */
  seconds: Type.Integer({ minimum: 0 }),
  appliesTo: Type.Optional(APPLIES_TO_SCHEMA),
  packages: Type.Optional(PACKAGES_SCHEMA),
}, closed)

export const RULE_SCHEMAS = {
  DenyIdentity: DENY_IDENTITY_SCHEMA,
  DenyIfCve: DENY_IF_CVE_SCHEMA,
  DenyIfEpss: DENY_IF_EPSS_SCHEMA,
  AllowIfRemediatesCve: ALLOW_IF_REMEDIATES_CVE_SCHEMA,
  AllowIfOlderThan: ALLOW_IF_OLDER_THAN_SCHEMA,
  DenyIfTrustDowngrade: DENY_IF_TRUST_DOWNGRADE_SCHEMA,
  DenyIfInstallScriptAdded: DENY_IF_INSTALL_SCRIPT_ADDED_SCHEMA,
  DenyIfPublishedAfter: DENY_IF_PUBLISHED_AFTER_SCHEMA,
  DenyIfMalicious: DENY_IF_MALICIOUS_SCHEMA,
  DenyIfInstallScriptChanged: DENY_IF_INSTALL_SCRIPT_CHANGED_SCHEMA,
  DenyIfDependencyAdded: DENY_IF_DEPENDENCY_ADDED_SCHEMA,
} as const satisfies Record<RuleKind, unknown>

/** One rule list entry: a union discriminated on `rule`. */
export const RULE_SCHEMA = Type.Union([
  DENY_IDENTITY_SCHEMA,
  DENY_IF_CVE_SCHEMA,
  DENY_IF_EPSS_SCHEMA,
  ALLOW_IF_REMEDIATES_CVE_SCHEMA,
  ALLOW_IF_OLDER_THAN_SCHEMA,
  DENY_IF_TRUST_DOWNGRADE_SCHEMA,
  DENY_IF_INSTALL_SCRIPT_ADDED_SCHEMA,
  DENY_IF_PUBLISHED_AFTER_SCHEMA,
  DENY_IF_MALICIOUS_SCHEMA,
  DENY_IF_INSTALL_SCRIPT_CHANGED_SCHEMA,
  DENY_IF_DEPENDENCY_ADDED_SCHEMA,
])

/** A mount's `rules:` list. Empty is allowed: every public version is then denied by default. */
export const RULE_LIST_SCHEMA = Type.Array(RULE_SCHEMA)

export type DenyIdentityConfig = Static<typeof DENY_IDENTITY_SCHEMA>
export type DenyIfCveConfig = Static<typeof DENY_IF_CVE_SCHEMA>
export type DenyIfEpssConfig = Static<typeof DENY_IF_EPSS_SCHEMA>
export type AllowIfRemediatesCveConfig = Static<typeof ALLOW_IF_REMEDIATES_CVE_SCHEMA>
export type AllowIfOlderThanConfig = Static<typeof ALLOW_IF_OLDER_THAN_SCHEMA>
export type DenyIfTrustDowngradeConfig = Static<typeof DENY_IF_TRUST_DOWNGRADE_SCHEMA>
export type DenyIfInstallScriptAddedConfig = Static<typeof DENY_IF_INSTALL_SCRIPT_ADDED_SCHEMA>
export type DenyIfPublishedAfterConfig = Static<typeof DENY_IF_PUBLISHED_AFTER_SCHEMA>
export type DenyIfMaliciousConfig = Static<typeof DENY_IF_MALICIOUS_SCHEMA>
export type DenyIfInstallScriptChangedConfig = Static<typeof DENY_IF_INSTALL_SCRIPT_CHANGED_SCHEMA>
export type DenyIfDependencyAddedConfig = Static<typeof DENY_IF_DEPENDENCY_ADDED_SCHEMA>
export type RuleConfig = Static<typeof RULE_SCHEMA>
