/**
 * What one public version's manifest changes against another's (issue 31
 * item 5): its install scripts (DenyIfInstallScriptChanged) and its
 * dependency names (DenyIfDependencyAdded). Read from the slices the
 * scanner recorded (VersionEntry scriptsStart..., ScannerOptions
 * recordSlices), never from a parsed document: two manifests whose slices
 * are the same bytes are the same, with nothing decoded (most releases
 * leave both alone); otherwise each slice is decoded once per document and
 * kept for the next comparison.
 *
 * Install scripts: `preinstall`, `install` and `postinstall`, each as
 * JavaScript reads it (npm runs a hook whose value is truthy; a repeated key
 * counts by its last value, as JSON.parse keeps it). A hook set here and
 * not there is added, a hook set in both with another command is changed; a
 * hook removed runs nothing new and is no change. npm writes the implicit
 * `node-gyp rebuild` of a package with a `binding.gyp` into `scripts.install`
 * when it publishes, so the full document's `scripts` shows that one too
 * (the public document is always read in the full form).
 *
 * Dependency names: the keys of `dependencies`, `optionalDependencies` and
 * `peerDependencies`. Optional dependencies are installed and run their own
 * scripts like any other; npm 7 and later install a missing peer
 * dependency too, so a new peer name brings new code as well.
 * `devDependencies` are never installed from the registry and do not count.
 */
import { Buffer } from 'node:buffer'

import type { DependencyAddition, InstallScriptChange } from '../policy/decision.js'
import type { PackumentIndex, VersionEntry } from './packument-index.js'

const HOOKS = ['preinstall', 'install', 'postinstall'] as const

type Hooks = Readonly<Partial<Record<(typeof HOOKS)[number], string>>>

const NO_HOOKS: Hooks = Object.freeze({})
/** The bytes every hook's key ends with: `preinstall"`, `install"`, `postinstall"`. */
const HOOK_KEY_END = Buffer.from('install"')
const NO_NAMES: ReadonlySet<string> = new Set()

/** A slice of the document, or none. */
interface Slice {
  readonly start: number
  readonly end: number
}

function slice(start: number, end: number): Slice | undefined {
  return start < 0 ? undefined : { start, end }
}

export class ManifestChanges {
  readonly #index: PackumentIndex
  readonly #hooks = new Map<VersionEntry, Hooks>()
  readonly #names = new Map<VersionEntry, ReadonlySet<string>>()

  constructor(index: PackumentIndex) {
    this.#index = index
  }

  /** How `version`'s install scripts differ from `previous`'s; undefined when they do not (or either is unknown). */
  scripts(version: string, previous: string): InstallScriptChange | undefined {
    const entry = this.#index.versions.get(version)
    const before = this.#index.versions.get(previous)
    if (entry === undefined || before === undefined) return undefined
    const added: string[] = []
    const changed: string[] = []
    if (!this.#same(slice(entry.scriptsStart, entry.scriptsEnd), slice(before.scriptsStart, before.scriptsEnd)) && this.#mayHaveHooks(entry)) {
      const now = this.#hooksOf(entry)
      const then = this.#hooksOf(before)
      for (const hook of HOOKS) {
        const command = now[hook]
        if (command === undefined) continue
        const earlier = then[hook]
        if (earlier === undefined) added.push(hook)
        else if (earlier !== command) changed.push(hook)
      }
    }
    return added.length === 0 && changed.length === 0 ? undefined : { since: previous, added, changed }
  }

  /** The dependency names `version` has and `previous` had not, sorted; undefined when none (or either is unknown). */
  dependencies(version: string, previous: string): DependencyAddition | undefined {
    const entry = this.#index.versions.get(version)
    const before = this.#index.versions.get(previous)
    if (entry === undefined || before === undefined) return undefined
    if (
      this.#same(slice(entry.dependenciesStart, entry.dependenciesEnd), slice(before.dependenciesStart, before.dependenciesEnd)) &&
      this.#same(slice(entry.optionalDependenciesStart, entry.optionalDependenciesEnd), slice(before.optionalDependenciesStart, before.optionalDependenciesEnd)) &&
      this.#same(slice(entry.peerDependenciesStart, entry.peerDependenciesEnd), slice(before.peerDependenciesStart, before.peerDependenciesEnd))
    ) return undefined
    const then = this.#namesOf(before)
    const names = [...this.#namesOf(entry)].filter((name) => !then.has(name)).sort()
    return names.length === 0 ? undefined : { since: previous, names }
  }

  /** The two slices hold the same bytes (both absent counts as the same). */
  #same(a: Slice | undefined, b: Slice | undefined): boolean {
    if (a === undefined || b === undefined) return a === b
    const length = a.end - a.start
    if (length !== b.end - b.start) return false
    return this.#view(a.start, a.end).equals(this.#view(b.start, b.end))
  }

  /** The bytes [start, end) as a Buffer, for its native search and comparison (a view when they lie in one chunk). */
  #view(start: number, end: number): Buffer {
    const bytes = this.#index.source.bytes(start, end)
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  /**
   * False when `entry`'s scripts cannot name a hook: every hook's key ends
   * in `install"`, and a native search for those bytes is much cheaper than
   * decoding the `scripts` of every release that changed some other script.
   */
  #mayHaveHooks(entry: VersionEntry): boolean {
    if (entry.scriptsStart < 0) return false
    return this.#view(entry.scriptsStart, entry.scriptsEnd).includes(HOOK_KEY_END)
  }

  #decode(start: number, end: number): Record<string, unknown> | undefined {
    if (start < 0) return undefined
    const value: unknown = JSON.parse(this.#index.source.utf8(start, end))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  }

  #hooksOf(entry: VersionEntry): Hooks {
    let hooks = this.#hooks.get(entry)
    if (hooks !== undefined) return hooks
    const scripts = this.#decode(entry.scriptsStart, entry.scriptsEnd)
    const found: Partial<Record<(typeof HOOKS)[number], string>> = {}
    for (const hook of HOOKS) {
      const command = scripts === undefined || !Object.hasOwn(scripts, hook) ? undefined : scripts[hook]
      // npm runs a truthy hook; a value that is no string is compared as its JSON.
      if (command) found[hook] = typeof command === 'string' ? command : JSON.stringify(command)
    }
    hooks = Object.keys(found).length === 0 ? NO_HOOKS : found
    this.#hooks.set(entry, hooks)
    return hooks
  }

  #namesOf(entry: VersionEntry): ReadonlySet<string> {
    let names = this.#names.get(entry)
    if (names !== undefined) return names
    const lists = [
      this.#decode(entry.dependenciesStart, entry.dependenciesEnd),
      this.#decode(entry.optionalDependenciesStart, entry.optionalDependenciesEnd),
      this.#decode(entry.peerDependenciesStart, entry.peerDependenciesEnd),
    ]
    const all = new Set<string>()
    for (const list of lists) if (list !== undefined) for (const name of Object.keys(list)) all.add(name)
    names = all.size === 0 ? NO_NAMES : all
    this.#names.set(entry, names)
    return names
  }
}
