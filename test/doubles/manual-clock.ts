import type { Clock } from '../../engine/clock.js'

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  #now: number
  constructor(start = Date.parse('2026-01-01T00:00:00Z')) { this.#now = start }
  now(): number { return this.#now }
  advance(ms: number): void { this.#now += ms }
  set(ms: number): void { this.#now = ms }
}
