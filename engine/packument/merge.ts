/**
 * Merge and gate (SPEC.md 1.2, 2.1-2.3, 4.2): decides which versions of the
 * private and public documents survive, and what the synthesized packument is
 * made of, without copying a byte. render.ts writes the plan out.
 *
 * - Private versions are trusted: every one is kept, never gated.
 * - On any collision, of a version or of any other top-level field, the
 *   private side wins; a public version shadowed by a private one (by key, or
 *   as npm reads the private key) is not gated.
 * - A public key npm reads as another version or none, and a manifest that
 *   disagrees with its key, is dropped before any rule (DropReason).
 * - Each remaining public version is gated through `decide`; only
 *   `verdict === 'admit'` keeps it, and only while no refused version has
 *   its tarball's file name.
 * - `dist-tags.latest` is repointed (latest.ts); other tags survive only when
 *   they point at a surviving version, the private side's tag winning.
 * - `time` keeps `created`, `modified` and the surviving versions' entries.
 * - Everything else is relayed unchanged, but a public document's
 *   PICKER_FIELDS.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { ServiceError } from '../errors.js'
import { withholdingOf, type VersionObservation, type Withholding } from '../listing/withholding.js'
import { canonicalVersion } from '../npm/canonical-version.js'
import type { Decision, EarlierTrust, FactNeeds, HistoryFacts, RuleKind, TrustLevel, VersionFacts } from '../policy/decision.js'
import { newestSurvivingVersion } from './latest.js'
import { memberString, NOT_A_STRING, type Member, type PackumentIndex, type VersionEntry } from './packument-index.js'
import { publishTimeMs } from './publish-time.js'
import { decodeFilename, TarballRewriter, tarballSegmentRange } from './tarball-url.js'
import { hasInstallScript, trustOf, VersionHistory } from './version-history.js'

/**
 * The gate for one public version. `needs` says which history facts its
 * rules read (absent: none); the scanner records them and the merge supplies
 * them only then, so a mount without those rules pays nothing for them.
 */
export interface Decide {
  (facts: VersionFacts): Decision
  readonly needs?: FactNeeds
  /**
   * When decisions are taken (ms since the epoch) and the ages after
   * publication at which they can change (Evaluator.ageSteps), so the merge
   * can say when its answer must be re-gated; absent: never by age alone.
   */
  readonly clock?: { readonly now: number; readonly ageSteps: (packageName: string) => readonly number[]; readonly expiresAt?: number | undefined }
}

export interface MergeInput {
  readonly packageName: string
  /** `{base_url}`: the proxy's externally reachable base address. */
  readonly baseUrl: string
  readonly privateIndex?: PackumentIndex | undefined
  readonly publicIndex?: PackumentIndex | undefined
  readonly decide: Decide
  readonly ecosystem?: Ecosystem
}

/**
 * What the artifact route reuses for a gated public version (kept or
 * withheld, so a withheld one is refused with its policy status): it gates a
 * lockfile install by tarball file name to version, then fetches the
 * authoritative upstream location (SPEC.md 4.4 public leg 2-3).
 */
export interface SelectedVersion {
  readonly version: string
  /** The decoded last path segment of the upstream tarball URL, as validateArtifactFilename returns it. */
  readonly filename: string
  /** The upstream's `dist.tarball`, unchanged. */
  readonly tarball: string
  readonly integrity: string | undefined
  readonly shasum: string | undefined
  /** The upstream's publish time of the version (`time[version]`), ms since the epoch; the artifact path gates on it again. */
  readonly publishedAt: number | undefined
  /** The history facts the mount's rules read (Decide.needs), for the artifact path's gate; absent when none do. */
  readonly history?: HistoryFacts | undefined
}

/**
 * Why a public version was dropped before the gate: its key is no version
 * npm reads (`unreadable_key`), or an alias of one (`alias_key`: `01.0.0`,
 * `v1.0.0`, `1.0.0+b` name 1.0.0, which only its canonical key may carry);
 * its manifest names another package (`name_mismatch`) or another version
 * (`version_mismatch`) than its key, or holds a `name` or `version` that is
 * not a string.
 */
export type DropReason = 'unreadable_key' | 'alias_key' | 'name_mismatch' | 'version_mismatch'

export interface DroppedVersion {
  readonly version: string
  readonly reason: DropReason
}

/** How many dropped versions a plan lists (all are counted): a hostile document must not make the answer grow. */
export const MAX_DROPPED_LISTED = 32

export interface MergeCounts {
  readonly keptPrivate: number
  readonly keptPublic: number
  /** Public versions the gate did not admit, and admitted ones whose tarball file name a refused one has. */
  readonly withheld: number
  /** Public versions shadowed by a private version: the same key, or a private key npm reads as this version (`v1.0.0` for 1.0.0). */
  readonly superseded: number
  /** Public versions withheld because they carry no tarball URL the proxy could serve. */
  readonly unservable: number
  /** Public versions dropped before the gate (DropReason); their artifacts are not selectable either. */
  readonly dropped: number
}

/**
 * A kept version. Its `dist.tarball` is rewritten as `plan.tarballPrefix`
 * followed by the source bytes [segmentStart, segmentEnd) of the file name
 * and a closing quote, when the upstream wrote the URL as plain ASCII (so the
 * segment's bytes are its JSON); else as `tarballToken`. Neither: the
 * manifest is relayed as it is.
 */
export interface PlannedVersion {
  readonly version: string
  readonly index: PackumentIndex
  readonly entry: VersionEntry
  readonly segmentStart: number
  readonly segmentEnd: number
  /** The rewritten `dist.tarball` as a JSON string token, when the segment's source bytes cannot be copied. */
  readonly tarballToken: string | undefined
}

export interface IndexedMember {
  readonly index: PackumentIndex
  readonly member: Member
}

export type TopLevelItem =
  | { readonly kind: 'relay'; readonly index: PackumentIndex; readonly member: Member }
  | { readonly kind: 'name' | 'dist-tags' | 'versions' | 'time' }

export interface MergePlan {
  readonly packageName: string
  /** UTF-8 of the rewritten tarball URL's JSON token up to the file name: the opening quote and the proxy's prefix. */
  readonly tarballPrefix: Uint8Array
  /** Top-level members of the full form, in order: the base document's order, then the other's additions. */
  readonly topLevel: readonly TopLevelItem[]
  readonly versions: readonly PlannedVersion[]
  readonly distTags: ReadonlyArray<readonly [string, string]>
  /** `time` members: `modified`, `created`, then one per surviving version that has one. */
  readonly time: readonly IndexedMember[]
  /** The value the abbreviated form's top-level `modified` copies. */
  readonly modified: IndexedMember | undefined
  readonly counts: MergeCounts
  /** Every gated public version with a tarball, admitted or not: the artifact route gates by file name again. */
  readonly selected: readonly SelectedVersion[]
  readonly observations: readonly VersionObservation[]
  /** The first MAX_DROPPED_LISTED public versions dropped before the gate, with why. */
  readonly dropped: readonly DroppedVersion[]
  /** Advisory rules that consulted the database successfully at least once (an outage may be over). */
  readonly advisoryAnswered: readonly RuleKind[]
  /** Set when no version survived and some public version was withheld. */
  readonly withholding: Withholding | undefined
  /**
   * The first moment (ms since the epoch) at which a decision behind this
   * plan can change with no upstream change: a public version reaching a
   * quarantine's age, or the advisory push reaching its maximum age.
   * Undefined: none is known ahead.
   */
  readonly regateAt: number | undefined
}

const SYNTHESIZED: ReadonlySet<string> = new Set(['name', 'dist-tags', 'versions', 'time'])

/**
 * Top-level members of a packument from which npm's picker (npm-pick-manifest)
 * takes manifests besides `versions`: `policyRestrictions.versions` always
 * (a restricted manifest is picked when nothing else satisfies the range,
 * and returned when its own `version` is not itself restricted) and
 * `stagedVersions.versions` with `includeStaged`. No rule ever judged those
 * manifests and their tarballs are not rewritten, so a public document's are
 * never relayed; the private upstream's are trusted like its versions.
 */
export const PICKER_FIELDS: ReadonlySet<string> = new Set(['policyRestrictions', 'stagedVersions'])

/** VersionFacts whose publish time is decoded only if a rule reads it. */
class LazyVersionFacts implements VersionFacts {
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

  /** The history facts for the selected-version record, or undefined when no rule reads any. */
  historyFacts(): HistoryFacts | undefined {
    return this.#history?.factsOf(this.version, this.#entry, this.publishedMs)
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

/** An upstream tarball URL and where its file name segment lies in it. */
interface Tarball {
  readonly url: string
  readonly from: number
  readonly to: number
}

function selectedRecord(version: string, tarball: Tarball, index: PackumentIndex, entry: VersionEntry, facts: LazyVersionFacts): SelectedVersion {
  return {
    version,
    filename: decodeFilename(tarball.url.slice(tarball.from, tarball.to)),
    tarball: tarball.url,
    integrity: decodeSlice(index, entry.integrityStart, entry.integrityEnd, entry.integrityPlain),
    shasum: decodeSlice(index, entry.shasumStart, entry.shasumEnd, entry.shasumPlain),
    publishedAt: facts.publishedMs,
    // Always present (undefined when no rule reads history): one record shape on the hot path.
    history: facts.historyFacts(),
  }
}

function checkName(index: PackumentIndex | undefined, packageName: string, upstream: 'private' | 'public'): void {
  if (index === undefined) return
  const member = index.members.get('name')
  if (member === undefined) return
  if (memberString(index, member) !== packageName) {
    // SPEC.md 4.2: 502, a responding upstream returned a packument for a different package.
    throw new ServiceError('UPSTREAM_WRONG_PACKAGE', { data: { upstream } })
  }
}

/**
 * Whether the JSON string token [start, end) of `index` is `text`.
 * Decision: a plain token (no escape, ASCII only) is compared byte by byte in
 * place, which is what nearly every manifest's `name` and `version` are: the
 * gate reads both for every public version, and decoding them would cost two
 * strings per version on the hot path.
 */
function tokenIs(index: PackumentIndex, start: number, end: number, plain: boolean, text: string): boolean {
  if (!plain) return index.source.jsonString(start, end, false) === text
  if (end - start - 2 !== text.length) return false
  const chunk = index.source.within(start, end)
  if (chunk === undefined) return index.source.jsonString(start, end, true) === text
  const at = index.source.chunkOffset + 1
  for (let k = 0; k < text.length; k++) if (chunk[at + k] !== text.charCodeAt(k)) return false
  return true
}

/**
 * Why a public manifest cannot stand under its key, or undefined when it
 * can. The client installs the manifest it finds under the key and records
 * its own `name` and `version`: a manifest that names another package, or
 * another version string than its (canonical) key, even a loose alias of it
 * (`v1.0.0` under `1.0.0`), or anything but a string, is not what the gate
 * judged. A missing `name` or `version` is no disagreement.
 */
function manifestDisagreement(index: PackumentIndex, entry: VersionEntry, packageName: string, version: string, commonNameAgrees: boolean): DropReason | undefined {
  // What the scanner already compared (nameIsCommon, versionIsKey) needs no second look at the bytes.
  if (entry.nameStart !== -1 && (entry.nameStart === NOT_A_STRING ||
    (entry.nameIsCommon ? !commonNameAgrees : !tokenIs(index, entry.nameStart, entry.nameEnd, entry.namePlain, packageName)))) return 'name_mismatch'
  if (entry.versionStart !== -1 && (entry.versionStart === NOT_A_STRING ||
    (!entry.versionIsKey && !tokenIs(index, entry.versionStart, entry.versionEnd, entry.versionPlain, version)))) return 'version_mismatch'
  return undefined
}

/**
 * A small integer from a file name's length and the four characters before
 * its `.tgz`, where versions differ: most admitted file names are cleared of
 * a collision with a refused one by this alone, without hashing the string
 * (a lookup per admitted version of every public document).
 */
function fileTag(name: string): number {
  const n = name.length
  return (n & 63) | ((name.charCodeAt(n - 5) & 63) << 6) | ((name.charCodeAt(n - 6) & 63) << 12) |
    ((name.charCodeAt(n - 7) & 63) << 18) | ((name.charCodeAt(n - 8) & 63) << 24)
}

function decodeSlice(index: PackumentIndex, start: number, end: number, plain: boolean): string | undefined {
  return start < 0 ? undefined : index.source.jsonString(start, end, plain)
}

export function planMerge(input: MergeInput): MergePlan {
  const { packageName, privateIndex, publicIndex, decide } = input
  const ecosystem = input.ecosystem ?? 'js'
  checkName(privateIndex, packageName, 'private')
  checkName(publicIndex, packageName, 'public')
  const rewriter = new TarballRewriter(input.baseUrl, packageName)

  let versions: PlannedVersion[] = []
  const survivors = new Map<string, PackumentIndex>()
  let selected: SelectedVersion[] = []
  /** Per record of `selected`: the gate admitted its version. */
  const selectedAdmitted: boolean[] = []
  /** The file names of the refused records of `selected`, and their fileTag. */
  const refusedFiles = new Set<string>()
  const refusedTags = new Set<number>()
  const observations: VersionObservation[] = []
  const refusals: Decision[] = []
  const answered = new Set<RuleKind>()
  let keptPrivate = 0
  let keptPublic = 0
  let withheld = 0
  let superseded = 0
  let unservable = 0
  let droppedCount = 0
  const dropped: DroppedVersion[] = []
  const drop = (version: string, reason: DropReason): void => {
    droppedCount++
    if (dropped.length < MAX_DROPPED_LISTED) dropped.push({ version, reason })
  }

  const tarballOf = (index: PackumentIndex, entry: VersionEntry): Tarball | undefined => {
    const url = decodeSlice(index, entry.tarballStart, entry.tarballEnd, entry.tarballPlain)
    if (url === undefined) return undefined
    const range = tarballSegmentRange(url)
    return range === undefined ? undefined : { url, from: range[0], to: range[1] }
  }
  const planned = (version: string, index: PackumentIndex, entry: VersionEntry, tarball: Tarball | undefined): PlannedVersion => {
    if (tarball === undefined) return { version, index, entry, segmentStart: -1, segmentEnd: -1, tarballToken: undefined }
    // Plain and as long as its bytes: ASCII without escapes, so string offsets are byte offsets.
    if (entry.tarballPlain && tarball.url.length === entry.tarballEnd - entry.tarballStart - 2) {
      const at = entry.tarballStart + 1
      return { version, index, entry, segmentStart: at + tarball.from, segmentEnd: at + tarball.to, tarballToken: undefined }
    }
    const token = JSON.stringify(rewriter.url(tarball.url.slice(tarball.from, tarball.to)))
    return { version, index, entry, segmentStart: -1, segmentEnd: -1, tarballToken: token }
  }

  // The versions the private side names as npm's picker reads its keys: a private `v1.0.0` names 1.0.0 too.
  const privateVersions = new Set<string>()
  if (privateIndex !== undefined) {
    for (const [version, entry] of privateIndex.versions) {
      versions.push(planned(version, privateIndex, entry, tarballOf(privateIndex, entry)))
      survivors.set(version, privateIndex)
      privateVersions.add(canonicalVersion(version) ?? version)
      keptPrivate++
    }
  }

  const clock = decide.clock
  let regateAt = clock?.expiresAt !== undefined && clock.expiresAt > clock.now ? clock.expiresAt : undefined
  if (publicIndex !== undefined) {
    const commonNameAgrees = publicIndex.manifestName === packageName
    const steps = clock?.ageSteps(packageName) ?? []
    const needs = decide.needs
    const history = needs !== undefined && (needs.trust || needs.installScripts) ? new VersionHistory(publicIndex, needs) : undefined
    for (const [version, entry] of publicIndex.versions) {
      // Every rule judges the version the client would install: only a canonical key is gated at all.
      const canonical = canonicalVersion(version)
      if (canonical !== version) {
        drop(version, canonical === undefined ? 'unreadable_key' : 'alias_key')
        continue
      }
      if (privateVersions.has(version)) {
        // The private side has this version, under this key or an alias of it: its copy is the one a client must pick.
        superseded++
        continue
      }
      const disagreement = manifestDisagreement(publicIndex, entry, packageName, version, commonNameAgrees)
      if (disagreement !== undefined) {
        drop(version, disagreement)
        continue
      }
      const facts = new LazyVersionFacts(ecosystem, packageName, version, publicIndex, entry, history)
      const decision = decide(facts)
      if (steps.length > 0 && clock !== undefined) {
        const published = facts.publishedMs
        if (published !== undefined) {
          for (const step of steps) {
            const at = published + step
            if (at > clock.now && (regateAt === undefined || at < regateAt)) regateAt = at
          }
        }
      }
      let reported = decision.skipped.length > 0
      for (const observation of decision.advisory) {
        if (observation.cause === undefined) answered.add(observation.rule)
        else reported = true
      }
      if (reported) observations.push({ version, decision })
      const tarball = tarballOf(publicIndex, entry)
      if (decision.verdict !== 'admit') {
        withheld++
        refusals.push(decision)
        // Still selectable by file name: the artifact route gates it again and refuses it with the right status.
        if (tarball !== undefined) {
          const record = selectedRecord(version, tarball, publicIndex, entry, facts)
          selected.push(record)
          selectedAdmitted.push(false)
          refusedFiles.add(record.filename)
          refusedTags.add(fileTag(record.filename))
        }
        continue
      }
      if (tarball === undefined) {
        // Admitted, but no URL the proxy could serve it from (SPEC.md 2.3: tarball is required).
        unservable++
        continue
      }
      versions.push(planned(version, publicIndex, entry, tarball))
      survivors.set(version, publicIndex)
      selected.push(selectedRecord(version, tarball, publicIndex, entry, facts))
      selectedAdmitted.push(true)
      keptPublic++
    }
  }

  // One file name, one verdict. The artifact route finds a version by its
  // file name alone (a lockfile install reads no metadata), so an admitted
  // version whose tarball has the file name of a refused one would carry the
  // refused artifact past the gate: such a version is withheld too, and the
  // name stays the refused version's.
  if (refusedFiles.size > 0) {
    let shadowed: Set<string> | undefined
    for (let k = 0; k < selected.length; k++) {
      const filename = selected[k]!.filename
      if (selectedAdmitted[k] === true && refusedTags.has(fileTag(filename)) && refusedFiles.has(filename)) (shadowed ??= new Set()).add(selected[k]!.version)
    }
    if (shadowed !== undefined) {
      const withheldToo = shadowed
      selected = selected.filter((record, k) => selectedAdmitted[k] !== true || !withheldToo.has(record.version))
      versions = versions.filter((v) => v.index !== publicIndex || !withheldToo.has(v.version))
      for (const version of withheldToo) survivors.delete(version)
      keptPublic -= withheldToo.size
      withheld += withheldToo.size
    }
  }

  // dist-tags: the private side's tag wins; a tag survives only with its version.
  const tags = new Map<string, string>()
  for (const index of [privateIndex, publicIndex]) {
    if (index === undefined) continue
    for (const [tag, member] of index.distTags) {
      if (tags.has(tag)) continue
      const version = memberString(index, member)
      if (version !== undefined && survivors.get(version) !== undefined) tags.set(tag, version)
    }
  }
  const latest = newestSurvivingVersion(survivors.keys())
  if (latest !== undefined) tags.set('latest', latest)
  const distTags = [...tags]
  // Keep `latest` first, as registries write it.
  distTags.sort((a, b) => (a[0] === 'latest' ? -1 : b[0] === 'latest' ? 1 : 0))

  // time: created and modified (private wins), then each survivor's own entry.
  const time: IndexedMember[] = []
  const timeOf = (key: string): IndexedMember | undefined => {
    for (const index of [privateIndex, publicIndex]) {
      const member = index?.time.get(key)
      if (index !== undefined && member !== undefined) return { index, member }
    }
    return undefined
  }
  const modifiedTime = timeOf('modified')
  const created = timeOf('created')
  if (modifiedTime !== undefined) time.push(modifiedTime)
  if (created !== undefined) time.push(created)
  for (const planned of versions) {
    const member = planned.index.time.get(planned.version)
    if (member !== undefined) time.push({ index: planned.index, member })
  }

  // Top level: the base document's order, then what the other adds.
  const topLevel: TopLevelItem[] = []
  const placed = new Set<string>()
  for (const index of [privateIndex, publicIndex]) {
    if (index === undefined) continue
    for (const [key, member] of index.members) {
      if (placed.has(key)) continue
      if (index === publicIndex && PICKER_FIELDS.has(key)) continue
      placed.add(key)
      if (SYNTHESIZED.has(key)) topLevel.push({ kind: key as 'name' | 'dist-tags' | 'versions' | 'time' })
      else topLevel.push({ kind: 'relay', index, member })
    }
  }
  for (const key of ['name', 'dist-tags', 'versions'] as const) {
    if (!placed.has(key)) topLevel.push({ kind: key })
  }
  if (!placed.has('time') && time.length > 0) topLevel.push({ kind: 'time' })

  let modified: IndexedMember | undefined
  for (const index of [privateIndex, publicIndex]) {
    const member = index?.members.get('modified')
    if (index !== undefined && member !== undefined && modified === undefined) modified = { index, member }
  }
  modified ??= modifiedTime

  const counts: MergeCounts = { keptPrivate, keptPublic, withheld, superseded, unservable, dropped: droppedCount }
  const prefixToken = JSON.stringify(rewriter.prefix)
  return {
    packageName,
    tarballPrefix: new TextEncoder().encode(prefixToken.slice(0, -1)),
    topLevel,
    versions,
    distTags,
    time,
    modified,
    counts,
    selected,
    observations,
    dropped,
    advisoryAnswered: [...answered],
    withholding: versions.length === 0 ? withholdingOf(refusals, unservable + droppedCount) : undefined,
    regateAt,
  }
}
