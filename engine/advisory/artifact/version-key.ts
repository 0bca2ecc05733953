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

  /** The digit string `s[start, end)`, without leading zeros, written as `number` would. */
  numberFrom(s: string, start: number, end: number): void {
    while (start < end && s.charCodeAt(start) === 48) start++
    const len = end - start
    if (len > 254) throw new RangeError('version number too long')
    this.#ensure(len + 1)
    this.#bytes[this.#length++] = len
    for (let i = start; i < end; i++) this.#bytes[this.#length++] = s.charCodeAt(i)
  }

  /** ASCII `s[start, end)`; callers guarantee no 0x00 and no code unit above 0x7f. */
  asciiFrom(s: string, start: number, end: number): void {
    this.#ensure(end - start)
    for (let i = start; i < end; i++) this.#bytes[this.#length++] = s.charCodeAt(i) & 0x7f
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

/**
 * Fast path for a strict SemVer 2.0 string `MAJOR.MINOR.PATCH[-PRE][+BUILD]`
 * (no prefix, no whitespace), which is what packuments hold: writes its key
 * straight from the characters, exactly as the parser path would after
 * semver.parse. Returns false to leave anything else to the parser.
 */
function writeStrictSemver(w: KeyWriter, v: string): boolean {
  const n = v.length
  if (n === 0 || n > 256) return false // semver's MAX_LENGTH
  // Validate first, so that nothing is written for a string the parser must judge.
  let i = 0
  let dots = 0
  let digits = 0
  for (; i < n; i++) {
    const c = v.charCodeAt(i)
    if (c >= 0x30 && c <= 0x39) { if (++digits > 15) return false; continue } // semver refuses > MAX_SAFE_INTEGER
    if (c !== 0x2e || digits === 0 || dots === 2) break
    dots++
    digits = 0
  }
  if (dots !== 2 || digits === 0) return false
  const mainEnd = i
  let preEnd = i
  if (i < n && v.charCodeAt(i) === 0x2d) {
    let len = 0
    for (i++; i < n; i++) {
      const c = v.charCodeAt(i)
      if (c === 0x2e) { if (len === 0) return false; len = 0; continue }
      if (c === 0x2b) break
      if (!isIdentifierChar(c)) return false
      len++
    }
    if (len === 0) return false
    preEnd = i
  }
  if (i < n) {
    if (v.charCodeAt(i) !== 0x2b) return false
    let len = 0
    for (i++; i < n; i++) {
      const c = v.charCodeAt(i)
      if (c === 0x2e) { if (len === 0) return false; len = 0; continue }
      if (!isIdentifierChar(c)) return false
      len++
    }
    if (len === 0) return false
  }
  w.reset()
  let start = 0
  for (let j = 0; j <= mainEnd; j++) {
    if (j < mainEnd && v.charCodeAt(j) !== 0x2e) continue
    w.numberFrom(v, start, j) // leading zeros dropped, as the loose parser reads them
    start = j + 1
  }
  if (preEnd === mainEnd) {
    w.byte(0x02)
    return true
  }
  w.byte(0x01)
  start = mainEnd + 1
  for (let j = start; j <= preEnd; j++) {
    if (j < preEnd && v.charCodeAt(j) !== 0x2e) continue
    let numeric = true
    for (let k = start; k < j; k++) {
      const c = v.charCodeAt(k)
      if (c < 0x30 || c > 0x39) { numeric = false; break }
    }
    if (numeric) {
      w.byte(0x01)
      w.numberFrom(v, start, j)
    } else {
      w.byte(0x02)
      w.asciiFrom(v, start, j)
      w.byte(0x00)
    }
    start = j + 1
  }
  w.byte(0x00)
  return true
}

function isIdentifierChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2d
}

/** Writes the semver key of `version`; false (and nothing reliable written) when it does not parse. */
export function writeSemverKey(w: KeyWriter, version: string): boolean {
  if (writeStrictSemver(w, version)) return true
  w.reset()
  const v = parseNpmVersion(version)
  if (v === undefined) return false
  w.number(stripZeros(String(v.major)))
  w.number(stripZeros(String(v.minor)))
  w.number(stripZeros(String(v.patch)))
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
