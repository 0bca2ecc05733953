/**
 * Refusals that explain themselves (issue 17 item 5): the words a developer
 * reads when npm prints a 403 envelope. Each names the rule (kind and its
 * position in the mount's list, counted from 1 as an operator reads the
 * list) and the cause: the advisory ids, the identity rule, or the publish
 * time and when the quarantine ends. Built from the decision, the facts and
 * the mount's rule list; never anything the client did not ask about.
 */
import type { Decision, DependencyAddition, InstallScriptChange, VersionFacts } from './decision.js'
import type { RuleConfig } from './rule-schema.js'

/** What the envelope carries beside the sentence, for tools. */
export interface Explanation {
  readonly message: string
  /** The rule the sentence names: the deciding one, or the quarantine that will admit a version no rule admits yet. */
  readonly rule: string
  /** That rule's position in the mount's list, from 1; undefined when the sentence names none. */
  readonly ruleNumber?: number
  readonly reason: string
  readonly evidence: readonly string[]
  /** When a quarantine admits the version (ISO 8601), if one will. */
  readonly admittedFrom?: string
}

const MAX_EVIDENCE = 5

function ruleName(decision: Decision): string {
  return decision.rule === undefined ? 'no rule admitted it' : `${decision.rule} (rule ${(decision.ruleIndex ?? 0) + 1})`
}

function listed(evidence: readonly string[]): string {
  const shown = evidence.slice(0, MAX_EVIDENCE).join(', ')
  return evidence.length > MAX_EVIDENCE ? `${shown} and ${evidence.length - MAX_EVIDENCE} more` : shown
}

function days(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} day${seconds === 86_400 ? '' : 's'}`
  if (seconds % 3_600 === 0) return `${seconds / 3_600} hour${seconds === 3_600 ? '' : 's'}`
  return `${seconds} s`
}

/** The sentence for a public version the admission phase refused, or undefined for an admit. */
export function explainRefusal(decision: Decision, facts: VersionFacts, rules: readonly RuleConfig[], now: number): Explanation | undefined {
  if (decision.verdict === 'admit') return undefined
  const subject = `${facts.name}@${facts.version}`
  const base = { rule: decision.rule ?? 'default', ...(decision.ruleIndex === undefined ? {} : { ruleNumber: decision.ruleIndex + 1 }), reason: decision.reason, evidence: decision.evidence }
  if (decision.verdict === 'unavailable' || decision.verdict === 'expired') {
    return { ...base, message: `${subject} cannot be judged now: ${ruleName(decision)} needs the advisory database, which is ${decision.verdict === 'expired' ? 'older than its maximum age' : 'unavailable'} (${decision.reason}); retry later` }
  }
  switch (decision.reason) {
    case 'identity':
      // Its evidence is the identity itself, already the subject.
      return { ...base, message: `${subject} is denied by name and version: ${ruleName(decision)} lists it` }
    case 'cve':
      return { ...base, message: `${subject} has known advisories: ${listed(decision.evidence)}; denied by ${ruleName(decision)}. Pick a version without them` }
    case 'malware':
      return { ...base, message: `${subject} is named by a malicious-package record: ${listed(decision.evidence)}; denied by ${ruleName(decision)}. Do not install it; pick a version the record does not name` }
    case 'epss':
      return { ...base, message: `${subject} has advisories above the exploit-probability threshold: ${listed(decision.evidence)}; denied by ${ruleName(decision)}` }
    case 'trust_downgrade':
      return { ...base, message: `${subject} is published with less trust than an earlier version of ${facts.name} (${decision.evidence.join('; ')}): a possible account takeover; denied by ${ruleName(decision)}. Pin an earlier version` }
    case 'install_script_added':
      return historyQuarantined(decision, facts, rules, now, base,
        `${subject} adds an install script (preinstall, install or postinstall) that ${facts.scriptAddedAfter ?? 'its previous version'} did not have`)
    case 'install_script_changed':
      return historyQuarantined(decision, facts, rules, now, base, `${subject} ${scriptChangeWords(facts.installScriptChange)}`)
    case 'dependency_added':
      return historyQuarantined(decision, facts, rules, now, base, `${subject} ${dependencyWords(facts.dependencyAddition)}`)
    case 'freeze':
      return frozen(decision, facts, rules, subject, base)
    default:
      return quarantined(decision, facts, rules, now, subject, base)
  }
}

/** A deny by default: say which quarantine would admit the version, and from when. */
function quarantined(decision: Decision, facts: VersionFacts, rules: readonly RuleConfig[], now: number, subject: string, base: Omit<Explanation, 'message'>): Explanation {
  const quarantines = rules
    .map((rule, index) => ({ rule, index }))
    .filter((r): r is { rule: Extract<RuleConfig, { rule: 'AllowIfOlderThan' }>, index: number } =>
      r.rule.rule === 'AllowIfOlderThan' && (r.rule.appliesTo === undefined || r.rule.appliesTo.includes('admission')))
  if (quarantines.length === 0) {
    return { ...base, message: `${subject} is withheld: ${ruleName(decision)} (this mount admits no public version by age)` }
  }
  const published = facts.publishedMs ?? facts.publishedAt?.getTime()
  if (published === undefined || !Number.isFinite(published)) {
    return { ...base, message: `${subject} is withheld: the public registry gives no publish time for it, so no quarantine rule can admit it` }
  }
  // The shortest quarantine admits first.
  const first = quarantines.reduce((a, b) => (b.rule.seconds < a.rule.seconds ? b : a))
  const from = new Date(published + first.rule.seconds * 1000)
  const publishedIso = new Date(published).toISOString()
  if (from.getTime() <= now) {
    return { ...base, message: `${subject} is withheld: published ${publishedIso}; no rule admitted it` }
  }
  // No rule decided (a deny by default), but this one will: name it where tools read the rule, as the sentence does.
  return {
    ...base,
    rule: first.rule.rule,
    ruleNumber: first.index + 1,
    reason: 'quarantine',
    admittedFrom: from.toISOString(),
    message: `${subject} is in quarantine: published ${publishedIso}, and AllowIfOlderThan (rule ${first.index + 1}) admits versions ${days(first.rule.seconds)} old, so from ${from.toISOString()}. Pin an older version until then`,
  }
}

/** DenyIfInstallScriptChanged's cause: which hooks are new or rewritten, against which version. */
function scriptChangeWords(change: InstallScriptChange | undefined): string {
  if (change === undefined) return 'changes its install scripts'
  const parts = [
    ...change.added.map((hook) => (hook === 'hasInstallScript' ? 'declares an install script (hasInstallScript)' : `adds a ${hook} script`)),
    ...change.changed.map((hook) => `rewrites its ${hook} script`),
  ]
  return `${parts.join(' and ')} since ${change.since}`
}

/** DenyIfDependencyAdded's cause: the new names, against which version. */
function dependencyWords(addition: DependencyAddition | undefined): string {
  if (addition === undefined) return 'adds a dependency'
  return `adds ${addition.names.length === 1 ? 'a dependency' : 'dependencies'} ${listed(addition.names)} that ${addition.since} did not have`
}

/**
 * The quarantine of a history rule (DenyIfInstallScriptAdded,
 * DenyIfInstallScriptChanged, DenyIfDependencyAdded): the cause, and when
 * the rule stops withholding.
 */
function historyQuarantined(decision: Decision, facts: VersionFacts, rules: readonly RuleConfig[], now: number, base: Omit<Explanation, 'message'>, cause: string): Explanation {
  const configured = decision.ruleIndex === undefined ? undefined : rules[decision.ruleIndex]
  const rule = configured !== undefined && configured.rule === decision.rule && 'seconds' in configured ? configured : undefined
  const published = facts.publishedMs ?? facts.publishedAt?.getTime()
  if (rule === undefined || published === undefined || !Number.isFinite(published)) {
    return { ...base, message: `${cause}; withheld by ${ruleName(decision)}${published === undefined ? ', and the public registry gives no publish time for it, so its quarantine never ends' : ''}` }
  }
  const from = new Date(published + rule.seconds * 1000)
  return {
    ...base,
    ...(from.getTime() > now ? { admittedFrom: from.toISOString() } : {}),
    message: `${cause}: published ${new Date(published).toISOString()}, and ${ruleName(decision)} withholds such versions until they are ${days(rule.seconds)} old, so until ${from.toISOString()} (then the rules after it decide). Pin an older version until then`,
  }
}

/** DenyIfPublishedAfter: the instant of the freeze, and when this version was published (or that nothing says when). */
function frozen(decision: Decision, facts: VersionFacts, rules: readonly RuleConfig[], subject: string, base: Omit<Explanation, 'message'>): Explanation {
  const rule = decision.ruleIndex === undefined ? undefined : rules[decision.ruleIndex]
  const at = rule?.rule === 'DenyIfPublishedAfter' ? rule.at : 'its instant'
  const published = facts.publishedMs ?? facts.publishedAt?.getTime()
  if (published === undefined || !Number.isFinite(published)) {
    return { ...base, message: `${subject} has no publish time from the public registry, so it cannot be shown to predate the freeze at ${at}; denied by ${ruleName(decision)}` }
  }
  return { ...base, message: `${subject} was published ${new Date(published).toISOString()}, after the freeze at ${at}; denied by ${ruleName(decision)}. Pin a version published before it` }
}
