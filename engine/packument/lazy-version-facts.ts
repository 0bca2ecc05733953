/**
 * The facts of one public version as the gate reads them (engine/policy/
 * decision.ts VersionFacts), each worked out only when a rule reads it: the
 * merge makes one per gated version of every public document, and most
 * rules read the publish time alone, or nothing.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import type { DependencyAddition, EarlierTrust, HistoryFacts, InstallScriptChange, TrustLevel, VersionFacts } from '../policy/decision.js'
import type { PackumentIndex, VersionEntry } from './packument-index.js'
import { publishTimeMs } from './publish-time.js'
import { hasInstallScript, trustOf, type VersionHistory } from './version-history.js'

/** VersionFacts whose publish time is decoded only if a rule reads it. */
export class LazyVersionFacts implements VersionFacts {
  readonly ecosystem: Ecosystem
  readonly name: string
  readonly version: string
  readonly #index: PackumentIndex
  readonly #entry: VersionEntry
  readonly #history: VersionHistory | undefined
  #publishedMs: number | undefined | null = null
  #publishedAt: Date | undefined | null = null

  constructor(ecosystem: Ecosystem, name: string, version: string, index: PackumentIndex, entry: VersionEntry, history: VersionHistory | undefined) {
    this.ecosystem = ecosystem
    this.name = name
    this.version = version
    this.#index = index
    this.#entry = entry
    this.#history = history
  }

  get trust(): TrustLevel | undefined {
    return this.#history?.needs.trust === true ? trustOf(this.#entry) : undefined
  }

  get earlierTrust(): EarlierTrust | undefined {
    return this.#history?.needs.trust === true ? this.#history.earlierTrust(this.version, this.publishedMs) : undefined
  }

  get installScript(): boolean | undefined {
    return this.#history?.needs.installScripts === true ? hasInstallScript(this.#entry) : undefined
  }

  get scriptAddedAfter(): string | undefined {
    return this.#history?.needs.installScripts === true && hasInstallScript(this.#entry) ? this.#history.scriptAddedAfter(this.version) : undefined
  }

  /** Read by DenyIfInstallScriptChanged only for a version still in its quarantine: most versions never compute it. */
  get installScriptChange(): InstallScriptChange | undefined {
    return this.#history?.needs.scriptChanges === true ? this.#history.scriptChange(this.version) : undefined
  }

  /** Read by DenyIfDependencyAdded only for a version still in its quarantine. */
  get dependencyAddition(): DependencyAddition | undefined {
    return this.#history?.needs.dependencies === true ? this.#history.dependencyAddition(this.version) : undefined
  }

  /** The history facts for the selected-version record, or undefined when no rule reads any; `now`: when the listing is rendered. */
  historyFacts(now?: number): HistoryFacts | undefined {
    return this.#history?.factsOf(this.version, this.#entry, this.publishedMs, now)
  }

  get publishedMs(): number | undefined {
    if (this.#publishedMs === null) this.#publishedMs = publishTimeMs(this.#index, this.#index.time.get(this.version))
    return this.#publishedMs
  }

  get publishedAt(): Date | undefined {
    if (this.#publishedAt === null) {
      const ms = this.publishedMs
      this.#publishedAt = ms === undefined ? undefined : new Date(ms)
    }
    return this.#publishedAt
  }
}
