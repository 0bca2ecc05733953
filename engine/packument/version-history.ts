/**
 * What a public version's package history says about it, for the rules that
 * read history (decision.ts HistoryFacts): DenyIfTrustDowngrade and
 * DenyIfInstallScriptAdded. Read from the scanner's per-version flags
 * (packument-index.ts VERSION_*) and the document's `time`, never by parsing
 * a manifest; worked out once per document, and only when a rule first asks.
 *
 * The history is the public document's versions whose key is a canonical
 * version (canonical-version.ts), the ones the gate judges; private versions
 * are trusted and are no part of it.
 *
 * Earlier (trust): published strictly before, by `time`; a stable version is
 * compared with earlier stable versions only, a prerelease with every earlier
 * version (pnpm's `trustPolicy: no-downgrade` reads it so). A version without
 * a publish time cannot be placed, so it is compared with every other version
 * that has trust evidence. The strongest earlier trust is named by the first
 * version published with it.
 *
 * Previous (install scripts): the greatest version lower by semver among the
 * versions published strictly before this one; a version without a publish
 * time takes the greatest lower version of any time. Versions are compared
 * by a reading of canonical keys that builds no SemVer (compareDated). A few
 * versions with a script are each judged in one pass over the history; many
 * share one sort by time and a sweep that keeps the versions seen so far in
 * semver order (O(n log n) comparisons). DenyIfInstallScriptChanged and
 * DenyIfDependencyAdded read the same previous version of any version
 * (`previousOf`), asked only for versions still in their quarantine: the
 * first few asks are one pass each over the keys (building nothing for the
 * others), more share one semver sort with a short walk down per version
 * (everyPrevious; the sweep when the history is far out of order).
 */
import { canonicalVersion } from '../npm/canonical-version.js'
import type { DependencyAddition, EarlierTrust, FactNeeds, HistoryFacts, InstallScriptChange, TrustLevel } from '../policy/decision.js'
import { ManifestChanges } from './manifest-changes.js'
import {
  VERSION_DECLARES_INSTALL_SCRIPT, VERSION_HAS_INSTALL_SCRIPT, VERSION_PROVENANCE, VERSION_TRUSTED_PUBLISHER,
  type PackumentIndex, type VersionEntry,
} from './packument-index.js'
import { publishTimeMs } from './publish-time.js'

export function trustOf(entry: VersionEntry): TrustLevel {
  return (entry.flags & VERSION_TRUSTED_PUBLISHER) !== 0 ? 2 : (entry.flags & VERSION_PROVENANCE) !== 0 ? 1 : 0
}

export function hasInstallScript(entry: VersionEntry): boolean {
  return (entry.flags & (VERSION_HAS_INSTALL_SCRIPT | VERSION_DECLARES_INSTALL_SCRIPT)) !== 0
}

/** A canonical version is a prerelease when it has a `-` (it carries no build metadata). */
function isPrerelease(version: string): boolean {
  return version.includes('-')
}

interface Earliest {
  time: number
  version: string
}

/** The first-published version at or above each trust level, over stable versions and over all. */
class TrustTrackers {
  stable1: Earliest | undefined
  stable2: Earliest | undefined
  any1: Earliest | undefined
  any2: Earliest | undefined

  add(version: string, time: number, level: TrustLevel): void {
    const keep = (slot: Earliest | undefined): Earliest | undefined => (slot === undefined || time < slot.time ? { time, version } : slot)
    if (!isPrerelease(version)) {
      this.stable1 = keep(this.stable1)
      if (level === 2) this.stable2 = keep(this.stable2)
    }
    this.any1 = keep(this.any1)
    if (level === 2) this.any2 = keep(this.any2)
  }

  earlier(version: string, time: number | undefined): EarlierTrust | undefined {
    const stable = !isPrerelease(version)
    const two = stable ? this.stable2 : this.any2
    const one = stable ? this.stable1 : this.any1
    // No time: every other version counts as earlier. Infinity places it after all.
    const before = time ?? Infinity
    if (two !== undefined && two.time < before && two.version !== version) return { level: 2, version: two.version }
    if (one !== undefined && one.time < before && one.version !== version) return { level: 1, version: one.version }
    return undefined
  }
}

interface Dated {
  readonly version: string
  readonly major: number
  readonly minor: number
  readonly patch: number
  /** The prerelease part after `-`, or undefined. */
  readonly pre: string | undefined
  /** Its identifiers, split once (a sweep compares each version many times). */
  readonly preIds: readonly string[] | undefined
  readonly time: number | undefined
  readonly script: boolean
}

/** A canonical version (`M.m.p[-pre]`, canonical-version.ts) read without building a SemVer. */
function dated(version: string, time: number | undefined, script: boolean): Dated {
  const dash = version.indexOf('-')
  const main = dash === -1 ? version : version.slice(0, dash)
  const first = main.indexOf('.')
  const second = main.indexOf('.', first + 1)
  return {
    version,
    major: Number(main.slice(0, first)),
    minor: Number(main.slice(first + 1, second)),
    patch: Number(main.slice(second + 1)),
    pre: dash === -1 ? undefined : version.slice(dash + 1),
    preIds: dash === -1 ? undefined : version.slice(dash + 1).split('.'),
    time,
    script,
  }
}

/**
 * semver 2.0 precedence of two canonical versions: the numbers, then a
 * release above its prereleases, then the prerelease identifiers one by one
 * (numeric ones numerically and below alphanumeric ones; a shorter list that
 * is a prefix is lower). test/packument/version-history.test.ts holds it to
 * semver.compare.
 */
export function compareDated(a: Dated, b: Dated): number {
  if (a.major !== b.major) return a.major < b.major ? -1 : 1
  if (a.minor !== b.minor) return a.minor < b.minor ? -1 : 1
  if (a.patch !== b.patch) return a.patch < b.patch ? -1 : 1
  if (a.pre === b.pre) return 0
  if (a.pre === undefined) return 1
  if (b.pre === undefined) return -1
  const x = a.preIds!
  const y = b.preIds!
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i]
    const q = y[i]
    if (p === undefined) return -1
    if (q === undefined) return 1
    if (p === q) continue
    const pn = /^\d+$/.test(p)
    const qn = /^\d+$/.test(q)
    if (pn && qn) return Number(p) < Number(q) ? -1 : 1
    if (pn) return -1
    if (qn) return 1
    return p < q ? -1 : 1
  }
  return 0
}

/**
 * compareDated(dated(key), d) for a key of the document without building
 * anything for it: its three numbers are read from its characters in place,
 * and its prerelease is split only when they tie. A key that is no canonical
 * version may compare as NaN (the caller skips such keys).
 */
function compareKeyTo(key: string, d: Dated): number {
  let i = 0
  for (let part = 0; part < 3; part++) {
    const stop = part < 2 ? 0x2e : 0x2d
    const from = i
    let value = 0
    for (; i < key.length; i++) {
      const c = key.charCodeAt(i)
      if (c === stop) break
      if (c < 0x30 || c > 0x39) return NaN
      value = value * 10 + (c - 0x30)
    }
    if (i === from) return NaN
    const want = part === 0 ? d.major : part === 1 ? d.minor : d.patch
    if (value !== want) return value < want ? -1 : 1
    i++
  }
  // The numbers tie: a release is above its prereleases.
  if (i > key.length) return d.pre === undefined ? 0 : 1
  if (d.pre === undefined) return -1
  return compareDated(dated(key, undefined, false), d)
}

/** The same reading for a test: -1, 0 or 1 for two canonical version strings. */
export function compareCanonical(a: string, b: string): number {
  return compareDated(dated(a, undefined, false), dated(b, undefined, false))
}

const NO_HISTORY_FACTS: HistoryFacts = Object.freeze({})

/** Candidates at most this many are each found by one pass over the history; more share one sweep. */
const LINEAR_CANDIDATES = 16

/** The position of the first member of `sorted` (semver order) not below `d`. */
function lowerBound(sorted: readonly Dated[], d: Dated): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareDated(sorted[mid]!, d) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Published before `d` (a version without a time: any other version). */
function before(other: Dated, d: Dated): boolean {
  return d.time === undefined ? other !== d : other.time !== undefined && other.time < d.time
}

/** The previous version of `d` by one pass over the history. */
function previousIn(all: readonly Dated[], d: Dated): Dated | undefined {
  let previous: Dated | undefined
  for (const other of all) {
    if (before(other, d) && compareDated(other, d) < 0 && (previous === undefined || compareDated(other, previous) > 0)) previous = other
  }
  return previous
}

/**
 * The previous version of every candidate, from one sort by time and a
 * sweep that keeps the versions seen so far in semver order.
 */
function sweepPrevious(all: readonly Dated[], candidate: (d: Dated) => boolean, judge: (d: Dated, previous: Dated | undefined) => void): void {
  const predecessor = (sorted: readonly Dated[], d: Dated): Dated | undefined => {
    const at = lowerBound(sorted, d)
    return at === 0 ? undefined : sorted[at - 1]
  }
  const timed = all.filter((d) => d.time !== undefined).sort((a, b) => (a.time as number) - (b.time as number))
  const seen: Dated[] = []
  for (let i = 0; i < timed.length;) {
    // Versions published at the same instant are not before one another: judge the group, then add it.
    let j = i
    while (j < timed.length && timed[j]!.time === timed[i]!.time) j++
    for (let k = i; k < j; k++) if (candidate(timed[k]!)) judge(timed[k]!, predecessor(seen, timed[k]!))
    for (let k = i; k < j; k++) seen.splice(lowerBound(seen, timed[k]!), 0, timed[k]!)
    i = j
  }
  const untimed = all.filter((d) => d.time === undefined && candidate(d))
  if (untimed.length > 0) {
    const sorted = [...all].sort(compareDated)
    for (const d of untimed) judge(d, predecessor(sorted, d))
  }
}

/** Steps per version past which everyPrevious gives up its walk for the sweep. */
const WALK_BUDGET = 16

/**
 * The previous version of every version. In semver order the previous
 * version is nearly always the next one down (a backport walks a little
 * further), so one sort and a short walk each; a history published far out
 * of order (the walk over budget) takes the sweep instead, which is
 * O(n log n) whatever the order.
 */
function everyPrevious(all: readonly Dated[]): Map<string, Dated | undefined> {
  const previous = new Map<string, Dated | undefined>()
  const sorted = [...all].sort(compareDated)
  let budget = WALK_BUDGET * sorted.length
  for (let i = 0; i < sorted.length; i++) {
    const d = sorted[i]!
    let j = i - 1
    while (j >= 0 && !before(sorted[j]!, d)) j--
    budget -= i - j
    if (budget < 0) {
      previous.clear()
      sweepPrevious(all, () => true, (one, p) => previous.set(one.version, p))
      return previous
    }
    previous.set(d.version, j < 0 ? undefined : sorted[j])
  }
  return previous
}

export class VersionHistory {
  readonly #index: PackumentIndex
  readonly needs: FactNeeds
  #trust: TrustTrackers | null | undefined
  /** Per version with an install script: the previous version when it had none. */
  #scriptAdded: Map<string, string> | undefined
  /** The history's versions as compared (canonical keys), read once. */
  #all: Dated[] | undefined
  #candidates = 0
  /** previousOf: answers by one pass each so far (kept, as the gate and the selected-version record both ask), then every version's from one sweep. */
  #linearAsks = 0
  readonly #asked = new Map<string, string | undefined>()
  /** The document's keys, for the passes (newest first is the end). */
  #keys: string[] | undefined
  #previous: Map<string, Dated | undefined> | undefined
  #changes: ManifestChanges | undefined

  constructor(index: PackumentIndex, needs: FactNeeds) {
    this.#index = index
    this.needs = needs
  }

  #timeOf(version: string): number | undefined {
    const ms = publishTimeMs(this.#index, this.#index.time.get(version))
    return ms === undefined || !Number.isFinite(ms) ? undefined : ms
  }

  /** The strongest trust of the versions published before `version`; undefined when none had any. */
  earlierTrust(version: string, publishedMs: number | undefined): EarlierTrust | undefined {
    if (this.#trust === undefined) {
      let trackers: TrustTrackers | null = null
      for (const [key, entry] of this.#index.versions) {
        const level = trustOf(entry)
        if (level === 0 || canonicalVersion(key) !== key) continue
        const time = this.#timeOf(key)
        if (time === undefined) continue
        ;(trackers ??= new TrustTrackers()).add(key, time, level)
      }
      this.#trust = trackers
    }
    // Most packages have no trust evidence at all: nothing is earlier.
    if (this.#trust === null) return undefined
    const time = publishedMs === undefined || !Number.isFinite(publishedMs) ? undefined : publishedMs
    return this.#trust.earlier(version, time)
  }

  /** For a version with an install script: the previous version when it had none, else undefined. */
  scriptAddedAfter(version: string): string | undefined {
    this.#scriptAdded ??= this.#sweep()
    return this.#scriptAdded.get(version)
  }

  #allDated(): Dated[] {
    if (this.#all !== undefined) return this.#all
    const all: Dated[] = []
    let candidates = 0
    for (const [key, entry] of this.#index.versions) {
      if (canonicalVersion(key) !== key) continue
      const script = hasInstallScript(entry)
      if (script) candidates++
      all.push(dated(key, this.#timeOf(key), script))
    }
    this.#candidates = candidates
    this.#all = all
    return all
  }

  /**
   * The previous version of `version` (the greatest lower by semver among
   * those published before it; undefined for a first version or one not in
   * the history), for the rules that compare a version with it.
   */
  previousOf(version: string): string | undefined {
    if (this.#previous !== undefined) return this.#previous.get(version)?.version
    if (this.#asked.has(version)) return this.#asked.get(version)
    if (this.#linearAsks < LINEAR_CANDIDATES) {
      this.#linearAsks++
      const previous = this.#previousByPass(version)
      this.#asked.set(version, previous)
      return previous
    }
    this.#previous = everyPrevious(this.#allDated())
    return this.#previous.get(version)?.version
  }

  /**
   * One version's previous version by one pass over the keys, building
   * nothing for the others (a young version or two per document is the
   * usual ask): each key is compared with the version by its digits, newest
   * key first (the previous version is usually among the last published),
   * and a publish time is decoded only for a key that would be a better
   * answer than the one so far.
   */
  #previousByPass(version: string): string | undefined {
    if (canonicalVersion(version) !== version || !this.#index.versions.has(version)) return undefined
    const d = dated(version, this.#timeOf(version), false)
    let best: Dated | undefined
    const keys = (this.#keys ??= [...this.#index.versions.keys()])
    for (let k = keys.length - 1; k >= 0; k--) {
      const key = keys[k]!
      if (key === version || compareKeyTo(key, d) >= 0 || (best !== undefined && compareKeyTo(key, best) <= 0)) continue
      if (canonicalVersion(key) !== key) continue
      const other = dated(key, this.#timeOf(key), false)
      if (before(other, d)) best = other
    }
    return best?.version
  }

  /** DenyIfInstallScriptChanged: how `version`'s install scripts differ from its previous version's, or undefined. */
  scriptChange(version: string): InstallScriptChange | undefined {
    const previous = this.previousOf(version)
    return previous === undefined ? undefined : this.#manifestChanges().scripts(version, previous)
  }

  /** DenyIfDependencyAdded: the dependency names `version` adds to its previous version's, or undefined. */
  dependencyAddition(version: string): DependencyAddition | undefined {
    const previous = this.previousOf(version)
    return previous === undefined ? undefined : this.#manifestChanges().dependencies(version, previous)
  }

  #manifestChanges(): ManifestChanges {
    return (this.#changes ??= new ManifestChanges(this.#index))
  }

  #sweep(): Map<string, string> {
    const added = new Map<string, string>()
    const all = this.#allDated()
    const candidates = this.#candidates
    // Nothing to judge when no version has a script, or when all of them do.
    if (candidates === 0 || candidates === all.length) return added
    const judge = (d: Dated, previous: Dated | undefined): void => {
      if (previous !== undefined && !previous.script) added.set(d.version, previous.version)
    }
    if (candidates <= LINEAR_CANDIDATES) {
      // Few versions with a script (the usual case): one pass each, no sort.
      for (const d of all) if (d.script) judge(d, previousIn(all, d))
      return added
    }
    sweepPrevious(all, (d) => d.script, judge)
    return added
  }
  /**
   * The history facts of one version, as the selected-version record carries
   * them. The two signals' comparisons only for a version still young at
   * `now` (FactNeeds.signalsWithinMs; unknown `now`: every version).
   */
  factsOf(version: string, entry: VersionEntry, publishedMs: number | undefined, now?: number): HistoryFacts {
    const young = now === undefined || publishedMs === undefined || !(now - publishedMs >= (this.needs.signalsWithinMs ?? Infinity))
    const signals = young && (this.needs.scriptChanges === true || this.needs.dependencies === true)
    // A mount with only the two signals asks this of every selected version; an old one has nothing to say and costs no allocation.
    if (!this.needs.trust && !this.needs.installScripts && !signals) return NO_HISTORY_FACTS
    const facts: { -readonly [K in keyof HistoryFacts]: HistoryFacts[K] } = {}
    if (this.needs.trust) {
      facts.trust = trustOf(entry)
      const earlier = this.earlierTrust(version, publishedMs)
      if (earlier !== undefined) facts.earlierTrust = earlier
    }
    if (this.needs.installScripts) {
      facts.installScript = hasInstallScript(entry)
      const after = facts.installScript ? this.scriptAddedAfter(version) : undefined
      if (after !== undefined) facts.scriptAddedAfter = after
    }
    if (this.needs.scriptChanges === true && young) {
      const change = this.scriptChange(version)
      if (change !== undefined) facts.installScriptChange = change
    }
    if (this.needs.dependencies === true && young) {
      const addition = this.dependencyAddition(version)
      if (addition !== undefined) facts.dependencyAddition = addition
    }
    // Most versions of a mount with only the two signals have nothing to say: one shared record, not one each.
    return Object.keys(facts).length === 0 ? NO_HISTORY_FACTS : facts
  }
}
