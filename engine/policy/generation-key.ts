/**
 * The rules-and-database generation as a key every replica computes alike
 * and a restart keeps (issue 29, docs/cache.md "Keys"): a digest of the
 * rules in force and the identity of the serving advisory artifact. An
 * answer retained under one generation is never served under another, so a
 * new advisory database or new rules never serve an old decision, on any
 * replica, in the shared backend or after a restart.
 *
 * The AdvisorySlot's own `generation` is a counter: right for the workers'
 * evaluator reuse in one process, wrong across processes (each replica
 * counts its own swaps from zero at boot).
 *
 * The advisory part is the artifact's ETag and its publication time: a
 * re-push of identical bytes moves the push age, which decides whether the
 * advisory rules answer at all (SPEC.md 3.5), so an answer rendered while a
 * push had expired is not served once a fresh push of the same bytes is in.
 *
 * Live policy: whoever reloads the rules computes `rulesDigest(newRules)`
 * and the mount's generation key follows from it (mount-policy.ts).
 */
import { createHash } from 'node:crypto'
import type { RuleConfig } from './rule-schema.js'

/** What the serving advisory artifact is, as a generation names it. */
export interface AdvisoryIdentity {
  readonly etag: string
  readonly publishedAt: Date | undefined
}

export interface GenerationInput {
  /** `rulesDigest` of the rules in force. */
  readonly rulesDigest: string
  /** The serving advisory artifact; undefined while the slot is empty. */
  readonly advisory: AdvisoryIdentity | undefined
}

/** JSON with object keys in sorted order, so equal values give equal text whatever order a document wrote them in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** A short digest of a value's canonical JSON (base64url of SHA-256, 16 characters: collisions are not a practical concern at this count). */
export function shortDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('base64url').slice(0, 16)
}

/** The digest of a mount's rule list: order matters (the first rule that decides wins), key order in a rule does not. */
export function rulesDigest(rules: readonly RuleConfig[]): string {
  return shortDigest(rules)
}

/** `<rules>.<advisory>`: what a retained answer's key carries. */
export function generationKey(input: GenerationInput): string {
  const advisory = input.advisory === undefined ? 'none' : shortDigest([input.advisory.etag, input.advisory.publishedAt?.getTime() ?? null])
  return `${input.rulesDigest}.${advisory}`
}
