/**
 * The one check of a compiled advisory artifact (byte format in
 * artifact-format.ts), made when it is opened: magic, version, length,
 * checksum, and every offset and count walked against the bounds, so a
 * corrupt or truncated artifact is refused with ADVISORY_ARTIFACT_INVALID and
 * no lookup (compiled-database.ts) can ever read outside the buffer.
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../../errors.js'
import * as F from './artifact-format.js'
import type { AdvisoryMetadata, Ecosystem } from './database.js'

export function invalid(reason: string): ServiceError {
  return new ServiceError('ADVISORY_ARTIFACT_INVALID', { message: `the advisory artifact is invalid: ${reason}`, data: { reason } })
}

/** Where a validated artifact's sections lie, and what its header says. */
export interface ArtifactHeader {
  readonly ecosystem: Ecosystem
  readonly metadata: AdvisoryMetadata
  readonly packageIndex: number
  readonly packageCount: number
  readonly advisoryIndex: number
  readonly advisoryCount: number
  /** Ref of the details section (format 2), 0 when absent. */
  readonly details: number
}

export const utf8Decoder = new TextDecoder('utf-8', { fatal: false })

export function asArtifactBytes(input: Uint8Array | SharedArrayBuffer): Uint8Array {
  if (input instanceof Uint8Array) return input
  if (input instanceof SharedArrayBuffer) return new Uint8Array(input)
  throw invalid('not a byte array')
}

/** Reads of the artifact that refuse anything out of its bounds. */
class Bounds {
  readonly u8: Uint8Array
  readonly view: DataView
  readonly total: number

  constructor(u8: Uint8Array) {
    this.u8 = u8
    this.view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength)
    this.total = u8.byteLength
  }

  u32(at: number): number { return this.view.getUint32(at, true) }

  within(at: number, len: number, what: string): void {
    if (!(at >= F.HEADER_SIZE && len >= 0 && at + len <= this.total)) throw invalid(`${what} out of bounds`)
  }

  /** A count at `p` of items of at least four bytes each that must fit in what follows it. */
  count(p: number, what: string): number {
    this.within(p, 4, what)
    const n = this.u32(p)
    if (n > (this.total - p - 4) / 4) throw invalid(`${what} out of bounds`)
    return n
  }

  str(at: number, what: string): string {
    const end = this.skipStr(at, what)
    return utf8Decoder.decode(this.u8.subarray(at + 4, end))
  }

  skipStr(at: number, what: string): number {
    this.within(at, 4, what)
    const len = this.u32(at)
    this.within(at + 4, len, what)
    return at + 4 + len
  }

  date(at: number): Date | undefined {
    const ms = this.view.getFloat64(at, true)
    return Number.isFinite(ms) ? new Date(ms) : undefined
  }
}

/** Walks the whole artifact against its bounds; throws ADVISORY_ARTIFACT_INVALID. */
export function validateArtifact(u8: Uint8Array, checksum: boolean): ArtifactHeader {
  const b = new Bounds(u8)
  const version = checkPreamble(b, checksum)
  const ecoCode = b.view.getUint8(F.H_ECOSYSTEM)
  const ecosystem: Ecosystem | undefined = ecoCode === F.ECOSYSTEM_CODES.js ? 'js' : ecoCode === F.ECOSYSTEM_CODES.py ? 'py' : undefined
  if (ecosystem === undefined) throw invalid('unknown ecosystem')
  const epssCode = b.view.getUint8(F.H_EPSS_STATUS)
  if (epssCode > 2) throw invalid('unknown epss_status')

  const packageCount = b.u32(F.H_PACKAGE_COUNT)
  const advisoryCount = b.u32(F.H_ADVISORY_COUNT)
  const packageIndex = b.u32(F.H_PACKAGE_INDEX)
  const advisoryIndex = b.u32(F.H_ADVISORY_INDEX)
  b.within(packageIndex, packageCount * F.PACKAGE_ENTRY_SIZE, 'package index')
  b.within(advisoryIndex, advisoryCount * 4, 'advisory index')
  const osvSource = b.str(b.u32(F.H_OSV_SOURCE), 'osv source')
  const osvSourceUrl = b.str(b.u32(F.H_OSV_SOURCE_URL), 'osv source url')
  checkAdvisories(b, advisoryIndex, advisoryCount)
  checkPackages(b, packageIndex, packageCount, advisoryCount)
  // Format 2: the optional details section, walked like the rest.
  const details = version >= 2 ? b.u32(F.H_DETAILS) : 0
  if (details !== 0) checkDetails(b, details, advisoryCount, packageIndex, packageCount)

  const compiledAt = b.date(F.H_COMPILED_AT)
  if (compiledAt === undefined) throw invalid('compilation time missing')
  const metadata: AdvisoryMetadata = Object.freeze({
    ecosystem,
    osvSource,
    osvSourceUrl,
    compiledAt,
    newestAdvisoryAt: b.date(F.H_NEWEST_ADVISORY_AT),
    epssScoreDate: b.date(F.H_EPSS_SCORE_DATE),
    epssStatus: epssCode === F.EPSS_STATUS_CODES.available ? 'available' : epssCode === F.EPSS_STATUS_CODES.unavailable ? 'unavailable' : undefined,
    rowCount: b.u32(F.H_ROW_COUNT),
  })
  return { ecosystem, metadata, packageIndex, packageCount, advisoryIndex, advisoryCount, details }
}

/** The magic, a readable format version, the declared length and (when asked) the checksum; returns the version. */
function checkPreamble(b: Bounds, checksum: boolean): number {
  const u8 = b.u8
  if (b.total < F.HEADER_SIZE) throw invalid('shorter than its header')
  for (let i = 0; i < F.MAGIC.length; i++) if (u8[i] !== F.MAGIC[i]) throw invalid('bad magic')
  const version = b.u32(F.H_FORMAT_VERSION)
  if (!F.READABLE_FORMAT_VERSIONS.includes(version)) throw invalid(`unsupported format version ${version}`)
  if (b.u32(F.H_TOTAL_LENGTH) !== b.total) throw invalid('length does not match the header (truncated or padded)')
  if (checksum) {
    const digest = createHash('sha256').update(u8.subarray(F.CHECKSUM_FROM)).digest()
    for (let i = 0; i < 32; i++) if (digest[i] !== u8[F.H_CHECKSUM + i]) throw invalid('checksum mismatch')
  }
  return version
}

/** Each advisory record: its EPSS score, its id and its CVE ids. */
function checkAdvisories(b: Bounds, advisoryIndex: number, advisoryCount: number): void {
  for (let i = 0; i < advisoryCount; i++) {
    const ref = b.u32(advisoryIndex + i * 4)
    b.within(ref, 8, 'advisory record')
    let p = b.skipStr(ref + 8, 'advisory id')
    const n = b.count(p, 'cve count')
    p += 4
    for (let c = 0; c < n; c++) p = b.skipStr(p, 'cve id')
  }
}

/** The package index, sorted by name, and each entry's advisory number and Match block. */
function checkPackages(b: Bounds, packageIndex: number, packageCount: number, advisoryCount: number): void {
  let previous: Uint8Array | undefined
  for (let i = 0; i < packageCount; i++) {
    const at = packageIndex + i * F.PACKAGE_ENTRY_SIZE
    const nameRef = b.u32(at)
    const nameLen = b.u32(at + 4)
    b.within(nameRef, nameLen, 'package name')
    const name = b.u8.subarray(nameRef, nameRef + nameLen)
    if (previous !== undefined && Buffer.compare(previous, name) >= 0) throw invalid('package index not sorted')
    previous = name
    const entries = b.u32(at + 8)
    const entryCount = b.u32(at + 12)
    if (entryCount > b.total / F.ENTRY_SIZE) throw invalid('entry count out of bounds')
    b.within(entries, entryCount * F.ENTRY_SIZE, 'package entries')
    for (let e = 0; e < entryCount; e++) {
      if (b.u32(entries + e * F.ENTRY_SIZE) >= advisoryCount) throw invalid('advisory number out of range')
      checkMatch(b, b.u32(entries + e * F.ENTRY_SIZE + 4))
    }
  }
}

/** One Match block: its ranges of events, each event's kind and key, then its listed version keys. */
function checkMatch(b: Bounds, ref: number): void {
  const view = b.view
  b.within(ref, 4, 'match')
  const ranges = b.u32(ref)
  let p = ref + 4
  if (ranges > (b.total - p) / 4) throw invalid('range count out of bounds')
  for (let r = 0; r < ranges; r++) {
    b.within(p, 4, 'range')
    const events = b.u32(p)
    p += 4
    if (events > (b.total - p) / 4) throw invalid('event count out of bounds')
    for (let e = 0; e < events; e++) {
      b.within(p, 4, 'event')
      const kind = view.getUint8(p)
      const flags = view.getUint8(p + 1)
      const keyLen = view.getUint16(p + 2, true)
      if (kind < F.EVENT_INTRODUCED || kind > F.EVENT_LIMIT) throw invalid('unknown event kind')
      if ((flags & F.FLAG_UNBOUNDED) !== 0 ? keyLen !== 0 : keyLen === 0) throw invalid('event key length')
      b.within(p + 4, keyLen, 'event key')
      p += 4 + keyLen
    }
  }
  b.within(p, 4, 'version count')
  const versions = b.u32(p)
  p += 4
  if (versions > (b.total - p) / 4) throw invalid('version count out of bounds')
  b.within(p, versions * 4, 'version keys')
  for (let v = 0; v < versions; v++) {
    const k = b.u32(p + v * 4)
    b.within(k, 2, 'version key')
    b.within(k + 2, view.getUint16(k, true), 'version key')
  }
}

/** Format 2's details: per advisory its title, URL, severity, score, vector and CWE ids; per package entry its range text. */
function checkDetails(b: Bounds, details: number, advisoryCount: number, packageIndex: number, packageCount: number): void {
  b.within(details, 4, 'details section')
  if (b.u32(details) !== advisoryCount) throw invalid('details count does not match the advisory count')
  b.within(details + 4, advisoryCount * 4 + 4, 'details index')
  for (let i = 0; i < advisoryCount; i++) {
    let p = b.skipStr(b.u32(details + 4 + i * 4), 'advisory title')
    p = b.skipStr(p, 'advisory url')
    b.within(p, 12, 'advisory severity and score')
    if (b.view.getUint8(p) > F.SEVERITY_CODES.critical) throw invalid('unknown severity')
    p = b.skipStr(p + 12, 'cvss vector')
    const n = b.count(p, 'cwe count')
    p += 4
    for (let c = 0; c < n; c++) p = b.skipStr(p, 'cwe id')
  }
  const ranges = details + 4 + advisoryCount * 4
  if (b.u32(ranges) !== packageCount) throw invalid('range text count does not match the package count')
  b.within(ranges + 4, packageCount * 4, 'range text index')
  for (let i = 0; i < packageCount; i++) {
    const entryCount = b.u32(packageIndex + i * F.PACKAGE_ENTRY_SIZE + 12)
    const ref = b.u32(ranges + 4 + i * 4)
    b.within(ref, entryCount * 4, 'range texts')
    for (let e = 0; e < entryCount; e++) b.skipStr(b.u32(ref + e * 4), 'range text')
  }
}
