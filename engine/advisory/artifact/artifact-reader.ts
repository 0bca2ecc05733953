/**
 * Reads a validated compiled advisory artifact in place (artifact-
 * validation.ts walked it, so no read here leaves the buffer): a package's
 * entries, an advisory's id, CVEs and EPSS score, and the verdict of one
 * Match block for a version (osv-evaluate.ts semantics) given how the
 * version compares with each stored key. The lookups
 * (compiled-database.ts), the per-package table (package-table.ts) and the
 * audit report (advisory-report.ts) all read through one reader.
 */
import * as F from './artifact-format.js'
import { utf8Decoder, type ArtifactHeader } from './artifact-validation.js'
import type { AdvisoryMatch } from './database.js'

/** The version's place against a stored key: sign(version - key at `at`, length `len`). */
export interface KeyComparison {
  compareAt(at: number, len: number): number
}

/** evaluate's answer bits: the version is affected; it is exactly a fix that remediates. */
export const AFFECTED = 1
export const FIX_BOUND = 2

export const NO_MATCHES: readonly AdvisoryMatch[] = Object.freeze([])

export class ArtifactReader {
  readonly u8: Uint8Array
  readonly view: DataView
  readonly header: ArtifactHeader
  readonly #matches: Array<AdvisoryMatch | undefined>

  constructor(u8: Uint8Array, header: ArtifactHeader) {
    this.u8 = u8
    this.view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength)
    this.header = header
    this.#matches = new Array<AdvisoryMatch | undefined>(header.advisoryCount)
  }

  u32(at: number): number { return this.view.getUint32(at, true) }

  str(at: number): string {
    const len = this.u32(at)
    return utf8Decoder.decode(this.u8.subarray(at + 4, at + 4 + len))
  }

  /** The count-prefixed list of strings at `at`. */
  strList(at: number): string[] {
    const n = this.u32(at)
    let p = at + 4
    const list: string[] = []
    for (let i = 0; i < n; i++) {
      list.push(this.str(p))
      p += 4 + this.u32(p)
    }
    return list
  }

  /** Offset of package `pkg`'s entries (each F.ENTRY_SIZE: advisory number, Match block ref). */
  entriesOf(pkg: number): number { return this.u32(this.header.packageIndex + pkg * F.PACKAGE_ENTRY_SIZE + 8) }

  entryCountOf(pkg: number): number { return this.u32(this.header.packageIndex + pkg * F.PACKAGE_ENTRY_SIZE + 12) }

  /** Advisory number `advisory` as a match, made once and reused after. */
  matchOf(advisory: number): AdvisoryMatch {
    const cached = this.#matches[advisory]
    if (cached !== undefined) return cached
    let p = this.u32(this.header.advisoryIndex + advisory * 4)
    const epss = this.view.getFloat64(p, true)
    p += 8
    const id = this.str(p)
    const cves = this.strList(p + 4 + this.u32(p))
    const match: AdvisoryMatch = Object.freeze({ id, cves: Object.freeze(cves), epss: Number.isNaN(epss) ? undefined : epss })
    this.#matches[advisory] = match
    return match
  }

  /** Whether advisory number `advisory`'s id starts with `MAL-` (an OSV malicious-package record), read in place. */
  isMalwareRecord(advisory: number): boolean {
    const p = this.u32(this.header.advisoryIndex + advisory * 4) + 8
    const u8 = this.u8
    // 'M' 'A' 'L' '-'
    return this.u32(p) >= 4 && u8[p + 4] === 0x4d && u8[p + 5] === 0x41 && u8[p + 6] === 0x4c && u8[p + 7] === 0x2d
  }

  /**
   * AFFECTED and/or FIX_BOUND for one Match block (osv-evaluate.ts
   * semantics), the version placed against each stored key by `query`;
   * `parsed` false: a version that does not parse, which only an explicit
   * list or an unbounded range can affect.
   */
  evaluate(ref: number, parsed: boolean, query: KeyComparison): number {
    const view = this.view
    let p = ref
    const ranges = this.u32(p)
    p += 4
    let result = 0
    for (let r = 0; r < ranges; r++) {
      const events = this.u32(p)
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
          const c = unbounded ? (kind === F.EVENT_INTRODUCED ? 1 : -1) : query.compareAt(p + 4, keyLen)
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
    const versions = this.u32(p)
    p += 4
    if ((result & AFFECTED) === 0 && versions > 0) {
      let lo = 0
      let hi = versions - 1
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1
        const k = this.u32(p + mid * 4)
        const c = query.compareAt(k + 2, view.getUint16(k, true))
        if (c === 0) { result |= AFFECTED; break }
        if (c > 0) lo = mid + 1
        else hi = mid - 1
      }
    }
    return result
  }
}
