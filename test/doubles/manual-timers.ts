import type { TimerHandle, Timers } from '../../engine/memory/timers.js'
import { ManualClock } from './manual-clock.js'

interface Pending {
  due: number
  readonly seq: number
  readonly fn: () => void
  readonly interval: number | undefined
  cleared: boolean
}

/**
 * Timers that fire only when `advance` moves their clock; for tests. Timers
 * due at the same instant fire in the order they were set.
 */
export class ManualTimers implements Timers {
  readonly clock: ManualClock
  #pending: Pending[] = []
  #seq = 0

  constructor(clock: ManualClock = new ManualClock()) { this.clock = clock }

  after(ms: number, fn: () => void): TimerHandle { return this.#add(ms, fn, undefined) }
  every(ms: number, fn: () => void): TimerHandle { return this.#add(ms, fn, Math.max(1, ms)) }

  /** Timers not yet fired or cleared. */
  get pendingCount(): number { return this.#pending.filter((p) => !p.cleared).length }

  /** Moves the clock by `ms`, firing every timer that falls due on the way, in time order. */
  advance(ms: number): void {
    const end = this.clock.now() + ms
    for (;;) {
      const next = this.#next(end)
      if (next === undefined) break
      this.clock.set(next.due)
      if (next.interval === undefined) {
        next.cleared = true
        this.#pending = this.#pending.filter((p) => p !== next)
      } else {
        next.due += next.interval
      }
      next.fn()
    }
    this.clock.set(end)
  }

  #next(end: number): Pending | undefined {
    let best: Pending | undefined
    for (const p of this.#pending) {
      if (p.cleared || p.due > end) continue
      if (best === undefined || p.due < best.due || (p.due === best.due && p.seq < best.seq)) best = p
    }
    return best
  }

  #add(ms: number, fn: () => void, interval: number | undefined): TimerHandle {
    const p: Pending = { due: this.clock.now() + Math.max(0, ms), seq: this.#seq++, fn, interval, cleared: false }
    this.#pending.push(p)
    return {
      clear: () => {
        p.cleared = true
        this.#pending = this.#pending.filter((q) => q !== p)
      },
      unref: () => {},
    }
  }
}
