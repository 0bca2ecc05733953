/**
 * Order-preserving byte keys for versions: for two versions u and v of one
 * ecosystem, `compareBytes(key(u), key(v))` has the sign of the ecosystem's
 * own comparison (npm: semver precedence via the `semver` package's parser,
 * build metadata ignored as semver does; PyPI: PEP 440). The compiler stores
 * range events as keys once, so a lookup encodes the queried version once and
 * then only compares bytes in place, without parsing anything stored.
 *
 * Building blocks, each prefix-free so that concatenations compare field by
 * field:
 * - number: one byte with the count of decimal digits (leading zeros
 *   stripped, so 0 is the empty digit string), then the ASCII digits. More
 *   digits means larger; equal counts compare digit by digit. No size limit
 *   below 255 digits.
 * - string: its bytes then 0x00 (identifiers never contain 0x00), so a
 *   string sorts before its own extensions.
 * - list: each item behind a type byte >= 0x01, closed by 0x00, so a shorter
 *   list sorts before a longer one sharing its prefix.
 *
 * npm (SemVer 2.0 section 11, parsed by npm-version.ts): major, minor, patch as numbers; then 0x02 for
 * a release, or 0x01 and the pre-release identifiers as a list (numeric
 * identifier: 0x01 number; alphanumeric: 0x02 string), because a release has
 * higher precedence than any of its pre-releases and numeric identifiers have
 * lower precedence than alphanumeric ones.
 *
 * PyPI (PEP 440): epoch number; release as a list of numbers (0x01 number)
 * with trailing zeros dropped; pre-release rank byte (0x00 dev-only release,
 * 0x01 a, 0x02 b, 0x03 rc, each followed by its number; 0x04 none); post
 * (0x00 none, 0x01 number); dev (0x01 number, 0x02 none); local (0x00 none,
 * 0x01 then a list: 0x01 string for alphanumeric, 0x02 number for numeric).
 *
 * A version that does not parse has no key; it can still match an explicit
 * version list through its raw-string key (0xFF then the trimmed UTF-8
 * bytes), which sorts after every parsed key and equals nothing parsed.
 */
import type { Ecosystem } from './database.js'
import { parseNpmVersion } from './npm-version.js'
import { parsePep440, type Pep440Version } from './pep440.js'

/** A growable byte buffer reused across encodings, so a lookup allocates little. */
export class KeyWriter {
  #bytes = new Uint8Array(64)
  #length = 0

  get length(): number { return this.#length }
  get bytes(): Uint8Array { return this.#bytes }

  reset(): void { this.#length = 0 }

  /** A copy of the bytes written so far. */
  copy(): Uint8Array { return this.#bytes.slice(0, this.#length) }

  byte(b: number): void {
    if (this.#length === this.#bytes.length) this.#grow(1)
    this.#bytes[this.#length++] = b
  }

  /** Digit string without leading zeros. */
  number(d: string): void {
    if (d.length > 254) throw new RangeError('version number too long')
    this.#ensure(d.length + 1)
    this.#bytes[this.#length++] = d.length
    for (let i = 0; i < d.length; i++) this.#bytes[this.#length++] = d.charCodeAt(i)
  }

  /** ASCII string (identifiers); callers guarantee no 0x00 and no code unit above 0x7f. */
  ascii(s: string): void {
    this.#ensure(s.length)
    for (let i = 0; i < s.length; i++) this.#bytes[this.#length++] = s.charCodeAt(i) & 0x7f
  }

  utf8(s: string): void {
    this.#ensure(s.length * 3)
    const r = new TextEncoder().encodeInto(s, this.#bytes.subarray(this.#length))
    this.#length += r.written
  }

  #ensure(n: number): void {
    if (this.#length + n > this.#bytes.length) this.#grow(n)
  }

  #grow(n: number): void {
    const next = new Uint8Array(Math.max(this.#bytes.length * 2, this.#length + n))
    next.set(this.#bytes.subarray(0, this.#length))
    this.#bytes = next
  }
}

const ASCII_IDENTIFIER = /^[\x01-\x7f]*$/

function stripZeros(d: string): string {
  let i = 0
  while (i < d.length && d.charCodeAt(i) === 48) i++
  return d.slice(i)
}

/** Writes the semver key of `version`; false (and nothing reliable written) when it does not parse. */
export function writeSemverKey(w: KeyWriter, version: string): boolean {
  const v = parseNpmVersion(version)
  if (v === undefined) return false
  w.number(String(v.major))
  w.number(String(v.minor))
  w.number(String(v.patch))
  if (v.prerelease.length === 0) {
    w.byte(0x02)
    return true
  }
  w.byte(0x01)
  for (const id of v.prerelease) {
    const s = String(id)
    if (/^[0-9]+$/.test(s)) {
      w.byte(0x01)
      w.number(stripZeros(s))
    } else {
      if (!ASCII_IDENTIFIER.test(s)) return false
      w.byte(0x02)
      w.ascii(s)
      w.byte(0x00)
    }
  }
  w.byte(0x00)
  return true
}

const PRE_BYTE = { a: 0x01, b: 0x02, rc: 0x03 } as const

export function writePep440Key(w: KeyWriter, v: Pep440Version): void {
  w.number(v.epoch)
  let n = v.release.length
  while (n > 0 && v.release[n - 1] === '') n--
  for (let i = 0; i < n; i++) {
    w.byte(0x01)
    w.number(v.release[i] as string)
  }
  w.byte(0x00)
  if (v.pre !== undefined) {
    w.byte(PRE_BYTE[v.pre.label])
    w.number(v.pre.number)
  } else if (v.post === undefined && v.dev !== undefined) {
    w.byte(0x00)
  } else {
    w.byte(0x04)
  }
  if (v.post === undefined) w.byte(0x00)
  else { w.byte(0x01); w.number(v.post) }
  if (v.dev === undefined) w.byte(0x02)
  else { w.byte(0x01); w.number(v.dev) }
  if (v.local === undefined) {
    w.byte(0x00)
    return
  }
  w.byte(0x01)
  for (const seg of v.local) {
    if (seg === '' || /^[0-9]+$/.test(seg)) {
      w.byte(0x02)
      w.number(seg)
    } else {
      w.byte(0x01)
      w.ascii(seg)
      w.byte(0x00)
    }
  }
  w.byte(0x00)
}

/**
 * Writes the ordered key of `version` for the ecosystem into `w` (after
 * resetting it). Returns false when the version does not parse.
 */
export function writeVersionKey(w: KeyWriter, ecosystem: Ecosystem, version: string): boolean {
  w.reset()
  try {
    if (ecosystem === 'js') return writeSemverKey(w, version)
    const v = parsePep440(version)
    if (v === undefined) return false
    writePep440Key(w, v)
    return true
  } catch (err) {
    // A number of 255 digits or more has no key; treat the version as unparseable.
    if (err instanceof RangeError) return false
    throw err
  }
}

export const RAW_KEY_MARKER = 0xff

/** The raw-string key of an unparseable version (explicit version lists only). */
export function writeRawKey(w: KeyWriter, version: string): void {
  w.reset()
  w.byte(RAW_KEY_MARKER)
  w.utf8(version.trim())
}

/** Ordered key when the version parses, else its raw-string key. */
export function writeExactKey(w: KeyWriter, ecosystem: Ecosystem, version: string): boolean {
  if (writeVersionKey(w, ecosystem, version)) return true
  writeRawKey(w, version)
  return false
}

/** Byte-wise comparison of `a[aStart, aStart+aLen)` and `b[0, bLen)`. */
export function compareBytes(a: Uint8Array, aStart: number, aLen: number, b: Uint8Array, bLen: number): number {
  const n = aLen < bLen ? aLen : bLen
  for (let i = 0; i < n; i++) {
    const x = a[aStart + i] as number
    const y = b[i] as number
    if (x !== y) return x < y ? -1 : 1
  }
  return aLen === bLen ? 0 : aLen < bLen ? -1 : 1
}
