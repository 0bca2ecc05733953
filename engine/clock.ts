/**
 * Time as an injectable value, so that tests of ages, paces and timeouts run
 * on a clock they move themselves (test/doubles/manual-clock.ts).
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now() })
