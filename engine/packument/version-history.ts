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
 * semver order (O(n log n) comparisons).
 */
import { canonicalVersion } from '../npm/canonical-version.js'
import type { EarlierTrust, FactNeeds, HistoryFacts, TrustLevel } from '../policy/decision.js'
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
  const x = a.pre.split('.')
  const y = b.pre.split('.')
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

/** The same reading for a test: -1, 0 or 1 for two canonical version strings. */
export function compareCanonical(a: string, b: string): number {
  return compareDated(dated(a, undefined, false), dated(b, undefined, false))
}

/** Candidates at most this many are each found by one pass over the history; more share one sweep. */
const LINEAR_CANDIDATES = 16

export class VersionHistory {
  readonly #index: PackumentIndex
  readonly needs: FactNeeds
  #trust: TrustTrackers | null | undefined
  /** Per version with an install script: the previous version when it had none. */
  #scriptAdded: Map<string, string> | undefined

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

  #sweep(): Map<string, string> {
    const added = new Map<string, string>()
    const all: Dated[] = []
    let candidates = 0
    for (const [key, entry] of this.#index.versions) {
      if (canonicalVersion(key) !== key) continue
      const script = hasInstallScript(entry)
      if (script) candidates++
      all.push(dated(key, this.#timeOf(key), script))
    }
    // Nothing to judge when no version has a script, or when all of them do.
    if (candidates === 0 || candidates === all.length) return added
    const judge = (d: Dated, previous: Dated | undefined): void => {
      if (previous !== undefined && !previous.script) added.set(d.version, previous.version)
    }
    /** Published before `d` (a version without a time: any other version). */
    const before = (other: Dated, d: Dated): boolean => d.time === undefined ? other !== d : other.time !== undefined && other.time < d.time
    if (candidates <= LINEAR_CANDIDATES) {
      // Few versions with a script (the usual case): one pass each, no sort.
      for (const d of all) {
        if (!d.script) continue
        let previous: Dated | undefined
        for (const other of all) {
          if (before(other, d) && compareDated(other, d) < 0 && (previous === undefined || compareDated(other, previous) > 0)) previous = other
        }
        judge(d, previous)
      }
      return added
    }
    /** The greatest member of `sorted` (semver order) below `d`, or undefined. */
    const predecessor = (sorted: readonly Dated[], d: Dated): Dated | undefined => {
      let lo = 0
      let hi = sorted.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (compareDated(sorted[mid]!, d) < 0) lo = mid + 1
        else hi = mid
      }
      return lo === 0 ? undefined : sorted[lo - 1]
    }
    const timed = all.filter((d) => d.time !== undefined).sort((a, b) => (a.time as number) - (b.time as number))
    const seen: Dated[] = []
    for (let i = 0; i < timed.length;) {
      // Versions published at the same instant are not before one another: judge the group, then add it.
      let j = i
      while (j < timed.length && timed[j]!.time === timed[i]!.time) j++
      for (let k = i; k < j; k++) if (timed[k]!.script) judge(timed[k]!, predecessor(seen, timed[k]!))
      for (let k = i; k < j; k++) {
        const d = timed[k]!
        let lo = 0
        let hi = seen.length
        while (lo < hi) {
          const mid = (lo + hi) >>> 1
          if (compareDated(seen[mid]!, d) < 0) lo = mid + 1
          else hi = mid
        }
        seen.splice(lo, 0, d)
      }
      i = j
    }
    const untimed = all.filter((d) => d.time === undefined && d.script)
    if (untimed.length > 0) {
      const sorted = [...all].sort(compareDated)
      for (const d of untimed) judge(d, predecessor(sorted, d))
    }
    return added
  }

  /** The history facts of one version, as the selected-version record carries them. */
  factsOf(version: string, entry: VersionEntry, publishedMs: number | undefined): HistoryFacts {
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
    return facts
  }
}
