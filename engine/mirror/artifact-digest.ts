/**
 * The digests a mirror job is verified against (SPEC.md 6.1 worker 1): the
 * strongest well-formed one the job carries (integrity-floor.ts ranks
 * them), checked on the bytes as they stream, and the comparison of two
 * versions' digests that tells "already present" from "collision".
 *
 * An SRI string may carry several tokens of one algorithm (W3C SRI 3.3.4:
 * any of them matching is a match), so a digest is a set per algorithm.
 */
import { createHash, type Hash } from 'node:crypto'
import { INTEGRITY_ALGORITHMS, strongestDigest, type IntegrityAlgorithm } from './integrity-floor.js'

const TOKEN = /^([a-z0-9]+)-([A-Za-z0-9+/]+={0,2})(?:\?.*)?$/
const SHASUM = /^[0-9a-f]{40}$/i
const DIGEST_BYTES: Readonly<Record<IntegrityAlgorithm, number>> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }

/** Base64 digests by algorithm, well-formed ones only. */
export type DigestSet = ReadonlyMap<IntegrityAlgorithm, ReadonlySet<string>>

export function digestSet(integrity: string | undefined, shasum: string | undefined): DigestSet {
  const out = new Map<IntegrityAlgorithm, Set<string>>()
  const add = (alg: IntegrityAlgorithm, base64: string): void => {
    let set = out.get(alg)
    if (set === undefined) out.set(alg, set = new Set())
    set.add(base64)
  }
  for (const token of (integrity ?? '').split(/\s+/)) {
    const match = TOKEN.exec(token)
    if (match === null) continue
    const [, alg = '', digest = ''] = match
    if (!(INTEGRITY_ALGORITHMS as readonly string[]).includes(alg) || digest.length % 4 !== 0) continue
    const bytes = Buffer.from(digest, 'base64')
    if (bytes.byteLength !== DIGEST_BYTES[alg as IntegrityAlgorithm]) continue
    // Re-encoded so that two spellings of one digest compare equal.
    add(alg as IntegrityAlgorithm, bytes.toString('base64'))
  }
  if (shasum !== undefined && SHASUM.test(shasum)) add('sha1', Buffer.from(shasum, 'hex').toString('base64'))
  return out
}

/** What the fetched bytes must hash to. */
export interface ExpectedDigest {
  readonly algorithm: IntegrityAlgorithm
  /** Any one of these (base64) is a match. */
  readonly accepted: ReadonlySet<string>
}

/** The strongest digest of a job, or undefined when it has none usable (the job cannot succeed). */
export function expectedDigest(integrity: string | undefined, shasum: string | undefined): ExpectedDigest | undefined {
  const algorithm = strongestDigest(integrity, shasum)
  if (algorithm === undefined) return undefined
  const accepted = digestSet(integrity, shasum).get(algorithm)
  return accepted === undefined ? undefined : { algorithm, accepted }
}

/** Hashes bytes as they stream, then judges them against the expected digest. */
export class DigestVerifier {
  readonly #expected: ExpectedDigest
  readonly #hash: Hash
  #actual: string | undefined

  constructor(expected: ExpectedDigest) {
    this.#expected = expected
    this.#hash = createHash(expected.algorithm)
  }

  update(chunk: Uint8Array): void {
    this.#hash.update(chunk)
  }

  /** Finishes the hash; true when it is one of the accepted digests. */
  matches(): boolean {
    this.#actual ??= this.#hash.digest('base64')
    return this.#expected.accepted.has(this.#actual)
  }

  /** `<alg>-<base64>` of what was hashed, after `matches()`. */
  get actual(): string {
    return `${this.#expected.algorithm}-${this.#actual ?? ''}`
  }
}

export type Comparison = 'same' | 'different' | 'incomparable'

/**
 * Compares two versions' digests on the strongest algorithm both carry:
 * `same` when those sets share a digest, `different` when they do not,
 * `incomparable` when no algorithm is common to both.
 */
export function compareDigests(a: DigestSet, b: DigestSet): Comparison {
  for (const alg of [...INTEGRITY_ALGORITHMS].reverse()) {
    const left = a.get(alg)
    const right = b.get(alg)
    if (left === undefined || right === undefined) continue
    for (const digest of left) if (right.has(digest)) return 'same'
    return 'different'
  }
  return 'incomparable'
}
