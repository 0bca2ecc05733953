/**
 * The lookups of a compiled advisory artifact (byte format in
 * artifact-format.ts), read in place: it is checked once when opened
 * (artifact-validation.ts), then read through one ArtifactReader.
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
 * kept too (a packument asks for one package, version after version), and
 * from its second version on, the package's answers come from its table
 * (package-table.ts).
 */
import { ServiceError } from '../../errors.js'
import { reportsOf, NO_REPORTS } from './advisory-report.js'
import * as F from './artifact-format.js'
import { AFFECTED, ArtifactReader, FIX_BOUND, NO_MATCHES, type KeyComparison } from './artifact-reader.js'
import { asArtifactBytes, invalid, validateArtifact, type ArtifactHeader } from './artifact-validation.js'
import type { AdvisoryDatabase, AdvisoryMatch, AdvisoryMetadata, AdvisoryReport, Ecosystem } from './database.js'
import { packageKey } from './osv-record.js'
import { buildPackageTable, cellOf, type PackageTable } from './package-table.js'
import { KeyWriter, writeRawKey, writeVersionKey } from './version-key.js'

/**
 * Strings that version-key.ts's strict SemVer path encodes (three numbers of
 * at most 15 digits, dot-separated non-empty identifiers), a subset of what
 * it accepts: see QueryKey.write.
 */
const STRICT_SEMVER = /^\d{1,15}\.\d{1,15}\.\d{1,15}(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/

/** The queried version's key, compared with the stored keys byte by byte. */
class QueryKey implements KeyComparison {
  readonly #u8: Uint8Array
  readonly #ecosystem: Ecosystem
  readonly #key = new KeyWriter()
  /** The version whose key (or key prefix, see write) is in #key, and how much of #key counts. */
  #version: string | undefined
  #length = 0
  #complete = true

  constructor(u8: Uint8Array, ecosystem: Ecosystem) {
    this.#u8 = u8
    this.#ecosystem = ecosystem
  }

  /**
   * Puts the version's key in #key; false when the version does not parse
   * (then #key holds its raw-string key: it can only match an explicit list,
   * and remediates nothing).
   *
   * A strict SemVer string gets only the key of its MAJOR.MINOR.PATCH at
   * first: writing the whole key (a long pre-release above all, react's
   * `0.0.0-experimental-…`) is most of a lookup's cost, and most comparisons
   * are settled by the first three numbers. compareAt writes the whole key
   * the first time a comparison reaches past them. The prefix is exact:
   * STRICT_SEMVER accepts only strings that writeVersionKey's strict path
   * accepts, and that path starts the key with the three digit runs, each
   * written by KeyWriter.numberFrom (version-key.ts), as here.
   */
  write(version: string): boolean {
    this.#version = version
    const key = this.#key
    if (this.#ecosystem === 'js' && version.length <= 256) {
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
        this.#length = key.length
        this.#complete = false
        return true
      }
    }
    this.#complete = true
    const parsed = writeVersionKey(key, this.#ecosystem, version)
    if (!parsed) writeRawKey(key, version)
    this.#length = key.length
    return parsed
  }

  /** Writes the whole key of a version `write` left as a prefix. */
  #completeKey(): void {
    const version = this.#version as string
    if (!writeVersionKey(this.#key, this.#ecosystem, version)) {
      // Cannot happen while STRICT_SEMVER matches version-key.ts; fail as a lookup fault (the rules refuse), never answer from a wrong key.
      throw new ServiceError('INTERNAL', { message: `the version key of ${JSON.stringify(version)} disagrees with its strict SemVer prefix` })
    }
    this.#length = this.#key.length
    this.#complete = true
  }

  /** sign(query key - stored key at `at`, length `len`). */
  compareAt(at: number, len: number): number {
    const u8 = this.#u8
    for (;;) {
      const q = this.#key.bytes
      const qLen = this.#length
      const n = qLen < len ? qLen : len
      for (let i = 0; i < n; i++) {
        const d = (q[i] as number) - (u8[at + i] as number)
        if (d !== 0) return d
      }
      if (this.#complete) return qLen - len
      // The prefix ties: only the whole key can say.
      this.#completeKey()
    }
  }
}

class CompiledAdvisoryDatabase implements AdvisoryDatabase {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  readonly publishedAt: Date | undefined
  readonly #reader: ArtifactReader
  readonly #query: QueryKey
  readonly #encoder = new TextEncoder()
  #nameScratch = new Uint8Array(256)
  #lastName: string | undefined
  #lastPackage = -1
  /** The version #affecting and #remediating answer for (set only once both are complete). */
  #resolvedName: string | undefined
  #resolvedVersion: string | undefined
  #affecting: readonly AdvisoryMatch[] = NO_MATCHES
  #remediating: readonly AdvisoryMatch[] = NO_MATCHES
  /** The last package resolved, and the package #table answers for (-1: none). */
  #previousPackage = -1
  #tablePackage = -1
  #table: PackageTable | undefined
  /** Per package: 0 not read yet, 1 no malware record, 2 some (hasMalware), filled on first ask. */
  readonly #malware: Uint8Array

  constructor(u8: Uint8Array, header: ArtifactHeader, publishedAt: Date | undefined) {
    this.#reader = new ArtifactReader(u8, header)
    this.#malware = new Uint8Array(header.packageCount)
    this.#query = new QueryKey(u8, header.ecosystem)
    this.ecosystem = header.ecosystem
    this.metadata = header.metadata
    this.publishedAt = publishedAt
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
    let affecting: readonly AdvisoryMatch[] = NO_MATCHES
    let remediating: readonly AdvisoryMatch[] = NO_MATCHES
    const pkg = this.#findPackage(name)
    if (pkg >= 0) {
      // A second version of the package in a row: a packument is being gated, version after version.
      if (pkg !== this.#tablePackage && pkg === this.#previousPackage) {
        this.#table = buildPackageTable(this.#reader, pkg)
        this.#tablePackage = pkg
      }
      this.#previousPackage = pkg
      const query = this.#query
      const parsed = query.write(version)
      const table = pkg === this.#tablePackage ? this.#table : undefined
      if (parsed && table !== undefined) {
        const cell = cellOf(table, query)
        affecting = table.affecting[cell] as readonly AdvisoryMatch[]
        remediating = table.remediating[cell] as readonly AdvisoryMatch[]
      } else {
        const reader = this.#reader
        const entries = reader.entriesOf(pkg)
        const count = reader.entryCountOf(pkg)
        let hit: AdvisoryMatch[] | undefined
        let fix: AdvisoryMatch[] | undefined
        for (let e = 0; e < count; e++) {
          const entry = entries + e * F.ENTRY_SIZE
          const result = reader.evaluate(reader.u32(entry + 4), parsed, query)
          if ((result & AFFECTED) !== 0) (hit ??= []).push(reader.matchOf(reader.u32(entry)))
          else if (result === FIX_BOUND) (fix ??= []).push(reader.matchOf(reader.u32(entry)))
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

  hasMalware(name: string): boolean {
    const pkg = this.#findPackage(name)
    if (pkg < 0) return false
    let known = this.#malware[pkg] as number
    if (known === 0) {
      const reader = this.#reader
      const entries = reader.entriesOf(pkg)
      const count = reader.entryCountOf(pkg)
      known = 1
      for (let e = 0; e < count && known === 1; e++) if (reader.isMalwareRecord(reader.u32(entries + e * F.ENTRY_SIZE))) known = 2
      this.#malware[pkg] = known
    }
    return known === 2
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
    return hits.size === 0 ? NO_REPORTS : reportsOf(this.#reader, this.#findPackage(name), hits)
  }

  /** Binary search of the package index; the last name found is remembered (a packument asks per version). */
  #findPackage(name: string): number {
    if (name === this.#lastName) return this.#lastPackage
    const key = packageKey(this.ecosystem, name)
    if (this.#nameScratch.length < key.length * 3) this.#nameScratch = new Uint8Array(key.length * 3)
    const len = this.#encoder.encodeInto(key, this.#nameScratch).written
    const q = this.#nameScratch
    const reader = this.#reader
    const u8 = reader.u8
    const { packageIndex, packageCount } = reader.header
    let lo = 0
    let hi = packageCount - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const at = packageIndex + mid * F.PACKAGE_ENTRY_SIZE
      const ref = reader.u32(at)
      const n = reader.u32(at + 4)
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
}

/**
 * Opens an artifact from bytes (a Uint8Array or a SharedArrayBuffer holding
 * exactly the artifact), verifying its checksum and structure. The bytes are
 * read in place, not copied: the caller must not change them afterwards.
 * `publishedAt` is the store object's publication time (SPEC.md 2.9).
 */
export function loadAdvisoryArtifact(bytes: Uint8Array | SharedArrayBuffer, publishedAt?: Date): AdvisoryDatabase {
  const u8 = asArtifactBytes(bytes)
  return new CompiledAdvisoryDatabase(u8, validateArtifact(u8, true), publishedAt)
}

/**
 * Verifies an artifact and copies it, once, into a new SharedArrayBuffer to
 * post to workers. Throws ADVISORY_ARTIFACT_INVALID before copying anything.
 */
export function shareAdvisoryArtifact(bytes: Uint8Array): SharedArrayBuffer {
  validateArtifact(bytes, true)
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
  return new CompiledAdvisoryDatabase(u8, validateArtifact(u8, false), publishedAt)
}

/** The metadata recorded in an artifact's header, after full verification. */
export function readAdvisoryArtifactMetadata(bytes: Uint8Array | SharedArrayBuffer): AdvisoryMetadata {
  return validateArtifact(asArtifactBytes(bytes), true).metadata
}
