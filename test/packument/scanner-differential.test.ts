/**
 * Differential fuzz of the packument scanner, merge and render against what
 * a client reads: JSON.parse of the same bytes, and the reference merge
 * (engine/packument/reference.ts) over it. Random packuments (escapes,
 * surrogates, duplicate keys, deep nesting, huge numbers, odd whitespace,
 * aliases of version keys) and byte mutations of them (a BOM, cut, doubled
 * or foreign bytes) must get:
 *
 * - the same accept/reject decision: what JSON.parse refuses the engine
 *   refuses; the engine refuses more only where it says so (a document,
 *   `versions` or a manifest that is not an object, nesting past
 *   MAX_NESTING_DEPTH, bytes that are not UTF-8), each checked here on a
 *   parse that keeps every duplicate key;
 * - the same gate questions: the versions judged and the publish time each
 *   is judged with are those the reference reads from JSON.parse (duplicate
 *   keys: the LAST one, as the client reads it);
 * - the same selected records (tarball, integrity, shasum) as a client's
 *   JSON.parse of the public document reads them;
 * - the same documents, compared as JSON.parse reads the engine's body
 *   (full and abbreviated forms).
 *
 * Seeded and bounded in time: `FUZZ_SECONDS` (default 2) and `FUZZ_SEED`;
 * `npm run fuzz` runs it longer. A failure prints the seed, the case number
 * and the documents.
 */
import t from 'tap'
import { canonicalVersion } from '../../engine/npm/canonical-version.js'
import { isServiceError } from '../../engine/errors.js'
import { runPackumentPipeline, type PackumentOutcome } from '../../engine/packument/pipeline.js'
import { referenceMerge } from '../../engine/packument/reference.js'
import { MAX_NESTING_DEPTH } from '../../engine/packument/scanner.js'
import { decodeFilename, tarballFilenameSegment } from '../../engine/packument/tarball-url.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { fuzzBudget, seededRandom, type Random } from '../helpers/fuzz.js'
import { decision } from './helpers.js'

const BASE = 'http://proxy.test:4873'

// ---------------------------------------------------------------- a JSON tree that keeps duplicate keys

type Node =
  | { readonly t: 'obj'; readonly m: Array<[string, Node]> }
  | { readonly t: 'arr'; readonly v: Node[] }
  | { readonly t: 'str'; readonly v: string }
  | { readonly t: 'raw'; readonly v: string } // a number or a literal, as written

const str = (v: string): Node => ({ t: 'str', v })
const raw = (v: string): Node => ({ t: 'raw', v })
const obj = (m: Array<[string, Node]>): Node => ({ t: 'obj', m })
const arr = (v: Node[]): Node => ({ t: 'arr', v })

const pick = <T>(rnd: Random, items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!
const chance = (rnd: Random, p: number): boolean => rnd() < p
const int = (rnd: Random, n: number): number => Math.floor(rnd() * n)

// ---------------------------------------------------------------- generator

const NAMES = ['p', '@s/p', 'Up.x', "o'k"]
const VERSIONS = [
  '1.0.0', '1.0.1', '1.1.0', '2.0.0', '2.0.0-rc.1', '3.0.0', '10.0.0', '0.0.0-0', '1.0.0-alpha.beta',
  '01.0.0', '1.00.0', '=1.0.0', 'v1.0.0', 'V1.0.0', '1.0.0+b', '1.0.0-rc.1+b', ' 1.0.0', '1.0.0 ', '=v2.0.0', 'v 2.0.0',
  '1.0', '1', 'banana', '', '__proto__', 'constructor', '99999999999999999.0.0', '1.0.0-01', '1.0.0-\u00e9', '\ud83d\ude00',
]
const DATES = [
  '2020-01-02T00:00:00.000Z', '2020-01-03T04:05:06Z', '2031-12-31T23:59:59.999Z', '2020-02-30T00:00:00.000Z',
  '2020-01-02', '2020-01-02T00:00:00.000+01:00', 'yesterday', '', '0999-01-01T00:00:00.000Z', '2020-13-01T00:00:00.000Z',
  '2020-01-29T00:00:00.000Z', '+002020-01-02T00:00:00.000Z', '2020-01-02T00:00:00.0000Z',
]
const NUMBERS = ['0', '-0', '1', '0.5', '-1.5e-3', '1e400', '-1e400', '1E+2', '123456789012345678901234567890', '1e-400', '0.0', '5e-324']
const URLS = [
  'https://upstream.test/p/-/p-1.0.0.tgz', 'https://upstream.test/@s/p/-/p-2.0.0.tgz?token=x#frag', 'https://upstream.test/p/-/%C3%BCn%C3%AF-1.0.0.tgz',
  'https://upstream.test/p/-/', 'https://upstream.test', 'p-1.0.0.tgz', 'https://upstream.test/p/-/p%-1.0.0.tgz', '', '/a/b/\u00e9 x.tgz',
  'https://upstream.test/p/-/p-1.0.0.tgz?', 'https://upstream.test/p/-/a"b.tgz',
]

function scalar(rnd: Random): Node {
  switch (int(rnd, 6)) {
    case 0: return raw(pick(rnd, NUMBERS))
    case 1: return raw(pick(rnd, ['true', 'false', 'null']))
    case 2: return str(pick(rnd, ['', 'x', 'node x.js', '\u0000', '\ud800', '\udc00\ud800', 'a\\b', '\u2028', '\ufeff', '\u00e9\u4e2d\ud83d\ude00']))
    default: return str(pick(rnd, VERSIONS))
  }
}

function junk(rnd: Random, depth: number): Node {
  if (depth <= 0 || chance(rnd, 0.4)) return scalar(rnd)
  if (chance(rnd, 0.5)) return arr(Array.from({ length: int(rnd, 3) }, () => junk(rnd, depth - 1)))
  return obj(Array.from({ length: int(rnd, 3) }, () => [pick(rnd, ['a', 'name', 'version', 'dist', 'tarball', 'x']), junk(rnd, depth - 1)] as [string, Node]))
}

/** A value nested `levels` containers deep (the containers themselves count). */
function nested(levels: number): Node {
  let node: Node = raw('1')
  for (let k = 0; k < levels; k++) node = k % 2 === 0 ? arr([node]) : obj([['k', node]])
  return node
}

function maybe(rnd: Random, p: number, members: Array<[string, Node]>, member: () => [string, Node]): void {
  if (chance(rnd, p)) members.push(member())
}

function distNode(rnd: Random): Node {
  const m: Array<[string, Node]> = []
  maybe(rnd, 0.9, m, () => ['tarball', chance(rnd, 0.9) ? str(pick(rnd, URLS)) : scalar(rnd)])
  maybe(rnd, 0.7, m, () => ['integrity', chance(rnd, 0.9) ? str(`sha512-${pick(rnd, ['abc', 'x/y+z==', '\u00e9'])}`) : scalar(rnd)])
  maybe(rnd, 0.6, m, () => ['shasum', chance(rnd, 0.9) ? str(pick(rnd, ['0123456789abcdef', 'abc'])) : scalar(rnd)])
  maybe(rnd, 0.2, m, () => ['fileCount', raw(pick(rnd, NUMBERS))])
  if (chance(rnd, 0.1)) m.splice(int(rnd, m.length + 1), 0, ['tarball', scalar(rnd)])
  return obj(shuffleSome(rnd, m))
}

function shuffleSome<T>(rnd: Random, items: T[]): T[] {
  if (chance(rnd, 0.7)) return items
  for (let k = items.length - 1; k > 0; k--) {
    const j = int(rnd, k + 1)
    ;[items[k], items[j]] = [items[j]!, items[k]!]
  }
  return items
}

function manifestNode(rnd: Random, name: string, key: string): Node {
  const m: Array<[string, Node]> = []
  const nameValue = (): Node => (chance(rnd, 0.85) ? str(name) : chance(rnd, 0.5) ? str(pick(rnd, NAMES)) : scalar(rnd))
  const versionValue = (): Node => {
    const roll = rnd()
    if (roll < 0.8) return str(key)
    if (roll < 0.88) return str(canonicalVersion(key) ?? key)
    if (roll < 0.94) return str(pick(rnd, VERSIONS))
    return scalar(rnd)
  }
  maybe(rnd, 0.93, m, () => ['name', nameValue()])
  maybe(rnd, 0.93, m, () => ['version', versionValue()])
  maybe(rnd, 0.3, m, () => ['description', scalar(rnd)])
  maybe(rnd, 0.3, m, () => ['dependencies', obj([['a', str('^1.0.0')]])])
  maybe(rnd, 0.3, m, () => ['scripts', obj(shuffleSome(rnd, [
    ['test', scalar(rnd)], [pick(rnd, ['preinstall', 'install', 'postinstall', 'prepare']), chance(rnd, 0.5) ? scalar(rnd) : junk(rnd, 2)],
  ]))])
  maybe(rnd, 0.1, m, () => ['hasInstallScript', scalar(rnd)])
  maybe(rnd, 0.1, m, () => ['bundledDependencies', junk(rnd, 2)])
  maybe(rnd, 0.05, m, () => ['bundleDependencies', junk(rnd, 2)])
  maybe(rnd, 0.1, m, () => ['deprecated', scalar(rnd)])
  maybe(rnd, 0.9, m, () => ['dist', chance(rnd, 0.95) ? distNode(rnd) : junk(rnd, 2)])
  maybe(rnd, 0.2, m, () => ['_npmUser', junk(rnd, 3)])
  maybe(rnd, 0.1, m, () => ['engines', obj([['node', str('>=8')]])])
  // Duplicate keys: the client reads the last one.
  if (chance(rnd, 0.3)) {
    const dup = pick(rnd, ['name', 'version', 'dist', 'scripts', 'bundledDependencies', 'hasInstallScript', 'description'] as const)
    const value = dup === 'name' ? nameValue() : dup === 'version' ? versionValue() : dup === 'dist' ? (chance(rnd, 0.8) ? distNode(rnd) : scalar(rnd))
      : dup === 'scripts' ? (chance(rnd, 0.7) ? obj([['postinstall', scalar(rnd)]]) : scalar(rnd)) : junk(rnd, 2)
    m.splice(int(rnd, m.length + 1), 0, [dup, value])
  }
  return obj(shuffleSome(rnd, m))
}

function packumentNode(rnd: Random, name: string, side: 'private' | 'public'): Node {
  const keys = Array.from({ length: 1 + int(rnd, 6) }, () => pick(rnd, VERSIONS))
  const versions = obj(keys.map((key) => [key, chance(rnd, 0.98) ? manifestNode(rnd, name, key) : junk(rnd, 2)]))
  const time: Array<[string, Node]> = []
  maybe(rnd, 0.8, time, () => ['created', str(pick(rnd, DATES))])
  maybe(rnd, 0.8, time, () => ['modified', chance(rnd, 0.9) ? str(pick(rnd, DATES)) : scalar(rnd)])
  for (const key of keys) maybe(rnd, 0.85, time, () => [chance(rnd, 0.9) ? key : pick(rnd, VERSIONS), chance(rnd, 0.9) ? str(pick(rnd, DATES)) : scalar(rnd)])
  const tags: Array<[string, Node]> = []
  maybe(rnd, 0.8, tags, () => ['latest', chance(rnd, 0.9) ? str(pick(rnd, keys)) : scalar(rnd)])
  maybe(rnd, 0.3, tags, () => [pick(rnd, ['next', 'beta', 'b\u00e9ta', '__proto__']), chance(rnd, 0.9) ? str(pick(rnd, VERSIONS)) : scalar(rnd)])
  const members: Array<[string, Node]> = []
  maybe(rnd, 0.5, members, () => ['_id', str(name)])
  maybe(rnd, 0.97, members, () => ['name', chance(rnd, 0.96) ? str(name) : chance(rnd, 0.5) ? str(pick(rnd, NAMES)) : scalar(rnd)])
  maybe(rnd, 0.9, members, () => ['dist-tags', chance(rnd, 0.95) ? obj(tags) : junk(rnd, 1)])
  maybe(rnd, 0.97, members, () => ['versions', versions])
  maybe(rnd, 0.8, members, () => ['time', chance(rnd, 0.95) ? obj(time) : junk(rnd, 1)])
  maybe(rnd, 0.4, members, () => ['readme', str(`${side} readme`)])
  maybe(rnd, 0.2, members, () => ['modified', chance(rnd, 0.8) ? str(pick(rnd, DATES)) : scalar(rnd)])
  maybe(rnd, 0.2, members, () => [pick(rnd, ['homepage', 'x', '__proto__', 'users']), junk(rnd, 3)])
  maybe(rnd, 0.08, members, () => [pick(rnd, ['policyRestrictions', 'stagedVersions']), obj([['versions', obj([[pick(rnd, VERSIONS), manifestNode(rnd, name, '9.9.9')]])]])])
  maybe(rnd, 0.03, members, () => ['deep', nested(MAX_NESTING_DEPTH - 3 + int(rnd, 5))])
  // Duplicate top-level keys: the client reads the last one.
  if (chance(rnd, 0.25)) {
    const dup = pick(rnd, ['name', 'versions', 'time', 'dist-tags', 'readme', 'modified'] as const)
    const value = dup === 'versions' ? (chance(rnd, 0.85) ? obj(Array.from({ length: int(rnd, 3) }, () => { const k = pick(rnd, VERSIONS); return [k, manifestNode(rnd, name, k)] as [string, Node] })) : junk(rnd, 1))
      : dup === 'time' ? (chance(rnd, 0.6) ? obj([[pick(rnd, keys), str(pick(rnd, DATES))]]) : scalar(rnd))
        : dup === 'dist-tags' ? (chance(rnd, 0.6) ? obj([['latest', str(pick(rnd, keys))]]) : scalar(rnd))
          : dup === 'name' ? (chance(rnd, 0.5) ? str(name) : scalar(rnd)) : scalar(rnd)
    members.splice(int(rnd, members.length + 1), 0, [dup, value])
  }
  return obj(shuffleSome(rnd, members))
}

// ---------------------------------------------------------------- writer: whitespace and escapes in odd places

function ws(rnd: Random): string {
  if (chance(rnd, 0.8)) return ''
  return Array.from({ length: 1 + int(rnd, 3) }, () => pick(rnd, [' ', '\t', '\n', '\r'])).join('')
}

function writeString(rnd: Random, value: string, escapeRate: number): string {
  const hex = (c: number): string => {
    const h = c.toString(16).padStart(4, '0')
    return `\\u${chance(rnd, 0.5) ? h : h.toUpperCase()}`
  }
  let out = '"'
  for (let k = 0; k < value.length; k++) {
    const code = value.charCodeAt(k)
    if (code >= 0xd800 && code <= 0xdbff && k + 1 < value.length && (value.charCodeAt(k + 1) & 0xfc00) === 0xdc00) {
      // A pair: as UTF-8, or as two escapes.
      out += chance(rnd, escapeRate) ? hex(code) + hex(value.charCodeAt(k + 1)) : value.slice(k, k + 2)
      k++
    } else if (code >= 0xd800 && code <= 0xdfff) out += hex(code) // a lone surrogate has no UTF-8 form: only its escape carries it
    else if (code === 0x22) out += chance(rnd, 0.8) ? '\\"' : hex(code)
    else if (code === 0x5c) out += chance(rnd, 0.8) ? '\\\\' : hex(code)
    else if (code < 0x20) out += ({ 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' } as Record<number, string>)[code] ?? hex(code)
    else if (code === 0x2f && chance(rnd, escapeRate)) out += '\\/'
    else if (chance(rnd, escapeRate)) out += hex(code)
    else out += value[k]
  }
  return `${out}"`
}

function write(rnd: Random, node: Node, escapeRate: number): string {
  switch (node.t) {
    case 'raw': return node.v
    case 'str': return writeString(rnd, node.v, escapeRate)
    case 'arr': return `[${ws(rnd)}${node.v.map((v) => `${write(rnd, v, escapeRate)}${ws(rnd)}`).join(`,${ws(rnd)}`)}]`
    case 'obj': return `{${ws(rnd)}${node.m.map(([k, v]) => `${writeString(rnd, k, escapeRate)}${ws(rnd)}:${ws(rnd)}${write(rnd, v, escapeRate)}${ws(rnd)}`).join(`,${ws(rnd)}`)}}`
  }
}

// ---------------------------------------------------------------- mutations of the bytes

const INTERESTING = [0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x22, 0x5c, 0x30, 0x2d, 0x65, 0x2e, 0x20, 0x0a, 0x75, 0xef, 0xbb, 0xbf, 0xc3, 0x80, 0xed, 0xa0, 0xff, 0x00, 0x01, 0x09]

function mutate(rnd: Random, bytes: Uint8Array): Uint8Array {
  let out = Array.from(bytes)
  for (let n = 1 + int(rnd, 3); n > 0; n--) {
    const at = int(rnd, out.length + 1)
    switch (int(rnd, 7)) {
      case 0: if (at < out.length) out[at] = pick(rnd, INTERESTING); break
      case 1: out.splice(at, 1 + int(rnd, 3)); break
      case 2: out.splice(at, 0, pick(rnd, INTERESTING)); break
      case 3: { const from = int(rnd, out.length); out.splice(at, 0, ...out.slice(from, from + 1 + int(rnd, 24))); break }
      case 4: out = [0xef, 0xbb, 0xbf, ...out]; break
      case 5: out = out.slice(0, at); break
      default: if (at < out.length) out[at] = int(rnd, 256)
    }
  }
  return Uint8Array.from(out)
}

// ---------------------------------------------------------------- the oracle's own parse, duplicates kept

class Syntax extends Error {}

/** JSON.parse's grammar (ECMA-262 JSON), keeping every member: what the structure checks read. */
function parseTree(text: string): Node {
  let i = 0
  const space = (): void => { while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++ }
  const fail = (): never => { throw new Syntax(`at ${i}`) }
  const string = (): string => {
    if (text[i] !== '"') fail()
    i++
    let out = ''
    for (;;) {
      if (i >= text.length) fail()
      const c = text[i]!
      if (c === '"') { i++; return out }
      if (c.charCodeAt(0) < 0x20) fail()
      if (c !== '\\') { out += c; i++; continue }
      const e = text[i + 1]
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }
      if (e !== undefined && e in simple) { out += simple[e]; i += 2; continue }
      if (e !== 'u' || !/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail()
      out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16))
      i += 6
    }
  }
  const value = (): Node => {
    space()
    const c = text[i]
    if (c === '{') {
      i++
      const m: Array<[string, Node]> = []
      space()
      if (text[i] === '}') { i++; return obj(m) }
      for (;;) {
        space()
        const key = string()
        space()
        if (text[i] !== ':') fail()
        i++
        m.push([key, value()])
        space()
        if (text[i] === ',') { i++; continue }
        if (text[i] === '}') { i++; return obj(m) }
        fail()
      }
    }
    if (c === '[') {
      i++
      const v: Node[] = []
      space()
      if (text[i] === ']') { i++; return arr(v) }
      for (;;) {
        v.push(value())
        space()
        if (text[i] === ',') { i++; continue }
        if (text[i] === ']') { i++; return arr(v) }
        fail()
      }
    }
    if (c === '"') return str(string())
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400))
    if (literal === null || literal[0] === '') fail()
    i += literal![0].length
    return raw(literal![0])
  }
  const root = value()
  space()
  if (i !== text.length) fail()
  return root
}

function depthOf(node: Node): number {
  if (node.t === 'obj') return 1 + Math.max(0, ...node.m.map(([, v]) => depthOf(v)))
  if (node.t === 'arr') return 1 + Math.max(0, ...node.v.map(depthOf))
  return 0
}

/** Why the engine may refuse a document JSON.parse accepts (its documented refusals), or undefined. */
function structuralRefusal(root: Node): string | undefined {
  if (depthOf(root) > MAX_NESTING_DEPTH) return 'nesting'
  if (root.t !== 'obj') return 'document not an object'
  for (const [key, value] of root.m) {
    if (key !== 'versions') continue
    if (value.t !== 'obj') return 'versions not an object'
    if (value.m.some(([, manifest]) => manifest.t !== 'obj')) return 'manifest not an object'
  }
  return undefined
}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const own = (o: Json, k: string): unknown => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined)

/** A value with objects as sorted entry lists, so two values compare whatever their key order (`__proto__` included). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (isObject(value)) return Object.keys(value).sort().map((k) => [k, canonical(value[k])])
  if (typeof value === 'number' && Object.is(value, -0)) return '-0'
  return value
}

// ---------------------------------------------------------------- one case

/** A deterministic verdict that reads the publish time, as the quarantine does. */
function admits(version: string, ms: number | null): boolean {
  let h = 7
  for (let k = 0; k < version.length; k++) h = (h * 31 + version.charCodeAt(k)) | 0
  if ((h & 3) === 0) return false
  return (ms !== null && ms < Date.UTC(2025, 0, 1)) || (h & 3) === 1
}

function gate(calls: Array<[string, number | null]>): (facts: VersionFacts) => Decision {
  return (facts) => {
    const time = facts.publishedAt?.getTime()
    const ms = time === undefined || Number.isNaN(time) ? null : time
    calls.push([facts.version, ms])
    return decision(admits(facts.version, ms) ? 'admit' : 'deny')
  }
}

type Side = { readonly bytes: Uint8Array; readonly text: string | undefined; readonly verdict: 'ok' | 'reject'; readonly why: string; readonly value: unknown }

function judge(bytes: Uint8Array): Side {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return { bytes, text: undefined, verdict: 'reject', why: 'not UTF-8', value: undefined }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // The oracle's own parse must agree that it is no JSON.
    let tree = true
    try { parseTree(text) } catch (error) { if (error instanceof Syntax) tree = false; else throw error }
    if (tree) throw new Error('oracle: parseTree accepts what JSON.parse refuses')
    return { bytes, text, verdict: 'reject', why: 'JSON.parse refuses', value: undefined }
  }
  const refusal = structuralRefusal(parseTree(text))
  if (refusal !== undefined) return { bytes, text, verdict: 'reject', why: refusal, value }
  return { bytes, text, verdict: 'ok', why: '', value }
}

function chunksOf(rnd: Random, bytes: Uint8Array): Uint8Array[] {
  if (bytes.length > 0 && bytes.length < 400 && chance(rnd, 0.1)) return Array.from(bytes, (_, k) => bytes.subarray(k, k + 1))
  const cuts = Array.from({ length: int(rnd, 5) }, () => int(rnd, bytes.length + 1)).sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let from = 0
  for (const cut of [...cuts, bytes.length]) { out.push(bytes.slice(from, cut)); from = cut }
  return out
}

interface Expectation { readonly failures: string[] }

function runCase(rnd: Random, name: string, priv: Side | undefined, pub: Side | undefined, abbreviated: boolean, problems: Expectation): void {
  const engineCalls: Array<[string, number | null]> = []
  let outcome: PackumentOutcome | undefined
  let error: unknown
  try {
    outcome = runPackumentPipeline(
      { packageName: name, baseUrl: BASE, abbreviated, decide: gate(engineCalls) },
      priv === undefined ? undefined : chunksOf(rnd, priv.bytes),
      pub === undefined ? undefined : chunksOf(rnd, pub.bytes),
    )
  } catch (caught) {
    error = caught
  }
  const sides = [priv, pub].filter((s): s is Side => s !== undefined)
  const rejected = sides.find((s) => s.verdict === 'reject')
  if (rejected !== undefined) {
    const code = isServiceError(error) ? error.code : String(error)
    if (error === undefined) problems.failures.push(`accepted what the oracle refuses (${rejected.why})`)
    else if (code !== 'UPSTREAM_DECODE' && code !== 'STRUCTURE_LIMIT') problems.failures.push(`refused with ${code}, expected a decode refusal (${rejected.why})`)
    return
  }
  const wrongName = sides.some((s) => isObject(s.value) && Object.prototype.hasOwnProperty.call(s.value, 'name') && own(s.value, 'name') !== name)
  if (wrongName) {
    if (!isServiceError(error) || error.code !== 'UPSTREAM_WRONG_PACKAGE') problems.failures.push(`expected 502 for another package's document, got ${isServiceError(error) ? error.code : String(error)}`)
    return
  }
  if (error !== undefined) {
    problems.failures.push(`refused a document the oracle accepts: ${isServiceError(error) ? `${error.code} ${JSON.stringify(error.data)}` : String(error)}`)
    return
  }
  const referenceCalls: Array<[string, number | null]> = []
  const expected = referenceMerge({ packageName: name, baseUrl: BASE, abbreviated, decide: gate(referenceCalls) }, priv?.text, pub?.text)
  const byVersion = (a: [string, number | null], b: [string, number | null]): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
  if (JSON.stringify(engineCalls.sort(byVersion)) !== JSON.stringify(referenceCalls.sort(byVersion))) {
    problems.failures.push(`the gate was asked ${JSON.stringify(engineCalls)}, the reference asks ${JSON.stringify(referenceCalls)}`)
  }
  // Selected records: what a client's JSON.parse of the public document reads for each gated version.
  const pubVersions = isObject(pub?.value) && isObject(own(pub!.value as Json, 'versions')) ? own(pub!.value as Json, 'versions') as Json : {}
  const pubTime = isObject(pub?.value) && isObject(own(pub!.value as Json, 'time')) ? own(pub!.value as Json, 'time') as Json : {}
  const wanted: Array<{ version: string; filename: string; admitted: boolean }> = []
  for (const [version, ms] of engineCalls) {
    const manifest = own(pubVersions, version)
    const dist = isObject(manifest) ? own(manifest, 'dist') : undefined
    const tarball = isObject(dist) ? own(dist, 'tarball') : undefined
    const segment = typeof tarball === 'string' ? tarballFilenameSegment(tarball) : undefined
    if (segment === undefined) continue
    const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
    const published = text(own(pubTime, version))
    const publishedAt = published === undefined ? NaN : Date.parse(published)
    wanted.push({
      version, filename: decodeFilename(segment), tarball, integrity: text(own(dist as Json, 'integrity')), shasum: text(own(dist as Json, 'shasum')),
      publishedAt: Number.isNaN(publishedAt) ? undefined : publishedAt, admitted: admits(version, ms),
    } as typeof wanted[number])
  }
  // One file name, one verdict (merge.ts): a refused version keeps its file name from an admitted one.
  const refusedFiles = new Set(wanted.filter((w) => !w.admitted).map((w) => w.filename))
  const kept = wanted.filter((w) => !w.admitted || !refusedFiles.has(w.filename)).map(({ admitted: _, ...w }) => w)
  const got = outcome!.selected.map((s) => ({ version: s.version, filename: s.filename, tarball: s.tarball, integrity: s.integrity, shasum: s.shasum, publishedAt: s.publishedAt }))
  const bySelected = (a: any, b: any): number => (a.version < b.version ? -1 : a.version > b.version ? 1 : 0)
  if (JSON.stringify(canonical(got.sort(bySelected))) !== JSON.stringify(canonical(kept.sort(bySelected)))) {
    problems.failures.push(`selected ${JSON.stringify(got)}, a client reads ${JSON.stringify(kept)}`)
  }
  if (expected === undefined || outcome!.body === undefined) {
    if ((expected === undefined) !== (outcome!.body === undefined)) {
      problems.failures.push(`reference ${expected === undefined ? 'withholds' : 'serves'}, engine ${outcome!.body === undefined ? `withholds (${JSON.stringify(outcome!.withholding)})` : 'serves'}`)
    }
    return
  }
  let served: unknown
  try {
    served = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(outcome!.body))
  } catch (caught) {
    problems.failures.push(`the engine's body is not JSON: ${String(caught)}`)
    return
  }
  const a = JSON.stringify(canonical(served))
  const b = JSON.stringify(canonical(expected))
  if (a !== b) problems.failures.push(`${abbreviated ? 'abbreviated' : 'full'} form differs:\n engine    ${a}\n reference ${b}`)
}

function encode(text: string): Uint8Array {
  return new TextEncoder().encode(text)
}

t.test('the scanner, merge and render agree with JSON.parse and the reference merge on random and mutated packuments', async (t) => {
  const { seed, deadline, maxCases } = fuzzBudget({ seconds: 2, seed: 0x9ac4_0001 })
  const rnd = seededRandom(seed)
  const counts: Record<string, number> = {}
  const reports: string[] = []
  let cases = 0
  while (Date.now() < deadline && cases < maxCases && reports.length < 5) {
    cases++
    const name = pick(rnd, NAMES)
    const escapeRate = pick(rnd, [0, 0, 0.05, 0.5])
    const document = (side: 'private' | 'public'): Side => {
      let bytes = encode(write(rnd, packumentNode(rnd, name, side), escapeRate))
      if (chance(rnd, 0.3)) bytes = mutate(rnd, bytes)
      if (chance(rnd, 0.03)) bytes = encode(`${pick(rnd, ['', ' ', '\ufeff', '\u00a0', '\n'])}${write(rnd, junk(rnd, 3), escapeRate)}${pick(rnd, ['', ' ', '\u2028', '\t\r\n'])}`)
      return judge(bytes)
    }
    const pub = chance(rnd, 0.95) ? document('public') : undefined
    const priv = chance(rnd, 0.3) || pub === undefined ? document('private') : undefined
    const abbreviated = chance(rnd, 0.4)
    const problems: Expectation = { failures: [] }
    runCase(rnd, name, priv, pub, abbreviated, problems)
    const verdict = [priv, pub].some((s) => s?.verdict === 'reject') ? 'reject' : 'accept'
    counts[verdict] = (counts[verdict] ?? 0) + 1
    if (problems.failures.length > 0) {
      reports.push(`seed ${seed} case ${cases} (${name}, ${abbreviated ? 'abbreviated' : 'full'}):\n  ${problems.failures.join('\n  ')}\n  private: ${priv?.text === undefined ? String(priv?.bytes && Buffer.from(priv.bytes).toString('hex')) : JSON.stringify(priv.text)}\n  public:  ${pub?.text === undefined ? String(pub?.bytes && Buffer.from(pub.bytes).toString('hex')) : JSON.stringify(pub.text)}`)
    }
  }
  t.ok(cases > 50, `ran ${cases} cases (seed ${seed}): ${JSON.stringify(counts)}`)
  t.ok((counts['reject'] ?? 0) > 0 && (counts['accept'] ?? 0) > 0, 'the generator reaches both verdicts')
  t.same(reports, [], 'the engine reads every document as JSON.parse and the reference merge do')
})
