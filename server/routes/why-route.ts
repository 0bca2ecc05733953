/**
 * `GET /js/-/why/{package}/{version}` (issue 17 item 5): the admission
 * decision for one public version, as JSON, for the developer who asks why
 * `npm install` picked an older version or refused a tarball: the verdict,
 * the rule (kind and its position in the mount's list, from 1), the phase,
 * the cause and its evidence, the publish time, and when a quarantine
 * admits it. The same selection and gate as the artifact route (the
 * public document is read through the memory gate when the store lacks it),
 * never an upstream the artifact route would not ask. A private version is
 * not judged by rules (private hits are trusted), so it is not answered here,
 * except one a malware record names, which the private leg refuses too.
 * When a rule reads the package's history, the answer shows the facts it
 * read (the version's trust and the strongest earlier one; whether it adds
 * an install script, and to which previous version).
 */
import { isServiceError, ServiceError, toServiceError } from '../../engine/errors.js'
import { validatePackageName } from '../../engine/npm/names.js'
import type { Decision, FactNeeds, HistoryFacts, VersionFacts, WaiverRef } from '../../engine/policy/decision.js'
import { factNeeds } from '../../engine/policy/evaluator.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { Clock } from '../../engine/clock.js'
import type { Exchange } from '../http/exchange.js'
import type { SelectedArtifact } from './artifact-route.js'

export interface WhyRouteDeps {
  readonly selectVersion: (packageName: string, filename: string, signal: AbortSignal) => Promise<SelectedArtifact | undefined>
  readonly evaluate: (facts: VersionFacts) => Decision
  /** The rules in force (a reload swaps them), for the refusal sentence. */
  readonly rules: () => readonly RuleConfig[]
  readonly clock: Clock
  /** The mount's refusal of a private version a malware record names (engine/policy/private-malware-gate.ts); absent: none. */
  readonly privateVerdict?: (name: string, version: string) => Decision | undefined
}

/**
 * The history facts the mount's rules read, in the answer only when a rule
 * reads them: `trust` and `earlierTrust` (DenyIfTrustDowngrade),
 * `installScript` and `installScriptAddedAfter` (DenyIfInstallScriptAdded),
 * `installScriptChange` (DenyIfInstallScriptChanged: `since`, `added`,
 * `changed`) and `dependencyAddition` (DenyIfDependencyAdded: `since`,
 * `names`), null when the version changes nothing.
 */
function historyFields(history: HistoryFacts | undefined, needs: FactNeeds): Record<string, unknown> {
  if (history === undefined) return {}
  const fields: Record<string, unknown> = {}
  if (history.trust !== undefined) {
    fields['trust'] = TRUST_NAMES[history.trust]
    fields['earlierTrust'] = history.earlierTrust === undefined ? null : { level: TRUST_NAMES[history.earlierTrust.level], version: history.earlierTrust.version }
  }
  if (history.installScript !== undefined) {
    fields['installScript'] = history.installScript
    fields['installScriptAddedAfter'] = history.scriptAddedAfter ?? null
  }
  if (needs.scriptChanges === true) fields['installScriptChange'] = history.installScriptChange ?? null
  if (needs.dependencies === true) fields['dependencyAddition'] = history.dependencyAddition ?? null
  return fields
}

/** The why sentence of a version a waiver admitted: who, why, until when. */
function waivedMessage(subject: string, waiver: WaiverRef): string {
  return `${subject} is admitted by a waiver for ${waiver.package}@${waiver.versions} granted by ${waiver.by} until ${waiver.expires}${waiver.overrideMalware ? ', overriding malware records' : ''}: ${waiver.reason}`
}

const TRUST_NAMES = ['none', 'provenance', 'trustedPublisher'] as const

/** A version as the route carries it: printable, no separators, bounded. */
const VERSION = /^[0-9A-Za-z.+_-]{1,256}$/

export function createWhyHandler(deps: WhyRouteDeps): (ex: Exchange, pkg: string, version: string) => Promise<void> {
  return async (ex, pkg, version) => {
    const head = ex.method === 'HEAD'
    let name: string
    try {
      name = validatePackageName(pkg)
      if (!VERSION.test(version)) throw new ServiceError('BAD_PACKAGE_NAME', { message: 'not a version' })
    } catch (error) {
      ex.respondError(toServiceError(error, 'BAD_PACKAGE_NAME'), { head })
      return
    }
    const controller = new AbortController()
    ex.onClose(() => controller.abort())
    // npm names a tarball after the package's last segment and the version.
    const filename = `${name.split('/').pop() ?? name}-${version}.tgz`
    let selected: SelectedArtifact | undefined
    try {
      selected = await deps.selectVersion(name, filename, controller.signal)
    } catch (error) {
      if (ex.closed) return
      ex.respondError(isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error }), { head })
      return
    }
    if (ex.closed) return
    if (selected === undefined || selected.version !== version) {
      // A version a malware record names is refused on the private side too (issue 31 item 4): while the private
      // registry still holds it, its public copy is shadowed and never selected, so the private verdict answers.
      const refusal = deps.privateVerdict?.(name, version)
      if (refusal !== undefined) {
        answer(ex, deps, { name, version, decision: refusal, facts: { ecosystem: 'js', name, version, publishedAt: undefined } }, head)
        return
      }
      // The route reads the public side alone, so it cannot tell a version published nowhere from a private one: it claims neither.
      ex.respondError(new ServiceError('UPSTREAM_MISS', { message: `${name}@${version} is in no public document this proxy can see, so no rule judges it here; if the private registry publishes it, it is served as that registry has it, without rules` }), { head })
      return
    }
    // The same facts the artifact route gates on, history included (DenyIfTrustDowngrade, DenyIfInstallScriptAdded).
    const facts: VersionFacts = { ...selected.history, ecosystem: 'js', name, version, publishedAt: selected.publishedAt }
    answer(ex, deps, { name, version, decision: deps.evaluate(facts), facts, selected }, head)
  }
}

interface Judged {
  readonly name: string
  readonly version: string
  readonly decision: Decision
  readonly facts: VersionFacts
  /** The public selection judged; absent for a private version's refusal (no publish time, no history). */
  readonly selected?: SelectedArtifact
}

function answer(ex: Exchange, deps: WhyRouteDeps, { name, version, decision, facts, selected }: Judged, head: boolean): void {
  const explained = explainRefusal(decision, facts, deps.rules(), deps.clock.now())
  ex.respondJson(200, {
    package: name,
    version,
    phase: 'admission',
    verdict: decision.verdict,
    // The rule the message names: a quarantine that will admit a version no rule admits yet is named, not `default`.
    rule: explained?.ruleNumber === undefined ? decision.rule ?? null : explained.rule,
    ruleNumber: explained?.ruleNumber ?? (decision.ruleIndex === undefined ? null : decision.ruleIndex + 1),
    reason: explained?.reason ?? decision.reason,
    evidence: decision.evidence,
    publishedAt: selected?.publishedAt?.toISOString() ?? null,
    admittedFrom: explained?.admittedFrom ?? null,
    ...historyFields(selected?.history, factNeeds(deps.rules())),
    // The waiver that admitted it (issue 31 item 2), as written; null when the rules decided.
    waiver: decision.waiver ?? null,
    message: explained?.message ?? (decision.waiver !== undefined ? waivedMessage(`${name}@${version}`, decision.waiver) : undefined) ?? `${name}@${version} is admitted by ${decision.rule ?? 'a rule'}${decision.ruleIndex === undefined ? '' : ` (rule ${decision.ruleIndex + 1})`}${decision.evidence.length > 0 ? `: ${decision.evidence.join(', ')}` : ''}`,
  }, { head })
}
