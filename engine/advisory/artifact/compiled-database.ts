/**
 * Reads the compiled advisory artifact (byte format in artifact-format.ts) in
 * place: the bytes are checked once when opened (magic, version, length,
 * checksum, and every offset and count walked against the bounds), so a
 * corrupt or truncated artifact is refused with ADVISORY_ARTIFACT_INVALID and
 * a lookup can never read outside the buffer.
 *
 * Sharing across worker threads (DESIGN.md): the proxy copies the artifact
 * once into a SharedArrayBuffer with `shareAdvisoryArtifact`, posts that SAB
 * to every worker, and each worker calls `openSharedAdvisoryArtifact`, which
 * reads the same memory without copying it.
 *
 * A lookup encodes the queried version once into a reusable key buffer and
 * compares bytes; it allocates only its result arrays, and each advisory's
 * AdvisoryMatch object is made once, on first use, and reused after. One
 * pass answers both `affecting` and `remediating` of a version, and the
 * answers are kept until another version is asked about (the rules ask
 * both, several times, of each version in turn); the package found last is
 * kept too (a packument asks for one package, version after version).
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../../errors.js'
import type { AdvisoryDatabase, AdvisoryMatch, AdvisoryMetadata, AdvisoryReport, AdvisorySeverity, Ecosystem } from './database.js'
import * as F from './artifact-format.js'
import { packageKey } from './osv-record.js'
import { KeyWriter, writeRawKey, writeVersionKey } from './version-key.js'

function invalid(reason: string): ServiceError {
  return new ServiceError('ADVISORY_ARTIFACT_INVALID', { message: `the advisory artifact is invalid: ${reason}`, data: { reason } })
}

interface Header {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  readonly packageIndex: number
  readonly packageCount: number
  readonly advisoryIndex: number
  readonly advisoryCount: number
  /** Ref of the details section (format 2), 0 when absent. */
  readonly details: number
}

const decoder = new TextDecoder('utf-8', { fatal: false })

function asBytes(input: Uint8Array | SharedArrayBuffer): Uint8Array {
  if (input instanceof Uint8Array) return input
  if (input instanceof SharedArrayBuffer) return new Uint8Array(input)
  throw invalid('not a byte array')
}

/** Walks the whole artifact against its bounds; throws ADVISORY_ARTIFACT_INVALID. */
function validate(u8: Uint8Array, checksum: boolean): Header {
  const total = u8.byteLength
  if (total < F.HEADER_SIZE) throw invalid('shorter than its header')
  for (let i = 0; i < F.MAGIC.length; i++) if (u8[i] !== F.MAGIC[i]) throw invalid('bad magic')
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength)
  const u32 = (at: number): number => view.getUint32(at, true)
  const version = u32(F.H_FORMAT_VERSION)
  if (!F.READABLE_FORMAT_VERSIONS.includes(version)) throw invalid(`unsupported format version ${version}`)
  if (u32(F.H_TOTAL_LENGTH) !== total) throw invalid('length does not match the header (truncated or padded)')
  if (checksum) {
    const digest = createHash('sha256').update(u8.subarray(F.CHECKSUM_FROM)).digest()
    for (let i = 0; i < 32; i++) if (digest[i] !== u8[F.H_CHECKSUM + i]) throw invalid('checksum mismatch')
  }
  const ecoCode = view.getUint8(F.H_ECOSYSTEM)
  const ecosystem: Ecosystem | undefined = ecoCode === F.ECOSYSTEM_CODES.js ? 'js' : ecoCode === F.ECOSYSTEM_CODES.py ? 'py' : undefined
  if (ecosystem === undefined) throw invalid('unknown ecosystem')
  const epssCode = view.getUint8(F.H_EPSS_STATUS)
  if (epssCode > 2) throw invalid('unknown epss_status')

  const within = (at: number, len: number, what: string): void => {
    if (!(at >= F.HEADER_SIZE && len >= 0 && at + len <= total)) throw invalid(`${what} out of bounds`)
  }
  const str = (at: number, what: string): string => {
    within(at, 4, what)
    const len = u32(at)
    within(at + 4, len, what)
    return decoder.decode(u8.subarray(at + 4, at + 4 + len))
  }
  const skipStr = (at: number, what: string): number => {
    within(at, 4, what)
    const len = u32(at)
    within(at + 4, len, what)
    return at + 4 + len
  }

  const packageCount = u32(F.H_PACKAGE_COUNT)
  const advisoryCount = u32(F.H_ADVISORY_COUNT)
  const packageIndex = u32(F.H_PACKAGE_INDEX)
  const advisoryIndex = u32(F.H_ADVISORY_INDEX)
  within(packageIndex, packageCount * F.PACKAGE_ENTRY_SIZE, 'package index')
  within(advisoryIndex, advisoryCount * 4, 'advisory index')
  const osvSource = str(u32(F.H_OSV_SOURCE), 'osv source')
  const osvSourceUrl = str(u32(F.H_OSV_SOURCE_URL), 'osv source url')

  for (let i = 0; i < advisoryCount; i++) {
    const ref = u32(advisoryIndex + i * 4)
    within(ref, 8, 'advisory record')
    let p = skipStr(ref + 8, 'advisory id')
    within(p, 4, 'cve count')
    const n = u32(p)
    p += 4
    if (n > (total - p) / 4) throw invalid('cve count out of bounds')
    for (let c = 0; c < n; c++) p = skipStr(p, 'cve id')
  }

  let previous: Uint8Array | undefined
  for (let i = 0; i < packageCount; i++) {
    const at = packageIndex + i * F.PACKAGE_ENTRY_SIZE
    const nameRef = u32(at)
    const nameLen = u32(at + 4)
    within(nameRef, nameLen, 'package name')
    const name = u8.subarray(nameRef, nameRef + nameLen)
    if (previous !== undefined && Buffer.compare(previous, name) >= 0) throw invalid('package index not sorted')
    previous = name
    const entries = u32(at + 8)
    const entryCount = u32(at + 12)
    if (entryCount > total / F.ENTRY_SIZE) throw invalid('entry count out of bounds')
    within(entries, entryCount * F.ENTRY_SIZE, 'package entries')
    for (let e = 0; e < entryCount; e++) {
      if (u32(entries + e * F.ENTRY_SIZE) >= advisoryCount) throw invalid('advisory number out of range')
      validateMatch(u32(entries + e * F.ENTRY_SIZE + 4))
    }
  }

  function validateMatch(ref: number): void {
    within(ref, 4, 'match')
    const ranges = u32(ref)
    let p = ref + 4
    if (ranges > (total - p) / 4) throw invalid('range count out of bounds')
    for (let r = 0; r < ranges; r++) {
      within(p, 4, 'range')
      const events = u32(p)
      p += 4
      if (events > (total - p) / 4) throw invalid('event count out of bounds')
      for (let e = 0; e < events; e++) {
        within(p, 4, 'event')
        const kind = view.getUint8(p)
        const flags = view.getUint8(p + 1)
        const keyLen = view.getUint16(p + 2, true)
        if (kind < F.EVENT_INTRODUCED || kind > F.EVENT_LIMIT) throw invalid('unknown event kind')
        if ((flags & F.FLAG_UNBOUNDED) !== 0 ? keyLen !== 0 : keyLen === 0) throw invalid('event key length')
        within(p + 4, keyLen, 'event key')
        p += 4 + keyLen
      }
    }
    within(p, 4, 'version count')
    const versions = u32(p)
    p += 4
    if (versions > (total - p) / 4) throw invalid('version count out of bounds')
    within(p, versions * 4, 'version keys')
    for (let v = 0; v < versions; v++) {
      const k = u32(p + v * 4)
      within(k, 2, 'version key')
      within(k + 2, view.getUint16(k, true), 'version key')
    }
  }

  // Format 2: the optional details section, walked like the rest.
  const details = version >= 2 ? u32(F.H_DETAILS) : 0
  if (details !== 0) {
    within(details, 4, 'details section')
    if (u32(details) !== advisoryCount) throw invalid('details count does not match the advisory count')
    within(details + 4, advisoryCount * 4 + 4, 'details index')
    for (let i = 0; i < advisoryCount; i++) {
      let p = skipStr(u32(details + 4 + i * 4), 'advisory title')
      p = skipStr(p, 'advisory url')
      within(p, 12, 'advisory severity and score')
      if (view.getUint8(p) > F.SEVERITY_CODES.critical) throw invalid('unknown severity')
      p = skipStr(p + 12, 'cvss vector')
      within(p, 4, 'cwe count')
      const n = u32(p)
      p += 4
      if (n > (total - p) / 4) throw invalid('cwe count out of bounds')
      for (let c = 0; c < n; c++) p = skipStr(p, 'cwe id')
    }
    const ranges = details + 4 + advisoryCount * 4
    if (u32(ranges) !== packageCount) throw invalid('range text count does not match the package count')
    within(ranges + 4, packageCount * 4, 'range text index')
    for (let i = 0; i < packageCount; i++) {
      const entryCount = u32(packageIndex + i * F.PACKAGE_ENTRY_SIZE + 12)
      const ref = u32(ranges + 4 + i * 4)
      within(ref, entryCount * 4, 'range texts')
      for (let e = 0; e < entryCount; e++) skipStr(u32(ref + e * 4), 'range text')
    }
  }

  const date = (at: number): Date | undefined => {
    const ms = view.getFloat64(at, true)
    return Number.isFinite(ms) ? new Date(ms) : undefined
  }
  const compiledAt = date(F.H_COMPILED_AT)
  if (compiledAt === undefined) throw invalid('compilation time missing')
  const metadata: AdvisoryMetadata = Object.freeze({
    ecosystem,
    osvSource,
    osvSourceUrl,
    compiledAt,
    newestAdvisoryAt: date(F.H_NEWEST_ADVISORY_AT),
    epssScoreDate: date(F.H_EPSS_SCORE_DATE),
    epssStatus: epssCode === F.EPSS_STATUS_CODES.available ? 'available' : epssCode === F.EPSS_STATUS_CODES.unavailable ? 'unavailable' : undefined,
    rowCount: u32(F.H_ROW_COUNT),
  })
  return { ecosystem, metadata, packageIndex, packageCount, advisoryIndex, advisoryCount, details }
}

/**
 * Strings that version-key.ts's strict SemVer path encodes (three numbers of
 * at most 15 digits, dot-separated non-empty identifiers), a subset of what
 * it accepts: see #writeQueryKey.
 */
const STRICT_SEMVER = /^\d{1,15}\.\d{1,15}\.\d{1,15}(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/

/**
 * Both answers for every version of one package, precomputed once a
 * packument is being gated (a second version of one package in a row).
 * Every answer depends only on how the version's key compares with each
 * stored key of the package, so it is the same for all versions in one cell:
 * equal to one stored key (cell 2i+1), or strictly between two neighbours
 * (cell 2i, below key i). A lookup is then one binary search over the
 * package's distinct keys instead of a walk of every range, and answers with
 * shared frozen arrays.
 */
interface PackageTable {
  /** Offsets and lengths of the package's distinct stored keys, ascending. */
  readonly keyAt: Uint32Array
  readonly keyLength: Uint32Array
  readonly affecting: readonly (readonly AdvisoryMatch[])[]
  readonly remediating: readonly (readonly AdvisoryMatch[])[]
}

const NONE: readonly AdvisoryMatch[] = Object.freeze([])
const NO_REPORTS: readonly AdvisoryReport[] = Object.freeze([])
/** By severity code (artifact-format.ts SEVERITY_CODES); 0 is not recorded. */
const SEVERITIES: readonly (AdvisorySeverity | undefined)[] = [undefined, 'low', 'moderate', 'high', 'critical']

/** Cells x entries a table may hold; a larger package is evaluated entry by entry. */
const TABLE_WORK_LIMIT = 250_000

/** `list` frozen, or `previous` when it holds the same advisories (so neighbouring cells share one array). */
function sharedList(list: AdvisoryMatch[], previous: readonly AdvisoryMatch[] | undefined): readonly AdvisoryMatch[] {
  if (list.length === 0) return NONE
  if (previous !== undefined && previous.length === list.length && list.every((m, i) => previous[i] === m)) return previous
  return Object.freeze(list)
}

const AFFECTED = 1
const FIX_BOUND = 2

class CompiledAdvisoryDatabase implements AdvisoryDatabase {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  readonly publishedAt: Date | undefined
  readonly #u8: Uint8Array
  readonly #view: DataView
  readonly #header: Header
  readonly #key = new KeyWriter()
  readonly #encoder = new TextEncoder()
  #nameScratch = new Uint8Array(256)
  readonly #matches: Array<AdvisoryMatch | undefined>
  #lastName: string | undefined
  #lastPackage = -1
  /** The version #affecting and #remediating answer for (set only once both are complete). */
  #resolvedName: string | undefined
  #resolvedVersion: string | undefined
  #affecting: readonly AdvisoryMatch[] = NONE
  #remediating: readonly AdvisoryMatch[] = NONE
  /** The version whose key (or key prefix, see #writeQueryKey) is in #key, and how much of #key counts. */
  #queryVersion: string | undefined
  /** The last package resolved, and the package #table answers for (-1: none). */
  #previousPackage = -1
  #tablePackage = -1
  #table: PackageTable | undefined
  /** While #buildTable works: the cell being worked out (-1 otherwise) and each stored key's rank. */
  #cell = -1
  #rankOf: Map<number, number> | undefined
  #queryLength = 0
  #queryComplete = true

  constructor(u8: Uint8Array, header: Header, publishedAt: Date | undefined) {
    this.#u8 = u8
    this.#view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength)
    this.#header = header
    this.ecosystem = header.ecosystem
    this.metadata = header.metadata
    this.publishedAt = publishedAt
    this.#matches = new Array<AdvisoryMatch | undefined>(header.advisoryCount)
  }

  affecting(name: string, version: string): readonly AdvisoryMatch[] {
    this.#resolve(name, version)
    return this.#affecting
  }

  remediating(name: string, version: string): readonly AdvisoryMatch[] {
    this.#resolve(name, version)
    return this.#remediating
  }

  /**
   * Works out both answers for one version and keeps them for the next call
   * (the rules ask `affecting` and `remediating` of one version in turn):
   * from the package's table once a packument is being gated (see
   * PackageTable), else in one pass over the package's entries (each Match
   * block evaluated once, giving AFFECTED and FIX_BOUND together).
   */
  #resolve(name: string, version: string): void {
    if (version === this.#resolvedVersion && name === this.#resolvedName) return
    this.#resolvedName = undefined
    this.#resolvedVersion = undefined
    let affecting: readonly AdvisoryMatch[] = NONE
    let remediating: readonly AdvisoryMatch[] = NONE
    const pkg = this.#findPackage(name)
    if (pkg >= 0) {
      // A second version of the package in a row: a packument is being gated, version after version.
      if (pkg !== this.#tablePackage && pkg === this.#previousPackage) {
        this.#table = this.#buildTable(pkg)
        this.#tablePackage = pkg
      }
      this.#previousPackage = pkg
      const parsed = this.#writeQueryKey(version)
      const table = pkg === this.#tablePackage ? this.#table : undefined
      if (parsed && table !== undefined) {
        const cell = this.#cellOf(table)
        affecting = table.affecting[cell] as readonly AdvisoryMatch[]
        remediating = table.remediating[cell] as readonly AdvisoryMatch[]
      } else {
        const at = this.#header.packageIndex + pkg * F.PACKAGE_ENTRY_SIZE
        const entries = this.#u32(at + 8)
        const count = this.#u32(at + 12)
        let hit: AdvisoryMatch[] | undefined
        let fix: AdvisoryMatch[] | undefined
        for (let e = 0; e < count; e++) {
          const entry = entries + e * F.ENTRY_SIZE
          const result = this.#evaluate(this.#u32(entry + 4), parsed)
          if ((result & AFFECTED) !== 0) (hit ??= []).push(this.#match(this.#u32(entry)))
          else if (result === FIX_BOUND) (fix ??= []).push(this.#match(this.#u32(entry)))
        }
        if (hit !== undefined) affecting = hit
        if (fix !== undefined) remediating = fix
      }
    }
    this.#affecting = affecting
    this.#remediating = remediating
    this.#resolvedName = name
    this.#resolvedVersion = version
  }

  report(name: string, versions: readonly string[]): readonly AdvisoryReport[] {
    const hits = new Map<string, string[]>()
    for (const version of versions) {
      for (const m of this.affecting(name, version)) {
        const list = hits.get(m.id)
        if (list === undefined) hits.set(m.id, [version])
        else if (!list.includes(version)) list.push(version)
      }
    }
    if (hits.size === 0) return NO_REPORTS
    const pkg = this.#findPackage(name)
    const at = this.#header.packageIndex + pkg * F.PACKAGE_ENTRY_SIZE
    const entries = this.#u32(at + 8)
    const count = this.#u32(at + 12)
    const out: AdvisoryReport[] = []
    for (let e = 0; e < count; e++) {
      const advisory = this.#u32(entries + e * F.ENTRY_SIZE)
      const match = this.#match(advisory)
      const affected = hits.get(match.id)
      if (affected === undefined) continue
      hits.delete(match.id)
      out.push({ id: match.id, cves: match.cves, ...this.#details(advisory), vulnerableVersions: this.#rangeText(pkg, e), affectedVersions: affected })
    }
    return out
  }

  /** An advisory's details (format 2), or nothing recorded. */
  #details(advisory: number): Pick<AdvisoryReport, 'title' | 'url' | 'severity' | 'cwe' | 'cvss'> {
    const section = this.#header.details
    if (section === 0) return { title: undefined, url: undefined, severity: undefined, cwe: [], cvss: undefined }
    let p = this.#u32(section + 4 + advisory * 4)
    const title = this.#str(p)
    p += 4 + this.#u32(p)
    const url = this.#str(p)
    p += 4 + this.#u32(p)
    const severity = SEVERITIES[this.#view.getUint8(p)]
    const score = this.#view.getFloat64(p + 4, true)
    p += 12
    const vector = this.#str(p)
    p += 4 + this.#u32(p)
    const n = this.#u32(p)
    p += 4
    const cwe: string[] = []
    for (let i = 0; i < n; i++) {
      cwe.push(this.#str(p))
      p += 4 + this.#u32(p)
    }
    return { title, url, severity, cwe, cvss: Number.isNaN(score) || vector === '' ? undefined : { score, vectorString: vector } }
  }

  /** The range text of entry `e` of package `pkg` (format 2), undefined when not recorded. */
  #rangeText(pkg: number, e: number): string | undefined {
    const section = this.#header.details
    if (section === 0) return undefined
    const ranges = section + 4 + this.#header.advisoryCount * 4
    const text = this.#str(this.#u32(this.#u32(ranges + 4 + pkg * 4) + e * 4))
    return text === '' ? undefined : text
  }

  #u32(at: number): number { return this.#view.getUint32(at, true) }

  /** Binary search of the package index; the last name found is remembered (a packument asks per version). */
  #findPackage(name: string): number {
    if (name === this.#lastName) return this.#lastPackage
    const key = packageKey(this.ecosystem, name)
    if (this.#nameScratch.length < key.length * 3) this.#nameScratch = new Uint8Array(key.length * 3)
    const len = this.#encoder.encodeInto(key, this.#nameScratch).written
    const q = this.#nameScratch
    const u8 = this.#u8
    let lo = 0
    let hi = this.#header.packageCount - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const at = this.#header.packageIndex + mid * F.PACKAGE_ENTRY_SIZE
      const ref = this.#u32(at)
      const n = this.#u32(at + 4)
      let c = 0
      const m = n < len ? n : len
      for (let i = 0; i < m && c === 0; i++) c = (u8[ref + i] as number) - (q[i] as number)
      if (c === 0) c = n - len
      if (c === 0) { found = mid; break }
      if (c < 0) lo = mid + 1
      else hi = mid - 1
    }
    this.#lastName = name
    this.#lastPackage = found
    return found
  }

  /**
   * Puts the queried version's key in #key; false when the version does not
   * parse (then #key holds its raw-string key: it can only match an explicit
   * list, and remediates nothing).
   *
   * A strict SemVer string gets only the key of its MAJOR.MINOR.PATCH at
   * first: writing the whole key (a long pre-release above all, react's
   * `0.0.0-experimental-…`) is most of a lookup's cost, and most comparisons
   * are settled by the first three numbers. #compareQuery writes the whole
   * key the first time a comparison reaches past them. The prefix is exact: STRICT_SEMVER accepts only
   * strings that writeVersionKey's strict path accepts, and that path starts
   * the key with the three digit runs, each written by KeyWriter.numberFrom
   * (version-key.ts), as here.
   */
  #writeQueryKey(version: string): boolean {
    this.#queryVersion = version
    const key = this.#key
    if (this.ecosystem === 'js' && version.length <= 256) {
      let end = 0
      while (end < version.length) {
        const c = version.charCodeAt(end)
        if (c === 0x2d || c === 0x2b) break
        end++
      }
      if (STRICT_SEMVER.test(version)) {
        // The three numbers as the strict path writes them (each digit run, leading zeros dropped), without what follows.
        const minor = version.indexOf('.')
        const patch = version.indexOf('.', minor + 1)
        key.reset()
        key.numberFrom(version, 0, minor)
        key.numberFrom(version, minor + 1, patch)
        key.numberFrom(version, patch + 1, end)
        this.#queryLength = key.length
        this.#queryComplete = false
        return true
      }
    }
    this.#queryComplete = true
    const parsed = writeVersionKey(key, this.ecosystem, version)
    if (!parsed) writeRawKey(key, version)
    this.#queryLength = key.length
    return parsed
  }

  /** Writes the whole key of a version #writeQueryKey left as a prefix. */
  #completeQueryKey(): void {
    const version = this.#queryVersion as string
    if (!writeVersionKey(this.#key, this.ecosystem, version)) {
      // Cannot happen while STRICT_SEMVER matches version-key.ts; fail as a lookup fault (the rules refuse), never answer from a wrong key.
      throw new ServiceError('INTERNAL', { message: `the version key of ${JSON.stringify(version)} disagrees with its strict SemVer prefix` })
    }
    this.#queryLength = this.#key.length
    this.#queryComplete = true
  }

  /** sign(query key - stored key at `at`, length `len`). */
  #compareQuery(at: number, len: number): number {
    const u8 = this.#u8
    for (;;) {
      const q = this.#key.bytes
      const qLen = this.#queryLength
      const n = qLen < len ? qLen : len
      for (let i = 0; i < n; i++) {
        const d = (q[i] as number) - (u8[at + i] as number)
        if (d !== 0) return d
      }
      if (this.#queryComplete) return qLen - len
      // The prefix ties: only the whole key can say.
      this.#completeQueryKey()
    }
  }

  /** AFFECTED and/or FIX_BOUND for one Match block (osv-evaluate.ts semantics). */
  #evaluate(ref: number, parsed: boolean): number {
    const view = this.#view
    let p = ref
    const ranges = this.#u32(p)
    p += 4
    let result = 0
    for (let r = 0; r < ranges; r++) {
      const events = this.#u32(p)
      p += 4
      let vulnerable = false
      let hasLimit = false
      let beforeLimit = false
      let everyVersion = false
      let bounded = false
      for (let e = 0; e < events; e++) {
        const kind = view.getUint8(p)
        const flags = view.getUint8(p + 1)
        const keyLen = view.getUint16(p + 2, true)
        const unbounded = (flags & F.FLAG_UNBOUNDED) !== 0
        if (parsed) {
          // introduced "0" is below every version, limit "*" above every version.
          const c = unbounded ? (kind === F.EVENT_INTRODUCED ? 1 : -1) : this.#compareAt(p + 4, keyLen)
          if (kind === F.EVENT_INTRODUCED) { if (c >= 0) vulnerable = true }
          else if (kind === F.EVENT_FIXED) {
            if (c >= 0) vulnerable = false
            if (c === 0 && (flags & F.FLAG_REMEDIATES) !== 0) result |= FIX_BOUND
          } else if (kind === F.EVENT_LAST_AFFECTED) { if (c > 0) vulnerable = false }
          else { hasLimit = true; if (c < 0) beforeLimit = true }
        } else if (unbounded) {
          if (kind === F.EVENT_INTRODUCED) everyVersion = true
        } else {
          bounded = true
        }
        p += 4 + keyLen
      }
      if (parsed ? vulnerable && (!hasLimit || beforeLimit) : everyVersion && !bounded) result |= AFFECTED
    }
    const versions = this.#u32(p)
    p += 4
    if ((result & AFFECTED) === 0 && versions > 0) {
      let lo = 0
      let hi = versions - 1
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1
        const k = this.#u32(p + mid * 4)
        const c = this.#compareAt(k + 2, view.getUint16(k, true))
        if (c === 0) { result |= AFFECTED; break }
        if (c > 0) lo = mid + 1
        else hi = mid - 1
      }
    }
    return result
  }

  /**
   * The answer table of one package (see PackageTable): every stored key of
   * its entries (range events and listed versions), sorted and deduplicated,
   * and both answers for each cell, worked out by #evaluate with the query's
   * comparisons taken from the cell's position instead of from a key. The
   * answers are frozen and a cell that answers as its neighbour shares its
   * arrays. Undefined when the package is too large to be worth it (the
   * lookups then evaluate entry by entry).
   */
  #buildTable(pkg: number): PackageTable | undefined {
    const view = this.#view
    const at = this.#header.packageIndex + pkg * F.PACKAGE_ENTRY_SIZE
    const entries = this.#u32(at + 8)
    const count = this.#u32(at + 12)
    const offsets: number[] = []
    const lengths: number[] = []
    /** The entry each collected key belongs to. */
    const owners: number[] = []
    for (let e = 0; e < count; e++) {
      let p = this.#u32(entries + e * F.ENTRY_SIZE + 4)
      const ranges = this.#u32(p)
      p += 4
      for (let r = 0; r < ranges; r++) {
        const events = this.#u32(p)
        p += 4
        for (let v = 0; v < events; v++) {
          const keyLen = view.getUint16(p + 2, true)
          if ((view.getUint8(p + 1) & F.FLAG_UNBOUNDED) === 0) {
            offsets.push(p + 4)
            lengths.push(keyLen)
            owners.push(e)
          }
          p += 4 + keyLen
        }
      }
      const versions = this.#u32(p)
      p += 4
      for (let v = 0; v < versions; v++) {
        const k = this.#u32(p + v * 4)
        offsets.push(k + 2)
        lengths.push(view.getUint16(k, true))
        owners.push(e)
      }
    }
    if ((2 * offsets.length + 1) * count > TABLE_WORK_LIMIT) return undefined
    const u8 = this.#u8
    const compareStored = (a: number, b: number): number => {
      const atA = offsets[a] as number
      const atB = offsets[b] as number
      const lenA = lengths[a] as number
      const lenB = lengths[b] as number
      const n = lenA < lenB ? lenA : lenB
      for (let i = 0; i < n; i++) {
        const d = (u8[atA + i] as number) - (u8[atB + i] as number)
        if (d !== 0) return d
      }
      return lenA - lenB
    }
    const order = offsets.map((_, i) => i).sort(compareStored)
    const keyAt: number[] = []
    const keyLength: number[] = []
    const rankOf = new Map<number, number>()
    for (let i = 0; i < order.length; i++) {
      const o = order[i] as number
      if (i === 0 || compareStored(order[i - 1] as number, o) !== 0) {
        keyAt.push(offsets[o] as number)
        keyLength.push(lengths[o] as number)
      }
      rankOf.set(offsets[o] as number, keyAt.length - 1)
    }
    const cells = 2 * keyAt.length + 1
    // An entry's answer changes only at its own keys: it is the same in every
    // cell from one of its breakpoints (below everything; equal to one of its
    // keys; just above one) to the next, so each entry is evaluated at its
    // breakpoints alone and the answer carried forward.
    const breakpoints: number[][] = Array.from({ length: count }, () => [0])
    for (let i = 0; i < offsets.length; i++) {
      const rank = rankOf.get(offsets[i] as number) as number
      ;(breakpoints[owners[i] as number] as number[]).push(2 * rank + 1, 2 * rank + 2)
    }
    const results = new Uint8Array(cells * count)
    this.#rankOf = rankOf
    try {
      for (let e = 0; e < count; e++) {
        const points = [...new Set(breakpoints[e])].sort((a, b) => a - b)
        const ref = this.#u32(entries + e * F.ENTRY_SIZE + 4)
        let next = 0
        let result = 0
        for (let cell = 0; cell < cells; cell++) {
          if (points[next] === cell) {
            this.#cell = cell
            result = this.#evaluate(ref, true)
            next++
          }
          results[cell * count + e] = result
        }
      }
    } finally {
      this.#cell = -1
      this.#rankOf = undefined
    }
    const affecting: (readonly AdvisoryMatch[])[] = []
    const remediating: (readonly AdvisoryMatch[])[] = []
    for (let cell = 0; cell < cells; cell++) {
      const hit: AdvisoryMatch[] = []
      const fix: AdvisoryMatch[] = []
      for (let e = 0; e < count; e++) {
        const result = results[cell * count + e] as number
        if ((result & AFFECTED) !== 0) hit.push(this.#match(this.#u32(entries + e * F.ENTRY_SIZE)))
        else if (result === FIX_BOUND) fix.push(this.#match(this.#u32(entries + e * F.ENTRY_SIZE)))
      }
      affecting.push(sharedList(hit, affecting[cell - 1]))
      remediating.push(sharedList(fix, remediating[cell - 1]))
    }
    return { keyAt: Uint32Array.from(keyAt), keyLength: Uint32Array.from(keyLength), affecting, remediating }
  }

  /** The cell of the query key (#key) among the table's keys: 2i+1 when it equals key i, 2i when it falls below key i and above key i-1. */
  #cellOf(table: PackageTable): number {
    const keyAt = table.keyAt
    const keyLength = table.keyLength
    let lo = 0
    let hi = keyAt.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const c = this.#compareQuery(keyAt[mid] as number, keyLength[mid] as number)
      if (c === 0) return 2 * mid + 1
      if (c > 0) lo = mid + 1
      else hi = mid - 1
    }
    return 2 * lo
  }

  /**
   * sign(query - stored key at `at`) for #evaluate: from the query's key, or,
   * while #buildTable works out a cell, from the cell's position against the
   * stored key's rank.
   */
  #compareAt(at: number, len: number): number {
    const cell = this.#cell
    if (cell < 0) return this.#compareQuery(at, len)
    const rank = this.#rankOf?.get(at)
    if (rank === undefined) throw new ServiceError('INTERNAL', { message: 'a stored key is missing from its package table' })
    if ((cell & 1) === 1) return ((cell - 1) >> 1) - rank
    return rank < cell >> 1 ? 1 : -1
  }

  #match(advisory: number): AdvisoryMatch {
    const cached = this.#matches[advisory]
    if (cached !== undefined) return cached
    let p = this.#u32(this.#header.advisoryIndex + advisory * 4)
    const epss = this.#view.getFloat64(p, true)
    p += 8
    const id = this.#str(p)
    p += 4 + this.#u32(p)
    const n = this.#u32(p)
    p += 4
    const cves: string[] = []
    for (let i = 0; i < n; i++) {
      cves.push(this.#str(p))
      p += 4 + this.#u32(p)
    }
    const match: AdvisoryMatch = Object.freeze({ id, cves: Object.freeze(cves), epss: Number.isNaN(epss) ? undefined : epss })
    this.#matches[advisory] = match
    return match
  }

  #str(at: number): string {
    const len = this.#u32(at)
    return decoder.decode(this.#u8.subarray(at + 4, at + 4 + len))
  }
}

/**
 * Opens an artifact from bytes (a Uint8Array or a SharedArrayBuffer holding
 * exactly the artifact), verifying its checksum and structure. The bytes are
 * read in place, not copied: the caller must not change them afterwards.
 * `publishedAt` is the store object's publication time (SPEC.md 2.9).
 */
export function loadAdvisoryArtifact(bytes: Uint8Array | SharedArrayBuffer, publishedAt?: Date): AdvisoryDatabase {
  const u8 = asBytes(bytes)
  return new CompiledAdvisoryDatabase(u8, validate(u8, true), publishedAt)
}

/**
 * Verifies an artifact and copies it, once, into a new SharedArrayBuffer to
 * post to workers. Throws ADVISORY_ARTIFACT_INVALID before copying anything.
 */
export function shareAdvisoryArtifact(bytes: Uint8Array): SharedArrayBuffer {
  validate(bytes, true)
  const shared = new SharedArrayBuffer(bytes.byteLength)
  new Uint8Array(shared).set(bytes)
  return shared
}

/**
 * Opens, without copying, an artifact that `shareAdvisoryArtifact` placed in
 * a SharedArrayBuffer (typically in another worker). The checksum was
 * verified when it was shared; the structure is walked again so that no
 * lookup can read out of bounds whatever the buffer holds.
 */
export function openSharedAdvisoryArtifact(shared: SharedArrayBuffer, publishedAt?: Date): AdvisoryDatabase {
  if (!(shared instanceof SharedArrayBuffer)) throw invalid('not a SharedArrayBuffer')
  const u8 = new Uint8Array(shared)
  return new CompiledAdvisoryDatabase(u8, validate(u8, false), publishedAt)
}

/** The metadata recorded in an artifact's header, after full verification. */
export function readAdvisoryArtifactMetadata(bytes: Uint8Array | SharedArrayBuffer): AdvisoryMetadata {
  return validate(asBytes(bytes), true).metadata
}
