/**
 * Differential fuzz of the packument pipeline (byte scanner, merge, render)
 * against JSON.parse plus the reference merge (engine/packument/reference.ts)
 * on random and mutated documents: escapes, surrogates (paired and lone),
 * duplicate keys, deep nesting, huge numbers, a BOM, whitespace in odd
 * places, and random byte edits. The two must agree on accepting a document,
 * and where both accept it, on the document a client reads.
 *
 * Where they may legitimately differ, the scanner is the stricter: it
 * refuses a document whose `versions` is not an object or holds a manifest
 * that is not an object (the reference reads those as empty or skips them);
 * that refusal is checked to be for that reason.
 *
 * Seeded and bounded: FUZZ_SECONDS (default 2), FUZZ_SEED; `npm run fuzz`
 * runs it longer.
 */
import t from 'tap'
import { isDeepStrictEqual } from 'node:util'
import { runPackumentPipeline } from '../../engine/packument/pipeline.js'
import { referenceMerge } from '../../engine/packument/reference.js'
import { isServiceError } from '../../engine/errors.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { decision } from './helpers.js'
import { fuzzBudget, seededRandom, type Random } from '../helpers/fuzz.js'

const BASE = 'http://proxy.test:4873'
const NAME = 'fuzz-pkg'

function pick<T>(rnd: Random, list: readonly T[]): T { return list[Math.floor(rnd() * list.length)] as T }

const STRINGS = ['plain', 'caf\u00e9', '\u{1F600} emoji', 'quote " inside', 'back\\slash', 'tab\tnew\nline', '\u0000nul', 'slash/\u2028sep', '']
const ESCAPED = ['"\\ud83d\\ude00"', '"\\u00e9\\u0041"', '"\\/\\b\\f\\n\\r\\t"', '"\\ud800 lone"', '"\\udc00"', '"a\\"b"']

/** A JSON value as text, written by hand so escapes and spacing vary. */
function value(rnd: Random, depth: number): string {
  const roll = rnd()
  if (depth > 3 || roll < 0.35) {
    return pick(rnd, [
      JSON.stringify(pick(rnd, STRINGS)), pick(rnd, ESCAPED), '12', '-0', '1e400', '123456789012345678901234567890', '0.1e-7', 'true', 'false', 'null',
    ])
  }
  if (roll < 0.55) return `[${Array.from({ length: Math.floor(rnd() * 3) }, () => value(rnd, depth + 1)).join(pick(rnd, [',', ' , ', ',\n']))}]`
  if (roll < 0.6) return `${'['.repeat(40)}1${']'.repeat(40)}`
  const keys = Array.from({ length: Math.floor(rnd() * 4) }, () => pick(rnd, ['a', 'description', 'name', 'x\\u0079', 'dup', 'dup']))
  return `{${keys.map((k) => `${ws(rnd)}"${k}"${ws(rnd)}:${ws(rnd)}${value(rnd, depth + 1)}`).join(',')}}`
}

function ws(rnd: Random): string { return rnd() < 0.8 ? '' : pick(rnd, [' ', '\n', '\t', '\r\n  ']) }

function manifestText(rnd: Random, version: string): string {
  const members = [
    `"name":${rnd() < 0.9 ? JSON.stringify(NAME) : '"fuzz-\\u0070kg"'}`,
    `"version":${JSON.stringify(version)}`,
    `"dist":{"integrity":"sha512-${Buffer.from(version).toString('base64')}==","shasum":"0123","tarball":${rnd() < 0.8 ? `"https://up.test/${NAME}/-/${NAME}-${version}.tgz"` : `"https:\\/\\/up.test\\/${NAME}\\/-\\/${NAME}-${version}.tgz"`}}`,
  ]
  for (let i = Math.floor(rnd() * 3); i > 0; i--) members.push(`"${pick(rnd, ['description', 'scripts', 'x', 'dup'])}":${value(rnd, 1)}`)
  if (rnd() < 0.1) members.push(`"name":${JSON.stringify(NAME)}`) // a duplicate key: the last one is what a client reads
  return `{${members.map((m) => `${ws(rnd)}${m}`).join(',')}${ws(rnd)}}`
}

function documentText(rnd: Random): string {
  const versions = Array.from(new Set(Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick(rnd, ['1.0.0', '1.1.0', '2.0.0-beta.1', '3.0.0', '0.0.1']))))
  if (rnd() < 0.1) versions.push(versions[0] as string) // a duplicate version key
  const members = [
    `"name":${JSON.stringify(NAME)}`,
    `"dist-tags":{"latest":${JSON.stringify(versions[0])}}`,
    `"versions":{${versions.map((v) => `${ws(rnd)}${JSON.stringify(v)}:${manifestText(rnd, v)}`).join(',')}}`,
    `"time":{${versions.map((v, k) => `${JSON.stringify(v)}:"2020-01-0${1 + k}T00:00:00.000Z"`).join(',')},"modified":"2021-01-01T00:00:00.000Z"}`,
  ]
  for (let i = Math.floor(rnd() * 3); i > 0; i--) members.push(`"${pick(rnd, ['readme', 'x', 'maintainers', 'dup'])}":${value(rnd, 0)}`)
  const text = `${ws(rnd)}{${members.map((m) => `${ws(rnd)}${m}${ws(rnd)}`).join(',')}}${ws(rnd)}`
  return rnd() < 0.03 ? `\ufeff${text}` : text
}

function mutate(rnd: Random, text: string): string {
  let s = text
  for (let i = 1 + Math.floor(rnd() * 2); i > 0; i--) {
    const at = Math.floor(rnd() * (s.length + 1))
    switch (Math.floor(rnd() * 4)) {
      case 0: s = `${s.slice(0, at)}${pick(rnd, ['"', '\\', ',', ':', '{', '}', '[', ']', ' ', '\u0001', 'e', '-', '0', '\\u', '\ud800'])}${s.slice(at)}`; break
      case 1: s = `${s.slice(0, at)}${s.slice(at + 1)}`; break
      case 2: s = s.slice(0, at); break
      default: s = `${s.slice(0, at)}${String.fromCharCode(Math.floor(rnd() * 128))}${s.slice(at + 1)}`
    }
  }
  return s
}

/** Denies one version in three, by its string, so the gate's decisions are part of what is compared. */
const decide = (facts: VersionFacts): Decision => decision(facts.version.startsWith('1.1') ? 'deny' : 'admit')

type Verdict = { kind: 'accept'; doc: unknown } | { kind: 'withheld' } | { kind: 'reject'; reason: string }

function ours(bytes: Uint8Array, abbreviated: boolean): Verdict {
  const chunks: Uint8Array[] = []
  for (let at = 0; at < bytes.byteLength; at += 37) chunks.push(bytes.subarray(at, at + 37))
  try {
    const outcome = runPackumentPipeline({ packageName: NAME, baseUrl: BASE, abbreviated, decide }, undefined, chunks)
    if (outcome.body === undefined) return { kind: 'withheld' }
    return { kind: 'accept', doc: JSON.parse(Buffer.from(outcome.body).toString('utf8')) }
  } catch (error) {
    if (isServiceError(error)) return { kind: 'reject', reason: `${error.code} ${String(error.data?.['reason'] ?? '')}` }
    throw error
  }
}

function reference(text: string, abbreviated: boolean): Verdict {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { kind: 'reject', reason: 'JSON.parse' }
  }
  const doc = parsed as Record<string, unknown>
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { kind: 'reject', reason: 'not an object' }
  if (typeof doc['name'] === 'string' && doc['name'] !== NAME) return { kind: 'reject', reason: 'another package' }
  const merged = referenceMerge({ packageName: NAME, baseUrl: BASE, abbreviated, decide }, undefined, text)
  return merged === undefined ? { kind: 'withheld' } : { kind: 'accept', doc: merged }
}

/** The scanner's own structural refusals, which JSON.parse has no opinion on. */
function structurallyOdd(text: string): boolean {
  try {
    const doc = JSON.parse(text) as Record<string, unknown>
    const versions = doc['versions']
    if (versions === undefined) return false
    if (versions === null || typeof versions !== 'object' || Array.isArray(versions)) return true
    return Object.values(versions).some((m) => m === null || typeof m !== 'object' || Array.isArray(m))
  } catch {
    return false
  }
}

t.test('the pipeline and JSON.parse plus the reference merge agree on random and mutated packuments', async (t) => {
  const { seed, deadline, maxCases } = fuzzBudget({ seconds: 2, seed: 0x9ac4_0001 })
  const rnd = seededRandom(seed)
  let cases = 0
  const counts: Record<string, number> = {}
  const disagreements: string[] = []
  while (Date.now() < deadline && cases < maxCases) {
    const fresh = documentText(rnd)
    const text = rnd() < 0.5 ? fresh : mutate(rnd, fresh)
    const abbreviated = rnd() < 0.3
    const bytes = Buffer.from(text, 'utf8')
    const mine = ours(bytes, abbreviated)
    // Lone surrogates do not survive UTF-8: compare against what the bytes say, as a client decoding them would read.
    const theirs = reference(bytes.toString('utf8'), abbreviated)
    cases++
    const key = `${theirs.kind}/${mine.kind}`
    counts[key] = (counts[key] ?? 0) + 1
    let agree = mine.kind === theirs.kind && (mine.kind !== 'accept' || isDeepStrictEqual(mine.doc, (theirs as { doc: unknown }).doc))
    if (!agree && mine.kind === 'reject' && theirs.kind !== 'reject' && structurallyOdd(bytes.toString('utf8'))) agree = true
    if (!agree && disagreements.length < 5) disagreements.push(`${key} ${mine.kind === 'reject' ? mine.reason : ''} ${JSON.stringify(text).slice(0, 600)}`)
  }
  t.ok(cases > 50, `ran ${cases} cases (seed ${seed}): ${JSON.stringify(counts)}`)
  t.ok((counts['accept/accept'] ?? 0) > 0 && (counts['reject/reject'] ?? 0) > 0, 'the generator reaches both verdicts')
  t.same(disagreements, [], 'no disagreement')
})
