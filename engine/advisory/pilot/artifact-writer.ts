/**
 * Builds the compiled advisory artifact (byte format in artifact-format.ts)
 * from OSV records, one at a time, keeping only what lookups need: per
 * package and advisory the pre-normalised range events and explicit version
 * keys, per advisory its id and CVE ids, and (format 2) the details npm's
 * audit answer shows (advisory-details.ts): title, url, severity, CWE, CVSS
 * and the affected versions per package as a semver range. Range semantics
 * are those of osv-evaluate.ts, which tests hold this against.
 */
import { createHash } from 'node:crypto'
import type { Ecosystem } from '../artifact/database.js'
import * as F from '../artifact/artifact-format.js'
import {
  cveIds, ecosystemMatches, isLiveRecord, isVersionRange, packageKey,
  type OsvRange, type OsvRecord,
} from '../artifact/osv-record.js'
import { compareBytes, KeyWriter, writeExactKey, writeVersionKey } from '../artifact/version-key.js'
import { advisoryDetailsOf, vulnerableRangeText, type AdvisoryDetails } from '../artifact/advisory-details.js'

interface EncodedEvent {
  readonly kind: number
  flags: number
  readonly key: Uint8Array
}

interface PackageAdvisory {
  readonly ranges: EncodedEvent[][]
  /** Keys by their latin1 rendering, for deduplication. */
  readonly versions: Map<string, Uint8Array>
  /** The affected versions as a semver range (details section); '' when none renders. */
  rangeText: string
}

interface AdvisoryRow {
  readonly id: string
  readonly cves: readonly string[]
  readonly details: AdvisoryDetails
}

export interface ArtifactBuildInput {
  readonly compiledAt: Date
  readonly osvSource: string
  readonly osvSourceUrl: string
  /** EPSS probability by CVE id; undefined when the feed was unavailable. */
  readonly epss: ReadonlyMap<string, number> | undefined
  readonly epssStatus: 'available' | 'unavailable'
  readonly epssScoreDate: Date | undefined
}

export interface ArtifactBuildOptions {
  /** 2 (default) writes the details section; 1 writes the original format without it (compatibility tests). */
  readonly formatVersion?: 1 | 2
}

export interface ArtifactStats {
  /** Records read from the archive, withdrawn ones included. */
  readonly recordsSeen: number
  readonly withdrawn: number
  /** Records compiled in: live, with at least one usable affected entry for the mount. */
  readonly advisories: number
  readonly packages: number
  /** Ranges left out because an event version does not parse. */
  readonly unparseableRanges: number
  /** Newest `modified` over every record read, withdrawn ones included. */
  readonly newestAdvisoryAt: Date | undefined
}

const KIND_OF = { introduced: F.EVENT_INTRODUCED, fixed: F.EVENT_FIXED, last_affected: F.EVENT_LAST_AFFECTED, limit: F.EVENT_LIMIT } as const
const EMPTY = new Uint8Array(0)

export class ArtifactBuilder {
  readonly #ecosystem: Ecosystem
  readonly #key = new KeyWriter()
  readonly #advisories: AdvisoryRow[] = []
  readonly #packages = new Map<string, Map<number, PackageAdvisory>>()
  #recordsSeen = 0
  #withdrawn = 0
  #unparseableRanges = 0
  #newest = Number.NaN

  constructor(ecosystem: Ecosystem) {
    this.#ecosystem = ecosystem
  }

  /** Every CVE id named by a compiled advisory (what the EPSS feed is filtered by). */
  cves(): Set<string> {
    const out = new Set<string>()
    for (const a of this.#advisories) for (const c of a.cves) out.add(c)
    return out
  }

  stats(): ArtifactStats {
    return {
      recordsSeen: this.#recordsSeen,
      withdrawn: this.#withdrawn,
      advisories: this.#advisories.length,
      packages: this.#packages.size,
      unparseableRanges: this.#unparseableRanges,
      newestAdvisoryAt: Number.isNaN(this.#newest) ? undefined : new Date(this.#newest),
    }
  }

  /** Adds one record; returns whether it was compiled in. */
  add(record: OsvRecord): boolean {
    this.#recordsSeen++
    if (typeof record.modified === 'string') {
      const t = Date.parse(record.modified)
      if (Number.isFinite(t) && !(t <= this.#newest)) this.#newest = t
    }
    if (record.withdrawn !== undefined) { this.#withdrawn++; return false }
    if (!isLiveRecord(record) || !Array.isArray(record.affected)) return false
    const perPackage = new Map<string, PackageAdvisory>()
    for (const a of record.affected) {
      if (a === null || typeof a !== 'object') continue
      if (!ecosystemMatches(this.#ecosystem, a.package?.ecosystem)) continue
      const rawName = a.package?.name
      if (typeof rawName !== 'string' || rawName.length === 0) continue
      const name = packageKey(this.#ecosystem, rawName)
      const ranges: EncodedEvent[][] = []
      for (const r of Array.isArray(a.ranges) ? a.ranges : []) {
        if (r === null || typeof r !== 'object' || !isVersionRange(r)) continue
        const events = this.#encodeRange(r)
        if (events === undefined) this.#unparseableRanges++
        else if (events.length > 0) ranges.push(events)
      }
      const versions = new Map<string, Uint8Array>()
      for (const v of Array.isArray(a.versions) ? a.versions : []) {
        if (typeof v !== 'string' || v.trim() === '') continue
        writeExactKey(this.#key, this.#ecosystem, v)
        const key = this.#key.copy()
        versions.set(Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1'), key)
      }
      if (ranges.length === 0 && versions.size === 0) continue
      const existing = perPackage.get(name)
      if (existing === undefined) perPackage.set(name, { ranges, versions, rangeText: '' })
      else {
        existing.ranges.push(...ranges)
        for (const [k, v] of versions) existing.versions.set(k, v)
      }
    }
    if (perPackage.size === 0) return false
    const index = this.#advisories.length
    this.#advisories.push({ id: record.id as string, cves: cveIds(record), details: advisoryDetailsOf(record) })
    for (const [name, pa] of perPackage) {
      pa.rangeText = vulnerableRangeText(this.#ecosystem, record, name)
      let byAdvisory = this.#packages.get(name)
      if (byAdvisory === undefined) this.#packages.set(name, (byAdvisory = new Map()))
      byAdvisory.set(index, pa)
    }
    return true
  }

  /** Sorted, encoded events; undefined when an event version does not parse. */
  #encodeRange(range: OsvRange): EncodedEvent[] | undefined {
    const out: EncodedEvent[] = []
    for (const e of Array.isArray(range.events) ? range.events : []) {
      if (e === null || typeof e !== 'object') continue
      for (const kindName of ['introduced', 'fixed', 'last_affected', 'limit'] as const) {
        const raw = e[kindName]
        if (typeof raw !== 'string') continue
        const kind = KIND_OF[kindName]
        if ((kind === F.EVENT_INTRODUCED && raw.trim() === '0') || (kind === F.EVENT_LIMIT && raw.includes('*'))) {
          out.push({ kind, flags: F.FLAG_UNBOUNDED, key: EMPTY })
          continue
        }
        if (!writeVersionKey(this.#key, this.#ecosystem, raw)) return undefined
        out.push({ kind, flags: 0, key: this.#key.copy() })
      }
    }
    // Unbounded introduced first, unbounded limit last, the rest by key; Array.sort is stable.
    const rank = (e: EncodedEvent): number => ((e.flags & F.FLAG_UNBOUNDED) === 0 ? 0 : e.kind === F.EVENT_INTRODUCED ? -1 : 1)
    out.sort((a, b) => {
      const ra = rank(a)
      const rb = rank(b)
      if (ra !== 0 || rb !== 0) return ra - rb
      return compareBytes(a.key, 0, a.key.length, b.key, b.key.length)
    })
    let introducedBefore = false
    for (const e of out) {
      if (e.kind === F.EVENT_INTRODUCED) introducedBefore = true
      else if (e.kind === F.EVENT_FIXED && introducedBefore) e.flags |= F.FLAG_REMEDIATES
    }
    return out
  }

  build(input: ArtifactBuildInput, options: ArtifactBuildOptions = {}): Uint8Array {
    const formatVersion = options.formatVersion ?? F.FORMAT_VERSION
    const w = new ByteWriter(F.HEADER_SIZE + 64 * 1024)
    w.skip(F.HEADER_SIZE)
    const names = [...this.#packages.keys()]
      .map((n) => ({ name: n, bytes: Buffer.from(n, 'utf8') }))
      .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    const packageIndex = w.reserve(names.length * F.PACKAGE_ENTRY_SIZE)
    const advisoryIndex = w.reserve(this.#advisories.length * 4)
    const heap = w.length

    const osvSourceRef = w.str(input.osvSource)
    const osvSourceUrlRef = w.str(input.osvSourceUrl)

    for (let i = 0; i < this.#advisories.length; i++) {
      const a = this.#advisories[i] as AdvisoryRow
      let best = Number.NaN
      if (input.epss !== undefined) {
        for (const c of a.cves) {
          const s = input.epss.get(c)
          if (s !== undefined && !(s <= best)) best = s
        }
      }
      w.setU32(advisoryIndex + i * 4, w.length)
      w.f64(best)
      w.str(a.id)
      w.u32(a.cves.length)
      for (const c of a.cves) w.str(c)
    }

    names.forEach(({ name, bytes }, i) => {
      const byAdvisory = this.#packages.get(name) as Map<number, PackageAdvisory>
      const nameRef = w.bytes(bytes)
      const matchRefs: Array<[number, number]> = []
      for (const [advisory, pa] of byAdvisory) matchRefs.push([advisory, this.#writeMatch(w, pa)])
      const entriesRef = w.length
      for (const [advisory, ref] of matchRefs) { w.u32(advisory); w.u32(ref) }
      const at = packageIndex + i * F.PACKAGE_ENTRY_SIZE
      w.setU32(at, nameRef)
      w.setU32(at + 4, bytes.length)
      w.setU32(at + 8, entriesRef)
      w.setU32(at + 12, matchRefs.length)
    })

    const details = formatVersion === 1 ? 0 : this.#writeDetails(w, names.map((n) => n.name))

    const total = w.length
    const out = w.finish()
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
    out.set(F.MAGIC, 0)
    view.setUint32(F.H_FORMAT_VERSION, formatVersion, true)
    view.setUint32(F.H_TOTAL_LENGTH, total, true)
    view.setUint8(F.H_ECOSYSTEM, F.ECOSYSTEM_CODES[this.#ecosystem])
    view.setUint8(F.H_EPSS_STATUS, F.EPSS_STATUS_CODES[input.epssStatus])
    view.setUint32(F.H_ROW_COUNT, this.#advisories.length, true)
    view.setFloat64(F.H_COMPILED_AT, input.compiledAt.getTime(), true)
    view.setFloat64(F.H_NEWEST_ADVISORY_AT, this.#newest, true)
    view.setFloat64(F.H_EPSS_SCORE_DATE, input.epssScoreDate?.getTime() ?? Number.NaN, true)
    view.setUint32(F.H_PACKAGE_COUNT, names.length, true)
    view.setUint32(F.H_ADVISORY_COUNT, this.#advisories.length, true)
    view.setUint32(F.H_PACKAGE_INDEX, packageIndex, true)
    view.setUint32(F.H_ADVISORY_INDEX, advisoryIndex, true)
    view.setUint32(F.H_HEAP, heap, true)
    view.setUint32(F.H_OSV_SOURCE, osvSourceRef, true)
    view.setUint32(F.H_OSV_SOURCE_URL, osvSourceUrlRef, true)
    view.setUint32(F.H_DETAILS, details, true)
    out.set(createHash('sha256').update(out.subarray(F.CHECKSUM_FROM)).digest(), F.H_CHECKSUM)
    return out
  }

  /** The details section (artifact-format.ts); its ref. Range texts follow each package's entries in the same order. */
  #writeDetails(w: ByteWriter, names: readonly string[]): number {
    const detailRefs = this.#advisories.map(({ details: d }) => {
      const ref = w.str(d.title)
      w.str(d.url)
      w.u8(d.severity === undefined ? 0 : F.SEVERITY_CODES[d.severity])
      w.u8(0); w.u8(0); w.u8(0)
      w.f64(d.cvss?.score ?? Number.NaN)
      w.str(d.cvss?.vectorString ?? '')
      w.u32(d.cwe.length)
      for (const c of d.cwe) w.str(c)
      return ref
    })
    const rangeRefs = names.map((name) => {
      const texts = [...(this.#packages.get(name) as Map<number, PackageAdvisory>).values()].map((pa) => w.str(pa.rangeText))
      const ref = w.length
      for (const t of texts) w.u32(t)
      return ref
    })
    const section = w.length
    w.u32(detailRefs.length)
    for (const r of detailRefs) w.u32(r)
    w.u32(rangeRefs.length)
    for (const r of rangeRefs) w.u32(r)
    return section
  }

  #writeMatch(w: ByteWriter, pa: PackageAdvisory): number {
    const keys = [...pa.versions.values()].sort((a, b) => compareBytes(a, 0, a.length, b, b.length))
    const keyRefs = keys.map((k) => {
      const ref = w.length
      w.u16(k.length)
      w.bytes(k)
      return ref
    })
    const ref = w.length
    w.u32(pa.ranges.length)
    for (const events of pa.ranges) {
      w.u32(events.length)
      for (const e of events) {
        w.u8(e.kind)
        w.u8(e.flags)
        w.u16(e.key.length)
        w.bytes(e.key)
      }
    }
    w.u32(keyRefs.length)
    for (const k of keyRefs) w.u32(k)
    return ref
  }
}

/** Append-only little-endian writer over a growing buffer. */
class ByteWriter {
  #buf: Uint8Array
  #view: DataView
  #len = 0

  constructor(initial: number) {
    this.#buf = new Uint8Array(initial)
    this.#view = new DataView(this.#buf.buffer)
  }

  get length(): number { return this.#len }

  #ensure(n: number): void {
    if (this.#len + n <= this.#buf.length) return
    if (this.#len + n > 0xffffffff) throw new RangeError('advisory artifact would exceed 4 GiB')
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n))
    next.set(this.#buf.subarray(0, this.#len))
    this.#buf = next
    this.#view = new DataView(next.buffer)
  }

  skip(n: number): void { this.#ensure(n); this.#len += n }
  reserve(n: number): number { const at = this.#len; this.skip(n); return at }
  u8(v: number): void { this.#ensure(1); this.#view.setUint8(this.#len, v); this.#len += 1 }
  u16(v: number): void {
    if (v > 0xffff) throw new RangeError('advisory artifact field exceeds 16 bits')
    this.#ensure(2); this.#view.setUint16(this.#len, v, true); this.#len += 2
  }
  u32(v: number): void { this.#ensure(4); this.#view.setUint32(this.#len, v, true); this.#len += 4 }
  f64(v: number): void { this.#ensure(8); this.#view.setFloat64(this.#len, v, true); this.#len += 8 }
  setU32(at: number, v: number): void { this.#view.setUint32(at, v, true) }
  bytes(b: Uint8Array): number { const at = this.#len; this.#ensure(b.length); this.#buf.set(b, this.#len); this.#len += b.length; return at }
  str(s: string): number {
    const at = this.#len
    const b = Buffer.from(s, 'utf8')
    this.u32(b.length)
    this.bytes(b)
    return at
  }
  finish(): Uint8Array { return this.#buf.slice(0, this.#len) }
}
