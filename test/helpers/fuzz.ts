/**
 * Seeded randomness and a time budget for the differential fuzz tests:
 * deterministic for a given seed, a few seconds in `npm test`, longer under
 * `npm run fuzz` (FUZZ_SECONDS, FUZZ_SEED).
 */

export type Random = () => number

/** mulberry32: small, fast and good enough to drive a generator; the same seed gives the same cases. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

export interface FuzzBudget {
  readonly seed: number
  /** Date.now() past which no new case starts. */
  readonly deadline: number
  /** A case cap as well, so a fast machine stays within the same cases for a seed. */
  readonly maxCases: number
}

export function fuzzBudget(defaults: { seconds: number; seed: number }): FuzzBudget {
  const seconds = Number(process.env['FUZZ_SECONDS'] ?? defaults.seconds)
  const seed = Number(process.env['FUZZ_SEED'] ?? defaults.seed)
  const long = process.env['FUZZ_SECONDS'] !== undefined
  return { seed, deadline: Date.now() + seconds * 1000, maxCases: long ? Number.MAX_SAFE_INTEGER : 20_000 }
}
