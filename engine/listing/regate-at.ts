/**
 * When a retained listing must be gated again although nothing upstream
 * changed, one rule for both listings (the js packument merge, the py
 * project page): the first of
 * - the advisory push reaching its maximum age (SPEC.md 3.5: the advisory
 *   rules answer differently from then on),
 * - a waiver naming the package expiring (issue 31 item 2: an expired waiver
 *   re-gates the answers it shaped at its expiry),
 * - a version (a py file) reaching one of the rules' age steps after its
 *   publication (a quarantine ends).
 * A retained answer past that instant is rendered again
 * (engine/cache/answer-state.ts), whatever its time to live says.
 */

/** What a listing's gate says about time (the worker's Decide.clock, workers/policy-gate.ts). */
export interface GateClock {
  /** When the gate's decisions are taken (ms since the epoch). */
  readonly now: number
  /** The ages (ms after publication) at which a decision about a version of the package can change (Evaluator.ageSteps). */
  readonly ageSteps: (packageName: string) => readonly number[]
  /** When the serving advisory push reaches its maximum age; undefined: no push, or no maximum. */
  readonly expiresAt?: number | undefined
  /** Evaluator.regateAt: when a waiver naming the package expires. */
  readonly regateAt?: ((packageName: string, now: number) => number | undefined) | undefined
}

/** The re-gate instant of a listing of `packageName` before any version is looked at: the push's expiry or a waiver's, whichever is first. */
export function listingRegateAt(clock: GateClock | undefined, packageName: string): number | undefined {
  if (clock === undefined) return undefined
  let at = clock.expiresAt !== undefined && clock.expiresAt > clock.now ? clock.expiresAt : undefined
  const waiverEnds = clock.regateAt?.(packageName, clock.now)
  if (waiverEnds !== undefined && (at === undefined || waiverEnds < at)) at = waiverEnds
  return at
}

/** `regateAt`, or the first moment after `now` at which a version published at `published` reaches one of the age `steps`, whichever is earlier. */
export function earliestStep(regateAt: number | undefined, published: number | undefined, steps: readonly number[], now: number): number | undefined {
  if (published === undefined) return regateAt
  for (const step of steps) {
    const at = published + step
    if (at > now && (regateAt === undefined || at < regateAt)) regateAt = at
  }
  return regateAt
}
