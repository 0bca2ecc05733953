/**
 * Merge and gate (SPEC.md 1.2, 2.1-2.3, 4.2): decides which versions of the
 * private and public documents survive, and what the synthesized packument is
 * made of, without copying a byte. render.ts writes the plan out.
 *
 * - Private versions are trusted: every one is kept, never gated, except a
 *   version a malware record names when the mount has DenyIfMalicious
 *   (Decide.privateVerdict): it is withheld, and its public copy with it.
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
 *
 * planMerge runs these as phases over one MergeState, in order: keep the
 * private versions, gate the public ones, withhold shared file names, then
 * read the survivors into `time`, the top level and the dist-tags.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { ServiceError } from '../errors.js'
import { earliestStep, listingRegateAt, type GateClock } from '../listing/regate-at.js'
import { withholdingOf, type VersionObservation, type Withholding } from '../listing/withholding.js'
import { canonicalVersion } from '../npm/canonical-version.js'
import { withheldNotice } from './withheld-notice.js'
import { readsHistory, type Decision, type FactNeeds, type HistoryFacts, type RuleKind, type VersionFacts } from '../policy/decision.js'
import { newestSurvivingVersion, newestVersionIndex } from './latest.js'
import { LazyVersionFacts } from './lazy-version-facts.js'
import { memberString, NOT_A_STRING, type Member, type PackumentIndex, type VersionEntry } from './packument-index.js'
import { decodeFilename, TarballRewriter, tarballSegmentRange } from './tarball-url.js'
import { VersionHistory } from './version-history.js'
import { SIGNAL_REASONS } from '../policy/signal-withholdings.js'

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
  readonly clock?: GateClock
  /**
   * The sentence a refusal carries (engine/policy/explain.ts, with the
   * mount's rules), for what the answer says about a withheld version;
   * absent: a shorter one naming the rule and the reason.
   */
  readonly explain?: (decision: Decision, facts: VersionFacts) => string
  /**
   * The private side's one judgement (engine/policy/private-malware-gate.ts):
   * the refusal of a private version a malware record names, else
   * undefined; absent: every private version is kept, as before.
   */
  readonly privateVerdict?: ((name: string, version: string) => Decision | undefined) | undefined
  /**
   * True when the mount's advisory database names an advisory affecting the
   * version (what the bulk audit answer reports of it). The audit view lists
   * only such withheld versions: npm picks a fix from the listed versions
   * outside the reported ranges, so a withheld version no advisory affects
   * would be picked as the fix and refused at install (issue 32 item 1).
   * Absent (no database): every withheld version is listed.
   */
  readonly affected?: ((name: string, version: string) => boolean) | undefined
}

export interface MergeInput {
  readonly packageName: string
  /** `{base_url}`: the proxy's externally reachable base address. */
  readonly baseUrl: string
  readonly privateIndex?: PackumentIndex | undefined
  readonly publicIndex?: PackumentIndex | undefined
  readonly decide: Decide
  readonly ecosystem?: Ecosystem
  /**
   * The npm audit view (render-variant.ts): list the public versions the
   * gate withheld, each marked `deprecated` with why, instead of leaving
   * them out. Nothing about them changes elsewhere: `dist-tags`, the counts
   * and the artifact route's refusal stay as in the install view.
   */
  readonly listWithheld?: boolean
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
  /** The process's sequence number of the render that retained the record (packument-service.ts `publicSourced`); absent from a render's own output. */
  readonly render?: number | undefined
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
  /** Set on a withheld version listed by the audit view: the text of the `deprecated` member render adds. */
  readonly withheldNote?: string
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
  /**
   * The `npm-notice` line of an answer from which the gate withheld
   * versions (engine/packument/withheld-notice.ts); undefined when none was, or
   * none survived (the 403 explains itself).
   */
  readonly notice?: string | undefined
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

/** An upstream tarball URL and where its file name segment lies in it. */
interface Tarball {
  readonly url: string
  readonly from: number
  readonly to: number
}

function selectedRecord(version: string, tarball: Tarball, index: PackumentIndex, entry: VersionEntry, facts: LazyVersionFacts, now: number | undefined): SelectedVersion {
  return {
    version,
    filename: decodeFilename(tarball.url.slice(tarball.from, tarball.to)),
    tarball: tarball.url,
    integrity: decodeSlice(index, entry.integrityStart, entry.integrityEnd, entry.integrityPlain),
    shasum: decodeSlice(index, entry.shasumStart, entry.shasumEnd, entry.shasumPlain),
    publishedAt: facts.publishedMs,
    // Always present (undefined when no rule reads history): one record shape on the hot path.
    history: facts.historyFacts(now),
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

/**
 * What the merge's phases build up, in the order they run (planMerge): the
 * private versions kept, the public versions gated, the file names that
 * withhold more; the dist-tags, `time` and top level then read it.
 */
class MergeState {
  readonly packageName: string
  readonly privateIndex: PackumentIndex | undefined
  readonly publicIndex: PackumentIndex | undefined
  readonly rewriter: TarballRewriter
  readonly listWithheld: boolean
  readonly #affected: Decide['affected']
  /** Kept versions (and, in the audit view, listed withheld ones), private first, in document order. */
  versions: PlannedVersion[] = []
  /** Each kept version's document. */
  readonly survivors = new Map<string, PackumentIndex>()
  /** The versions the private side names as npm's picker reads its keys: a private `v1.0.0` names 1.0.0 too. */
  readonly privateVersions = new Set<string>()
  selected: SelectedVersion[] = []
  /** Per record of `selected`: the gate admitted its version. */
  readonly selectedAdmitted: boolean[] = []
  /** The file names of the refused records of `selected`, and their fileTag. */
  readonly refusedFiles = new Set<string>()
  readonly refusedTags = new Set<number>()
  readonly observations: VersionObservation[] = []
  readonly refusals: Decision[] = []
  /** Per entry of `refusals`: the version and its facts, for the notice of the newest (withheldNoticeOf). */
  readonly refusedVersions: string[] = []
  readonly refusedFacts: VersionFacts[] = []
  readonly answered = new Set<RuleKind>()
  readonly dropped: DroppedVersion[] = []
  keptPrivate = 0
  keptPublic = 0
  withheld = 0
  superseded = 0
  unservable = 0
  droppedCount = 0
  regateAt: number | undefined = undefined

  constructor(input: MergeInput) {
    this.packageName = input.packageName
    this.privateIndex = input.privateIndex
    this.publicIndex = input.publicIndex
    this.rewriter = new TarballRewriter(input.baseUrl, input.packageName)
    this.listWithheld = input.listWithheld === true
    this.#affected = input.decide.affected
  }

  /** The audit view lists this withheld version (Decide.affected says which). */
  listsWithheld(version: string): boolean {
    return this.listWithheld && (this.#affected === undefined || this.#affected(this.packageName, version))
  }

  drop(version: string, reason: DropReason): void {
    this.droppedCount++
    if (this.dropped.length < MAX_DROPPED_LISTED) this.dropped.push({ version, reason })
  }

  /** Keeps a version in the answer, its tarball URL (when it has one) rewritten to the proxy. */
  keep(version: string, index: PackumentIndex, entry: VersionEntry, tarball: Tarball | undefined): void {
    this.versions.push(this.#planned(version, index, entry, tarball))
    this.survivors.set(version, index)
  }

  /** Lists a withheld version in the audit view: in `versions` and `time`, marked, never a survivor (dist-tags). */
  list(version: string, index: PackumentIndex, entry: VersionEntry, tarball: Tarball, note: string): void {
    this.versions.push({ ...this.#planned(version, index, entry, tarball), withheldNote: note })
  }

  #planned(version: string, index: PackumentIndex, entry: VersionEntry, tarball: Tarball | undefined): PlannedVersion {
    if (tarball === undefined) return { version, index, entry, segmentStart: -1, segmentEnd: -1, tarballToken: undefined }
    // Plain and as long as its bytes: ASCII without escapes, so string offsets are byte offsets.
    if (entry.tarballPlain && tarball.url.length === entry.tarballEnd - entry.tarballStart - 2) {
      const at = entry.tarballStart + 1
      return { version, index, entry, segmentStart: at + tarball.from, segmentEnd: at + tarball.to, tarballToken: undefined }
    }
    const token = JSON.stringify(this.rewriter.url(tarball.url.slice(tarball.from, tarball.to)))
    return { version, index, entry, segmentStart: -1, segmentEnd: -1, tarballToken: token }
  }

  /** The pieces of a merged document that two documents offer in turn: the private side's first. */
  get documents(): readonly PackumentIndex[] {
    const both: PackumentIndex[] = []
    if (this.privateIndex !== undefined) both.push(this.privateIndex)
    if (this.publicIndex !== undefined) both.push(this.publicIndex)
    return both
  }
}

function tarballOf(index: PackumentIndex, entry: VersionEntry): Tarball | undefined {
  const url = decodeSlice(index, entry.tarballStart, entry.tarballEnd, entry.tarballPlain)
  if (url === undefined) return undefined
  const range = tarballSegmentRange(url)
  return range === undefined ? undefined : { url, from: range[0], to: range[1] }
}

/**
 * Phase 1: every private version is kept, never gated, but one a malware
 * record names (privateVerdict): that one is withheld, and stays in
 * `privateVersions`, so its public copy is not listed either (the artifact
 * route's private leg refuses its file with the same refusal).
 */
function keepPrivateVersions(state: MergeState, decide: Decide, ecosystem: Ecosystem): void {
  const index = state.privateIndex
  if (index === undefined) return
  const judge = decide.privateVerdict
  for (const [version, entry] of index.versions) {
    const canonical = canonicalVersion(version) ?? version
    state.privateVersions.add(canonical)
    const refusal = judge?.(state.packageName, canonical)
    if (refusal !== undefined) {
      state.withheld++
      state.refusals.push(refusal)
      state.refusedVersions.push(version)
      state.refusedFacts.push({ ecosystem, name: state.packageName, version: canonical, publishedAt: undefined })
      state.observations.push({ version, decision: refusal, private: true })
      continue
    }
    state.keep(version, index, entry, tarballOf(index, entry))
    state.keptPrivate++
  }
}

/**
 * Phase 2: each public version the private side lacks, dropped when npm
 * would read it as another version or its manifest disagrees with its key,
 * else gated through `decide`; kept when admitted with a tarball URL.
 */
function gatePublicVersions(state: MergeState, decide: Decide, ecosystem: Ecosystem): void {
  const { publicIndex, packageName, privateVersions } = state
  if (publicIndex === undefined) return
  const clock = decide.clock
  const commonNameAgrees = publicIndex.manifestName === packageName
  const steps = clock?.ageSteps(packageName) ?? []
  const needs = decide.needs
  const history = needs !== undefined && readsHistory(needs) ? new VersionHistory(publicIndex, needs) : undefined
  for (const [version, entry] of publicIndex.versions) {
    // Every rule judges the version the client would install: only a canonical key is gated at all.
    const canonical = canonicalVersion(version)
    if (canonical !== version) {
      state.drop(version, canonical === undefined ? 'unreadable_key' : 'alias_key')
      continue
    }
    if (privateVersions.has(version)) {
      // The private side has this version, under this key or an alias of it: its copy is the one a client must pick.
      state.superseded++
      continue
    }
    const disagreement = manifestDisagreement(publicIndex, entry, packageName, version, commonNameAgrees)
    if (disagreement !== undefined) {
      state.drop(version, disagreement)
      continue
    }
    const facts = new LazyVersionFacts(ecosystem, packageName, version, publicIndex, entry, history)
    const decision = decide(facts)
    if (steps.length > 0 && clock !== undefined) state.regateAt = earliestStep(state.regateAt, facts.publishedMs, steps, clock.now)
    observe(state, version, decision)
    const tarball = tarballOf(publicIndex, entry)
    if (decision.verdict !== 'admit') {
      state.withheld++
      state.refusals.push(decision)
      state.refusedVersions.push(version)
      state.refusedFacts.push(facts)
      // Still selectable by file name: the artifact route gates it again and refuses it with the right status.
      if (tarball !== undefined) {
        const record = selectedRecord(version, tarball, publicIndex, entry, facts, clock?.now)
        state.selected.push(record)
        state.selectedAdmitted.push(false)
        state.refusedFiles.add(record.filename)
        state.refusedTags.add(fileTag(record.filename))
        if (state.listsWithheld(version)) state.list(version, publicIndex, entry, tarball, withheldNote(decide, decision, facts))
      }
      continue
    }
    if (tarball === undefined) {
      // Admitted, but no URL the proxy could serve it from (SPEC.md 2.3: tarball is required).
      state.unservable++
      continue
    }
    state.keep(version, publicIndex, entry, tarball)
    state.selected.push(selectedRecord(version, tarball, publicIndex, entry, facts, clock?.now))
    state.selectedAdmitted.push(true)
    state.keptPublic++
  }
}

/** What the audit view says of a version withheld because a refused version has its tarball's file name. */
const SHARED_FILE_NOTE = 'withheld by policy: its tarball has the file name of a version the rules refused'

/** The `deprecated` text of a withheld version in the audit view: the refusal's own sentence. */
function withheldNote(decide: Decide, decision: Decision, facts: VersionFacts): string {
  if (decide.explain !== undefined) return `${WITHHELD_PREFIX}${decide.explain(decision, facts)}`
  const rule = decision.rule === undefined ? 'no rule admitted it' : `${decision.rule} (rule ${(decision.ruleIndex ?? 0) + 1})`
  return `${WITHHELD_PREFIX}${rule}, ${decision.reason}`
}

const WITHHELD_PREFIX = 'withheld by policy: '

/**
 * The notice of the newest refused version (semver precedence,
 * newestVersionIndex: not a semver parse per refused version, which cost
 * 12 ms of a 51 ms plan for typescript's 3,309 nightlies): one explanation
 * per render that withheld anything, none else.
 */
function withheldNoticeOf(state: MergeState, decide: Decide, baseUrl: string): string | undefined {
  if (state.withheld === 0 || state.versions.length === 0) return undefined
  const k = newestVersionIndex(state.refusedVersions) ?? state.refusedVersions.length - 1
  if (k < 0) return undefined
  const reason = withheldNote(decide, state.refusals[k]!, state.refusedFacts[k]!).slice(WITHHELD_PREFIX.length)
  return withheldNotice({ packageName: state.packageName, withheld: state.withheld, newest: state.refusedVersions[k]!, reason, baseUrl })
}

/** What of a decision the main thread must see: skipped checks, advisory rules that answered or could not, a waiver's admission. */
function observe(state: MergeState, version: string, decision: Decision): void {
  // A waiver's admission is reported too: the main thread logs and counts it (engine/policy/waiver-admissions.ts);
  // so are a malware refusal (engine/policy/malware-refusals.ts) and a signal's withholding (engine/policy/signal-withholdings.ts).
  let reported = decision.skipped.length > 0 || decision.waiver !== undefined || decision.reason === 'malware' || SIGNAL_REASONS.has(decision.reason)
  for (const observation of decision.advisory) {
    if (observation.cause === undefined) state.answered.add(observation.rule)
    else reported = true
  }
  if (reported) state.observations.push({ version, decision })
}

/**
 * Phase 3: one file name, one verdict. The artifact route finds a version by
 * its file name alone (a lockfile install reads no metadata), so an admitted
 * version whose tarball has the file name of a refused one would carry the
 * refused artifact past the gate: such a version is withheld too, and the
 * name stays the refused version's.
 */
function withholdSharedFileNames(state: MergeState): void {
  if (state.refusedFiles.size === 0) return
  const { selected, selectedAdmitted, refusedFiles, refusedTags } = state
  let shadowed: Set<string> | undefined
  for (let k = 0; k < selected.length; k++) {
    const filename = selected[k]!.filename
    if (selectedAdmitted[k] === true && refusedTags.has(fileTag(filename)) && refusedFiles.has(filename)) (shadowed ??= new Set()).add(selected[k]!.version)
  }
  if (shadowed === undefined) return
  const withheldToo = shadowed
  const publicIndex = state.publicIndex
  state.selected = selected.filter((record, k) => selectedAdmitted[k] !== true || !withheldToo.has(record.version))
  state.versions = state.versions.flatMap((v) => {
    if (v.index !== publicIndex || !withheldToo.has(v.version)) return [v]
    return state.listsWithheld(v.version) ? [{ ...v, withheldNote: SHARED_FILE_NOTE }] : []
  })
  for (const version of withheldToo) state.survivors.delete(version)
  state.keptPublic -= withheldToo.size
  state.withheld += withheldToo.size
}

/** Phase 4, dist-tags: the private side's tag wins; a tag survives only with its version; `latest` is repointed and first. */
function mergedDistTags(state: MergeState): Array<readonly [string, string]> {
  const tags = new Map<string, string>()
  for (const index of state.documents) {
    for (const [tag, member] of index.distTags) {
      if (tags.has(tag)) continue
      const version = memberString(index, member)
      if (version !== undefined && state.survivors.get(version) !== undefined) tags.set(tag, version)
    }
  }
  const latest = newestSurvivingVersion(state.survivors.keys())
  if (latest !== undefined) tags.set('latest', latest)
  const distTags = [...tags]
  // Keep `latest` first, as registries write it.
  distTags.sort((a, b) => (a[0] === 'latest' ? -1 : b[0] === 'latest' ? 1 : 0))
  return distTags
}

/** The `time` member `key` of the first document that has one (the private side wins). */
function timeMember(state: MergeState, key: string): IndexedMember | undefined {
  for (const index of state.documents) {
    const member = index.time.get(key)
    if (member !== undefined) return { index, member }
  }
  return undefined
}

/** Phase 5, time: created and modified (private wins), then each survivor's own entry. */
function mergedTime(state: MergeState, modified: IndexedMember | undefined): IndexedMember[] {
  const time: IndexedMember[] = []
  const created = timeMember(state, 'created')
  if (modified !== undefined) time.push(modified)
  if (created !== undefined) time.push(created)
  for (const planned of state.versions) {
    const member = planned.index.time.get(planned.version)
    if (member !== undefined) time.push({ index: planned.index, member })
  }
  return time
}

/** Phase 6, the top level: the base document's order, then what the other adds; a public document's PICKER_FIELDS never. */
function mergedTopLevel(state: MergeState, hasTime: boolean): TopLevelItem[] {
  const topLevel: TopLevelItem[] = []
  const placed = new Set<string>()
  for (const index of state.documents) {
    for (const [key, member] of index.members) {
      if (placed.has(key)) continue
      if (index === state.publicIndex && PICKER_FIELDS.has(key)) continue
      placed.add(key)
      if (SYNTHESIZED.has(key)) topLevel.push({ kind: key as 'name' | 'dist-tags' | 'versions' | 'time' })
      else topLevel.push({ kind: 'relay', index, member })
    }
  }
  for (const key of ['name', 'dist-tags', 'versions'] as const) {
    if (!placed.has(key)) topLevel.push({ kind: key })
  }
  if (!placed.has('time') && hasTime) topLevel.push({ kind: 'time' })
  return topLevel
}

/** The value the abbreviated form's top-level `modified` copies: a document's own `modified`, else `time.modified`. */
function modifiedMember(state: MergeState, timeModified: IndexedMember | undefined): IndexedMember | undefined {
  for (const index of state.documents) {
    const member = index.members.get('modified')
    if (member !== undefined) return { index, member }
  }
  return timeModified
}

export function planMerge(input: MergeInput): MergePlan {
  const { packageName, privateIndex, publicIndex, decide } = input
  checkName(privateIndex, packageName, 'private')
  checkName(publicIndex, packageName, 'public')
  const state = new MergeState(input)
  const clock = decide.clock
  // The push's expiry or a waiver's re-gates the answer (engine/listing/regate-at.ts); the versions' age steps follow.
  state.regateAt = listingRegateAt(clock, packageName)

  keepPrivateVersions(state, decide, input.ecosystem ?? 'js')
  gatePublicVersions(state, decide, input.ecosystem ?? 'js')
  withholdSharedFileNames(state)
  const timeModified = timeMember(state, 'modified')
  const time = mergedTime(state, timeModified)

  const { versions, unservable, droppedCount } = state
  const prefixToken = JSON.stringify(state.rewriter.prefix)
  return {
    packageName,
    tarballPrefix: new TextEncoder().encode(prefixToken.slice(0, -1)),
    topLevel: mergedTopLevel(state, time.length > 0),
    versions,
    distTags: mergedDistTags(state),
    time,
    modified: modifiedMember(state, timeModified),
    counts: { keptPrivate: state.keptPrivate, keptPublic: state.keptPublic, withheld: state.withheld, superseded: state.superseded, unservable, dropped: droppedCount },
    selected: state.selected,
    observations: state.observations,
    dropped: state.dropped,
    advisoryAnswered: [...state.answered],
    withholding: versions.length === 0 ? withholdingOf(state.refusals, unservable + droppedCount) : undefined,
    regateAt: state.regateAt,
    notice: withheldNoticeOf(state, decide, input.baseUrl),
  }
}
