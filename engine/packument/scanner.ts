/**
 * A resumable byte scanner for one npm packument (DESIGN.md: stream-json is
 * ~10x slower than JSON.parse, so the hot path indexes raw slices instead of
 * building values). Feed it the chunks in order with `push`, then `end()`;
 * chunk boundaries may fall anywhere, inside a key, a string, an escape, a
 * number, a literal or a UTF-8 sequence. It checks the whole document is
 * well-formed JSON as it goes (ServiceError UPSTREAM_DECODE otherwise) and
 * records, as byte positions (see packument-index.ts):
 *
 * - every top-level member;
 * - inside `versions`, every version's manifest, the `dist` values `tarball`,
 *   `integrity` and `shasum`, and (for the abbreviated form) each manifest
 *   member with whether the abbreviated form keeps it;
 * - every member of `time` and `dist-tags`.
 *
 * Nothing is decoded except the keys of those objects; values are decoded
 * lazily by whoever reads them (a rule reads a publish time, render a tag).
 * The per-byte work is one tight loop over the chunk; strings, where most
 * bytes are, have an inner loop of three comparisons per byte, and UTF-8 is
 * checked natively (utf8-validator.ts).
 */
import { ServiceError } from '../errors.js'
import {
  INSTALL_SCRIPT_KEYS, K_BUNDLE_DEPENDENCIES, K_BUNDLED, K_DROP, K_HAS_INSTALL_SCRIPT, KEY_ATTESTATIONS, KEY_DIST, KEY_HAS_INSTALL_SCRIPT,
  KEY_INTEGRITY, KEY_NPM_USER, KEY_PROVENANCE, KEY_SCRIPTS, KEY_SHASUM, KEY_TARBALL, KEY_TRUSTED_PUBLISHER, KEY_NAME, KEY_VERSION,
  KEY_DEPENDENCIES, KEY_OPTIONAL_DEPENDENCIES, KEY_PEER_DEPENDENCIES,
  knownKeyId, knownKeyIdOf, MANIFEST_CODES,
} from './known-keys.js'
import {
  MEMBER_ADJACENT, MEMBER_BUNDLED, MEMBER_KEEP, MEMBER_STRIDE,
  VERSION_DECLARES_INSTALL_SCRIPT, VERSION_HAS_BUNDLE_DEPENDENCIES, VERSION_HAS_INSTALL_SCRIPT, VERSION_HAS_INSTALL_SCRIPT_MEMBER,
  VERSION_PROVENANCE, VERSION_TRUSTED_PUBLISHER,
  NOT_A_STRING, VersionEntry,
  type Member, type PackumentIndex,
} from './packument-index.js'
import { SourceBytes } from './source-bytes.js'
import { Utf8Validator } from './utf8-validator.js'

/** SPEC.md 2.11 `limits.maxVersionCount` and `limits.maxArtifactCount`, resolved (Infinity: none). */
export interface StructureLimits {
  readonly maxVersionCount: number
  readonly maxArtifactCount: number
}

export const NO_STRUCTURE_LIMITS: StructureLimits = Object.freeze({ maxVersionCount: Infinity, maxArtifactCount: Infinity })

export interface ScannerOptions {
  readonly limits?: StructureLimits
  /** Record manifest members for the abbreviated form (default true). */
  readonly recordMembers?: boolean
  /** Record each version's publishing trust (VERSION_TRUSTED_PUBLISHER, VERSION_PROVENANCE) for DenyIfTrustDowngrade (default false). */
  readonly recordTrust?: boolean
  /** Record each version's install scripts (VERSION_HAS_INSTALL_SCRIPT, VERSION_DECLARES_INSTALL_SCRIPT) whatever the form, for DenyIfInstallScriptAdded (default false). */
  readonly recordScripts?: boolean
  /**
   * Record each version's `scripts` and dependency-list slices (VersionEntry
   * scriptsStart...) for DenyIfInstallScriptChanged and DenyIfDependencyAdded
   * (default false): two comparisons per manifest member, nothing decoded.
   */
  readonly recordSlices?: boolean
}

/** Nesting deeper than this is refused as a structural limit, not parsed. */
export const MAX_NESTING_DEPTH = 512

/** Offsets are int32 in the member pool. */
const MAX_DOCUMENT_BYTES = 0x7fffffff

// Scanner states.
const S_VALUE = 0 // a value is expected
const S_ARRAY_FIRST = 1 // after '[': a value or ']'
const S_OBJECT_FIRST = 2 // after '{': a key or '}'
const S_KEY = 3 // after ',' in an object: a key
const S_COLON = 4
const S_AFTER = 5 // after a value: ',' or the closer
const S_STRING = 6
const S_ESCAPE = 7
const S_UNICODE = 8
const S_NUMBER = 9
const S_LITERAL = 10
const S_DONE = 11

// Number sub-states.
const N_MINUS = 0
const N_ZERO = 1
const N_INT = 2
const N_DOT = 3
const N_FRACTION = 4
const N_E = 5
const N_E_SIGN = 6
const N_EXPONENT = 7

// Roles of a container: what its members mean to the index.
const R_OTHER = 0
const R_DOCUMENT = 1 // depth 0: the document itself
const R_TOP = 2
const R_VERSIONS = 3
const R_MANIFEST = 4
const R_DIST = 5
const R_TIME = 6
const R_TAGS = 7
const R_SCRIPTS = 8
const R_NPM_USER = 9 // a manifest's `_npmUser` (recordTrust)
const R_ATTESTATIONS = 10 // a manifest's `dist.attestations` (recordTrust)

const T_OBJECT = 1
const T_ARRAY = 2

// String flags.
const F_ESCAPE = 1
const F_HIGH = 2

const LITERALS = [
  new Uint8Array([0x74, 0x72, 0x75, 0x65]), // true
  new Uint8Array([0x66, 0x61, 0x6c, 0x73, 0x65]), // false
  new Uint8Array([0x6e, 0x75, 0x6c, 0x6c]), // null
] as const

/** Bytes a string's inner loop passes over: printable ASCII other than '"' and '\\'. */
const STRING_PLAIN = new Uint8Array(256)
for (let c = 0x20; c <= 0x7e; c++) STRING_PLAIN[c] = c === 0x22 || c === 0x5c ? 0 : 1

/** Byte classes of hex digits, for \uXXXX. */
const HEX = new Uint8Array(256)
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1

function decodeError(offset: number, reason: string): ServiceError {
  return new ServiceError('UPSTREAM_DECODE', { data: { offset, reason } })
}

export class PackumentScanner {
  readonly #limits: StructureLimits
  readonly #recordMembers: boolean
  readonly #recordTrust: boolean
  /** Install-script bits are read: for the abbreviated form, or for DenyIfInstallScriptAdded. */
  readonly #readScripts: boolean
  readonly #recordSlices: boolean
  readonly #source = new SourceBytes()
  readonly #utf8 = new Utf8Validator()

  #state = S_VALUE
  #depth = 0
  readonly #types = new Uint8Array(MAX_NESTING_DEPTH + 1)
  readonly #roles = new Uint8Array(MAX_NESTING_DEPTH + 1)
  // Per depth, for tracked containers: the member being read.
  readonly #keyStart = new Array<number>(MAX_NESTING_DEPTH + 1).fill(0)
  readonly #valueStart = new Array<number>(MAX_NESTING_DEPTH + 1).fill(0)
  /** The first byte of that value: what kind of value it is, without reading the source again. */
  readonly #valueFirst = new Uint8Array(MAX_NESTING_DEPTH + 1)
  /** The current key of each depth whose keys are decoded (the document, `versions`, `time`, `dist-tags`). */
  readonly #keys = new Array<string>(MAX_NESTING_DEPTH + 1).fill('')
  /** The current key of each manifest, `dist` or `scripts` depth, as a known-keys.ts id. */
  readonly #keyIds = new Uint8Array(MAX_NESTING_DEPTH + 1)

  #inKey = false
  #stringStart = 0
  #stringFlags = 0
  #unicodeCount = 0
  #numberState = N_MINUS
  #literal: Uint8Array = LITERALS[0]
  #literalPos = 0
  #ended = false
  #failed: ServiceError | undefined

  readonly #members = new Map<string, Member>()
  #versions = new Map<string, VersionEntry>()
  #time = new Map<string, Member>()
  #distTags = new Map<string, Member>()
  #version: VersionEntry | undefined
  #versionCount = 0
  #artifactCount = 0
  /** Members of `versions` seen so far (duplicates included): the next entry's ordinal. */
  #versionOrdinal = 0
  /** The previous member of the current manifest was pooled. */
  #previousPooled = false
  /** The chunk being scanned and its position in the document. */
  #chunk: Uint8Array = new Uint8Array(0)
  #chunkBase = 0
  /** PackumentIndex.manifestName. */
  #manifestName: string | undefined
  /** INSTALL_SCRIPT_KEYS bits of the current `scripts` object whose (last) value is truthy. */
  #installScripts = 0
  #pool = new Int32Array(1024)
  #poolLength = 0

  constructor(options: ScannerOptions = {}) {
    this.#limits = options.limits ?? NO_STRUCTURE_LIMITS
    this.#recordMembers = options.recordMembers ?? true
    this.#recordTrust = options.recordTrust ?? false
    this.#readScripts = this.#recordMembers || (options.recordScripts ?? false)
    this.#recordSlices = options.recordSlices ?? false
    this.#roles[0] = R_DOCUMENT
  }

  /** Bytes pushed so far. */
  get byteLength(): number { return this.#source.byteLength }

  /** Scans the next chunk. The scanner keeps it by reference: do not reuse it. */
  push(chunk: Uint8Array): void {
    if (this.#failed !== undefined) throw this.#failed
    if (this.#ended) throw new ServiceError('INTERNAL', { message: 'push after end' })
    if (chunk.byteLength === 0) return
    const base = this.#source.byteLength
    if (base + chunk.byteLength > MAX_DOCUMENT_BYTES) {
      throw this.#fail(new ServiceError('STRUCTURE_LIMIT', { data: { limit: 'documentBytes', value: base + chunk.byteLength } }))
    }
    this.#source.append(chunk)
    try {
      if (!this.#utf8.push(chunk)) throw decodeError(base, 'not UTF-8')
      this.#scan(chunk, base)
    } catch (error) {
      throw this.#fail(error)
    }
  }

  /** Ends the document and returns its index. */
  end(): PackumentIndex {
    if (this.#failed !== undefined) throw this.#failed
    this.#ended = true
    if (this.#state !== S_DONE) throw this.#fail(decodeError(this.#source.byteLength, 'truncated document'))
    if (!this.#utf8.end()) throw this.#fail(decodeError(this.#source.byteLength, 'not UTF-8'))
    return {
      source: this.#source,
      byteLength: this.#source.byteLength,
      members: this.#members,
      versions: this.#versions,
      time: this.#time,
      distTags: this.#distTags,
      // A copy of exact size, so the doubling slack is not held until render.
      memberPool: this.#pool.slice(0, this.#poolLength),
      membersRecorded: this.#recordMembers,
      manifestName: this.#manifestName,
    }
  }

  #fail(error: unknown): unknown {
    this.#failed = error instanceof ServiceError ? error : new ServiceError('UPSTREAM_DECODE', { cause: error })
    return this.#failed
  }

  /**
   * The scan of one chunk: one loop over its bytes, a switch on the state.
   * It stays one long method on purpose (issue 28, CPU time against the
   * inline loop on the typescript packument): with its rarer states (a
   * colon after space, an escape, a number, a literal) in a method of their
   * own it scanned 10-15% slower, with only the start of a number or a
   * literal in one 5% slower; a container's close (#closed) costs nothing.
   */
  #scan(buf: Uint8Array, base: number): void {
    this.#chunk = buf
    this.#chunkBase = base
    const n = buf.length
    const roles = this.#roles
    const types = this.#types
    // Hot state lives in locals; it is written back before any call that reads it.
    let state = this.#state
    let depth = this.#depth
    let role = roles[depth]!
    let flags = this.#stringFlags
    let inKey = this.#inKey
    let stringStart = this.#stringStart
    let i = 0
    let c = 0
    while (i < n) {
      switch (state) {
        case S_STRING: {
          // The hot loop: most of a packument's bytes are inside strings.
          // Four bytes a step while they are all plain, then one at a time.
          while (i + 4 <= n && (STRING_PLAIN[buf[i]!]! & STRING_PLAIN[buf[i + 1]!]! & STRING_PLAIN[buf[i + 2]!]! & STRING_PLAIN[buf[i + 3]!]!) === 1) i += 4
          while (i < n && STRING_PLAIN[buf[i]!] === 1) i++
          if (i >= n) break
          c = buf[i]!
          if (c === 0x22) {
            i++
            if (inKey) {
              if (role !== R_OTHER) this.#onKey(depth, stringStart, base + i, flags, buf, base)
              state = S_COLON
              // The colon nearly always follows at once.
              while (i < n) {
                c = buf[i]!
                if (c === 0x3a) { i++; state = S_VALUE; break }
                if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) { i++; continue }
                throw decodeError(base + i, 'expected :')
              }
            } else {
              if (role !== R_OTHER) this.#onValueEnd(depth, base + i, flags)
              state = S_AFTER
              // A comma and the next key nearly always follow in an object; take them here.
              if (i + 1 < n && buf[i] === 0x2c && types[depth] === T_OBJECT) {
                let j = i + 1
                c = buf[j]!
                while (c === 0x20 && j + 1 < n) c = buf[++j]!
                if (c === 0x22) {
                  inKey = true
                  flags = 0
                  stringStart = base + j
                  state = S_STRING
                  i = j + 1
                }
              }
            }
          } else if (c === 0x5c) {
            flags |= F_ESCAPE
            state = S_ESCAPE
            i++
          } else if (c < 0x20) {
            throw decodeError(base + i, 'control character in a string')
          } else {
            flags |= F_HIGH
            i++
          }
          break
        }
        case S_AFTER: {
          c = buf[i]!
          if (c === 0x2c) {
            i++
            if (types[depth] === T_ARRAY) {
              state = S_VALUE
              break
            }
            // A key nearly always follows at once.
            while (i < n) {
              c = buf[i]!
              if (c === 0x22) {
                inKey = true
                flags = 0
                stringStart = base + i
                state = S_STRING
                i++
                break
              }
              if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) { i++; continue }
              throw decodeError(base + i, 'expected a key')
            }
            if (state !== S_STRING) state = S_KEY
          } else if (c === 0x7d || c === 0x5d) {
            if (types[depth] !== (c === 0x7d ? T_OBJECT : T_ARRAY)) throw decodeError(base + i, 'mismatched closer')
            i++
            role = roles[--depth]!
            state = this.#closed(depth, role, base + i, flags)
          } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            i++
          } else {
            throw decodeError(base + i, 'expected , or a closer')
          }
          break
        }
        case S_KEY:
        case S_OBJECT_FIRST: {
          c = buf[i]!
          if (c === 0x22) {
            inKey = true
            flags = 0
            stringStart = base + i
            state = S_STRING
            i++
          } else if (c === 0x7d && state === S_OBJECT_FIRST) {
            i++
            role = roles[--depth]!
            state = this.#closed(depth, role, base + i, flags)
          } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            i++
          } else {
            throw decodeError(base + i, 'expected a key')
          }
          break
        }
        case S_COLON: {
          c = buf[i]!
          if (c === 0x3a) {
            state = S_VALUE
            i++
          } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            i++
          } else {
            throw decodeError(base + i, 'expected :')
          }
          break
        }
        case S_ARRAY_FIRST:
        case S_VALUE: {
          c = buf[i]!
          if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
            i++
            // Whitespace before a value is usually one byte; take the value here.
            if (i >= n) break
            c = buf[i]!
            if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break
          }
          if (c === 0x5d && state === S_ARRAY_FIRST) {
            i++
            role = roles[--depth]!
            state = this.#closed(depth, role, base + i, flags)
            break
          }
          if (role !== R_OTHER) {
            this.#valueStart[depth] = base + i
            this.#valueFirst[depth] = c
          }
          if (c === 0x22) {
            if (role !== R_OTHER && role <= R_VERSIONS) this.#onScalarStart(depth, base + i)
            inKey = false
            flags = 0
            stringStart = base + i
            state = S_STRING
            i++
          } else if (c === 0x7b || c === 0x5b) {
            const isObject = c === 0x7b
            const child = role === R_OTHER ? R_OTHER : this.#childRole(depth, isObject, base + i)
            if (depth === MAX_NESTING_DEPTH) {
              throw new ServiceError('STRUCTURE_LIMIT', { data: { limit: 'nestingDepth', value: depth + 1 } })
            }
            depth++
            types[depth] = isObject ? T_OBJECT : T_ARRAY
            roles[depth] = child
            role = child
            state = isObject ? S_OBJECT_FIRST : S_ARRAY_FIRST
            i++
          } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
            if (role !== R_OTHER && role <= R_VERSIONS) this.#onScalarStart(depth, base + i)
            this.#numberState = c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT
            state = S_NUMBER
            i++
          } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
            if (role !== R_OTHER && role <= R_VERSIONS) this.#onScalarStart(depth, base + i)
            this.#literal = LITERALS[c === 0x74 ? 0 : c === 0x66 ? 1 : 2]
            this.#literalPos = 1
            state = S_LITERAL
            i++
          } else {
            throw decodeError(base + i, 'expected a value')
          }
          break
        }
        case S_ESCAPE: {
          c = buf[i]!
          if (c === 0x75) {
            this.#unicodeCount = 0
            state = S_UNICODE
          } else if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) {
            state = S_STRING
          } else {
            throw decodeError(base + i, 'invalid escape')
          }
          i++
          break
        }
        case S_UNICODE: {
          c = buf[i]!
          if (HEX[c] !== 1) throw decodeError(base + i, 'invalid \\u escape')
          i++
          if (++this.#unicodeCount === 4) state = S_STRING
          break
        }
        case S_NUMBER: {
          const end = this.#number(buf, i, base)
          i = end < 0 ? n : end
          if (end >= 0) {
            state = S_AFTER
            if (role !== R_OTHER) this.#onValueEnd(depth, base + i, flags)
          }
          break
        }
        case S_LITERAL: {
          const literal = this.#literal
          c = buf[i]!
          if (c !== literal[this.#literalPos]) throw decodeError(base + i, 'invalid literal')
          i++
          if (++this.#literalPos === literal.length) {
            state = S_AFTER
            if (role !== R_OTHER) this.#onValueEnd(depth, base + i, flags)
          }
          break
        }
        case S_DONE: {
          c = buf[i]!
          if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++
          else throw decodeError(base + i, 'data after the document')
          break
        }
        default:
          throw new ServiceError('INTERNAL', { message: `scanner state ${state}` })
      }
    }
    this.#state = state
    this.#depth = depth
    this.#stringFlags = flags
    this.#inKey = inKey
    this.#stringStart = stringStart
  }

  /**
   * A container just closed at `end`, leaving `depth` (its parent's): the
   * document ends at depth 0; else the container was the value of its
   * parent's current member. Returns the state that follows.
   */
  #closed(depth: number, role: number, end: number, flags: number): number {
    if (depth === 0) return S_DONE
    if (role !== R_OTHER) this.#onValueEnd(depth, end, flags)
    return S_AFTER
  }

  /**
   * Consumes number bytes from `i`. Returns the offset of the first byte that
   * is not part of the number (the number ended there), or -1 when the chunk
   * ended inside it.
   */
  #number(buf: Uint8Array, i: number, base: number): number {
    const n = buf.length
    let ns = this.#numberState
    while (i < n) {
      const c = buf[i]!
      const digit = c >= 0x30 && c <= 0x39
      switch (ns) {
        case N_INT:
        case N_FRACTION:
        case N_EXPONENT:
          if (digit) break
          if (ns === N_INT && c === 0x2e) { ns = N_DOT; break }
          if (ns !== N_EXPONENT && (c === 0x65 || c === 0x45)) { ns = N_E; break }
          return i
        case N_ZERO:
          if (c === 0x2e) { ns = N_DOT; break }
          if (c === 0x65 || c === 0x45) { ns = N_E; break }
          if (digit) throw decodeError(base + i, 'leading zero')
          return i
        case N_MINUS:
          if (!digit) throw decodeError(base + i, 'invalid number')
          ns = c === 0x30 ? N_ZERO : N_INT
          break
        case N_DOT:
          if (!digit) throw decodeError(base + i, 'invalid number')
          ns = N_FRACTION
          break
        case N_E:
          if (c === 0x2b || c === 0x2d) { ns = N_E_SIGN; break }
          if (!digit) throw decodeError(base + i, 'invalid number')
          ns = N_EXPONENT
          break
        default: // N_E_SIGN
          if (!digit) throw decodeError(base + i, 'invalid number')
          ns = N_EXPONENT
      }
      i++
    }
    this.#numberState = ns
    return -1
  }

  /**
   * A key of a tracked container ended at `end`. Inside manifests, `dist`
   * and `scripts`, where thousands of keys repeat, a key is only matched
   * against the known names by its bytes (known-keys.ts); elsewhere it is
   * decoded.
   */
  #onKey(depth: number, start: number, end: number, flags: number, buf: Uint8Array, base: number): void {
    this.#keyStart[depth] = start
    const role = this.#roles[depth]
    if (role === R_MANIFEST || role === R_DIST || role === R_SCRIPTS || role === R_NPM_USER || role === R_ATTESTATIONS) {
      const from = start + 1 - base
      this.#keyIds[depth] = (flags & F_ESCAPE) === 0 && from >= 0
        ? knownKeyId(buf, from, end - 1 - base)
        : knownKeyIdOf(this.#source.jsonString(start, end, flags === 0))
      return
    }
    this.#keys[depth] = this.#source.jsonString(start, end, flags === 0)
  }

  /** Role of an object or array opening as the value of the current member. */
  #childRole(depth: number, isObject: boolean, at: number): number {
    const role = this.#roles[depth]!
    if (role === R_DOCUMENT) {
      if (!isObject) throw decodeError(at, 'the document is not an object')
      return R_TOP
    }
    const key = this.#keys[depth]!
    switch (role) {
      case R_TOP:
        if (key === 'versions') {
          if (!isObject) throw decodeError(at, 'versions is not an object')
          this.#versions = new Map()
          this.#versionOrdinal = 0
          this.#versionCount = 0
          this.#artifactCount = 0
          return R_VERSIONS
        }
        if (key === 'time' && isObject) { this.#time = new Map(); return R_TIME }
        if (key === 'dist-tags' && isObject) { this.#distTags = new Map(); return R_TAGS }
        return R_OTHER
      case R_VERSIONS: {
        if (!isObject) throw decodeError(at, 'a version manifest is not an object')
        const entry = new VersionEntry(key)
        entry.keyStart = this.#keyStart[depth]!
        entry.valueStart = at
        entry.memberFirst = this.#poolLength / MEMBER_STRIDE
        entry.ordinal = this.#versionOrdinal++
        this.#previousPooled = false
        this.#version = entry
        return R_MANIFEST
      }
      case R_MANIFEST: {
        if (!isObject) return R_OTHER
        const id = this.#keyIds[depth]
        if (id === KEY_DIST) {
          // A repeated `dist` replaces the earlier one whole, as JSON.parse does: nothing of it may stand.
          clearDist(this.#version!)
          return R_DIST
        }
        if (id === KEY_NPM_USER && this.#recordTrust) {
          // A repeated `_npmUser` replaces the earlier one whole.
          this.#version!.flags &= ~VERSION_TRUSTED_PUBLISHER
          return R_NPM_USER
        }
        // Only the abbreviated form and DenyIfInstallScriptAdded read scripts.
        if (id !== KEY_SCRIPTS || !this.#readScripts) return R_OTHER
        this.#installScripts = 0
        return R_SCRIPTS
      }
      case R_DIST: {
        if (!isObject || !this.#recordTrust || this.#keyIds[depth] !== KEY_ATTESTATIONS) return R_OTHER
        this.#version!.flags &= ~VERSION_PROVENANCE
        return R_ATTESTATIONS
      }
      default:
        return R_OTHER
    }
  }

  /** A scalar starts as the value of a member of a tracked container. */
  #onScalarStart(depth: number, at: number): void {
    const role = this.#roles[depth]
    if (role === R_DOCUMENT) throw decodeError(at, 'the document is not an object')
    if (role === R_VERSIONS) throw decodeError(at, 'a version manifest is not an object')
    if (role === R_TOP && this.#keys[depth] === 'versions') throw decodeError(at, 'versions is not an object')
  }

  /** The value of the current member of a tracked container ended at `end`. */
  #onValueEnd(depth: number, end: number, flags: number): void {
    const role = this.#roles[depth]
    const key = this.#keys[depth]!
    const valueStart = this.#valueStart[depth]!
    switch (role) {
      case R_TOP: {
        this.#members.set(key, this.#member(depth, key, valueStart, end, flags))
        // A repeated `time` or `dist-tags` that is no object replaces the object a client would otherwise read.
        if (this.#valueFirst[depth] !== 0x7b) {
          if (key === 'time') this.#time = new Map()
          else if (key === 'dist-tags') this.#distTags = new Map()
        }
        return
      }
      case R_TIME: {
        // Held until render: share the version's own string rather than keep a second copy.
        const shared = this.#versions.get(key)?.version ?? key
        this.#time.set(shared, this.#member(depth, shared, valueStart, end, flags))
        return
      }
      case R_TAGS:
        this.#distTags.set(key, this.#member(depth, key, valueStart, end, flags))
        return
      case R_VERSIONS: {
        const entry = this.#version!
        entry.valueEnd = end
        entry.memberCount = this.#poolLength / MEMBER_STRIDE - entry.memberFirst
        this.#versions.set(key, entry)
        if (++this.#versionCount > this.#limits.maxVersionCount) {
          throw new ServiceError('STRUCTURE_LIMIT', { data: { limit: 'maxVersionCount', value: this.#versionCount } })
        }
        return
      }
      case R_MANIFEST: {
        const id = this.#keyIds[depth]!
        if (id === KEY_NAME || id === KEY_VERSION || id === KEY_DIST || id === KEY_SCRIPTS) {
          // The last one wins, as in JSON.parse: the merge and render use what a client will read.
          const first = this.#valueFirst[depth]
          const isString = first === 0x22
          const entry = this.#version!
          if (id === KEY_NAME) {
            entry.nameStart = isString ? valueStart : NOT_A_STRING
            entry.nameEnd = isString ? end : NOT_A_STRING
            entry.namePlain = isString && flags === 0
            if (isString) this.#manifestName ??= this.#source.jsonString(valueStart, end, flags === 0)
            entry.nameIsCommon = isString && flags === 0 && this.#plainTokenIs(valueStart, end, this.#manifestName!)
          } else if (id === KEY_VERSION) {
            entry.versionStart = isString ? valueStart : NOT_A_STRING
            entry.versionEnd = isString ? end : NOT_A_STRING
            entry.versionPlain = isString && flags === 0
            entry.versionIsKey = isString && flags === 0 && this.#plainTokenIs(valueStart, end, entry.version)
          } else if (id === KEY_DIST) {
            if (first !== 0x7b) clearDist(entry)
          } else if (first === 0x7b && this.#readScripts && this.#installScripts !== 0) {
            entry.flags |= VERSION_HAS_INSTALL_SCRIPT
          } else {
            entry.flags &= ~VERSION_HAS_INSTALL_SCRIPT
          }
        }
        if (this.#recordSlices && (id === KEY_SCRIPTS || id === KEY_DEPENDENCIES || id === KEY_OPTIONAL_DEPENDENCIES || id === KEY_PEER_DEPENDENCIES)) {
          recordSlice(this.#version!, id, this.#valueFirst[depth] === 0x7b ? valueStart : -1, end)
        }
        if (id === KEY_NPM_USER && this.#valueFirst[depth] !== 0x7b) this.#version!.flags &= ~VERSION_TRUSTED_PUBLISHER
        else if (id === KEY_HAS_INSTALL_SCRIPT && this.#readScripts) {
          // npm's minifier writes `hasInstallScript: true`; the value counts, as JSON.parse keeps the last.
          if (this.#valueFirst[depth] === 0x74) this.#version!.flags |= VERSION_DECLARES_INSTALL_SCRIPT
          else this.#version!.flags &= ~VERSION_DECLARES_INSTALL_SCRIPT
        }
        // Only the abbreviated form reads the other manifest members.
        if (!this.#recordMembers) return
        const code = MANIFEST_CODES[id]!
        if (code === K_DROP) {
          // Never rendered: not worth its 16 bytes.
          this.#previousPooled = false
          return
        }
        if (code === K_HAS_INSTALL_SCRIPT) this.#version!.flags |= VERSION_HAS_INSTALL_SCRIPT_MEMBER
        else if (code === K_BUNDLE_DEPENDENCIES) this.#version!.flags |= VERSION_HAS_BUNDLE_DEPENDENCIES
        const kind = code === K_BUNDLED ? MEMBER_BUNDLED : MEMBER_KEEP
        this.#poolPush(this.#keyStart[depth]!, valueStart, end, this.#previousPooled ? kind | MEMBER_ADJACENT : kind)
        this.#previousPooled = true
        return
      }
      case R_DIST: {
        const isString = this.#valueFirst[depth] === 0x22
        const plain = isString && flags === 0
        const entry = this.#version!
        const id = this.#keyIds[depth]
        if (id === KEY_TARBALL) {
          if (!isString) { entry.tarballStart = -1; entry.tarballEnd = -1; return }
          if (!entry.artifactCounted) {
            entry.artifactCounted = true
            if (++this.#artifactCount > this.#limits.maxArtifactCount) {
              throw new ServiceError('STRUCTURE_LIMIT', { data: { limit: 'maxArtifactCount', value: this.#artifactCount } })
            }
          }
          entry.tarballStart = valueStart
          entry.tarballEnd = end
          entry.tarballPlain = plain
        } else if (id === KEY_INTEGRITY) {
          entry.integrityStart = isString ? valueStart : -1
          entry.integrityEnd = isString ? end : -1
          entry.integrityPlain = plain
        } else if (id === KEY_SHASUM) {
          entry.shasumStart = isString ? valueStart : -1
          entry.shasumEnd = isString ? end : -1
          entry.shasumPlain = plain
        } else if (id === KEY_ATTESTATIONS && this.#valueFirst[depth] !== 0x7b) {
          entry.flags &= ~VERSION_PROVENANCE
        }
        return
      }
      case R_NPM_USER:
        if (this.#keyIds[depth] === KEY_TRUSTED_PUBLISHER) this.#flagTruthy(depth, valueStart, end, VERSION_TRUSTED_PUBLISHER)
        return
      case R_ATTESTATIONS:
        if (this.#keyIds[depth] === KEY_PROVENANCE) this.#flagTruthy(depth, valueStart, end, VERSION_PROVENANCE)
        return
      case R_SCRIPTS: {
        const bit = INSTALL_SCRIPT_KEYS[this.#keyIds[depth]!]!
        if (bit === 0) return
        // Judged when the `scripts` object ends (R_MANIFEST), by each script's last value.
        if (this.#truthy(depth, valueStart, end)) this.#installScripts |= bit
        else this.#installScripts &= ~bit
        return
      }
      default:
        return
    }
  }

  /**
   * Whether the value [valueStart, end) just scanned is truthy as JavaScript
   * reads it (npm's minifier and pnpm's trust check both test truthiness): a
   * non-empty string, any object, array or true, a number other than 0.
   */
  #truthy(depth: number, valueStart: number, end: number): boolean {
    const first = this.#valueFirst[depth]!
    return first === 0x22 ? end - valueStart > 2 : first === 0x7b || first === 0x5b || first === 0x74 ||
      ((first === 0x2d || (first >= 0x30 && first <= 0x39)) && Number(this.#source.ascii(valueStart, end)) !== 0)
  }

  #flagTruthy(depth: number, valueStart: number, end: number, flag: number): void {
    if (this.#truthy(depth, valueStart, end)) this.#version!.flags |= flag
    else this.#version!.flags &= ~flag
  }

  /**
   * Whether the plain string token [start, end) just scanned is `text`: read
   * here, where its bytes are in the chunk at hand, rather than found again
   * by the merge (false also when it cannot tell; the merge decodes then).
   */
  #plainTokenIs(start: number, end: number, text: string): boolean {
    if (end - start - 2 !== text.length) return false
    // Nearly always the token lies in the chunk being scanned; else it is found in the source.
    let chunk: Uint8Array | undefined = this.#chunk
    let at = start + 1 - this.#chunkBase
    if (at <= 0) {
      chunk = this.#source.within(start, end)
      if (chunk === undefined) return false
      at = this.#source.chunkOffset + 1
    }
    for (let k = 0; k < text.length; k++) if (chunk[at + k] !== text.charCodeAt(k)) return false
    return true
  }

  #member(depth: number, key: string, valueStart: number, valueEnd: number, flags: number): Member {
    return {
      key,
      keyStart: this.#keyStart[depth]!,
      valueStart,
      valueEnd,
      plain: flags === 0 && this.#valueFirst[depth] === 0x22,
    }
  }

  #poolPush(keyStart: number, valueStart: number, valueEnd: number, code: number): void {
    if (this.#poolLength + MEMBER_STRIDE > this.#pool.length) {
      const grown = new Int32Array(this.#pool.length * 2)
      grown.set(this.#pool)
      this.#pool = grown
    }
    const pool = this.#pool
    const at = this.#poolLength
    pool[at] = keyStart
    pool[at + 1] = valueStart
    pool[at + 2] = valueEnd
    pool[at + 3] = code
    this.#poolLength = at + MEMBER_STRIDE
  }
}

/** Forgets a manifest's `dist` values: a later `dist` member replaces the earlier one whole. */
function clearDist(entry: VersionEntry): void {
  entry.flags &= ~VERSION_PROVENANCE
  entry.tarballStart = -1
  entry.tarballEnd = -1
  entry.tarballPlain = false
  entry.integrityStart = -1
  entry.integrityEnd = -1
  entry.integrityPlain = false
  entry.shasumStart = -1
  entry.shasumEnd = -1
  entry.shasumPlain = false
}

/** Notes the last `scripts` or dependency list of a manifest (start -1: not an object, so none). */
function recordSlice(entry: VersionEntry, id: number, start: number, end: number): void {
  const to = start === -1 ? -1 : end
  if (id === KEY_SCRIPTS) {
    entry.scriptsStart = start
    entry.scriptsEnd = to
  } else if (id === KEY_DEPENDENCIES) {
    entry.dependenciesStart = start
    entry.dependenciesEnd = to
  } else if (id === KEY_OPTIONAL_DEPENDENCIES) {
    entry.optionalDependenciesStart = start
    entry.optionalDependenciesEnd = to
  } else {
    entry.peerDependenciesStart = start
    entry.peerDependenciesEnd = to
  }
}

/** Scans a whole document given as chunks. */
export function scanPackument(chunks: Iterable<Uint8Array>, options?: ScannerOptions): PackumentIndex {
  const scanner = new PackumentScanner(options)
  for (const chunk of chunks) scanner.push(chunk)
  return scanner.end()
}
