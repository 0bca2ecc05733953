/**
 * Timers as an injectable value, so that the gate's waits and the sampler's
 * ticks run on a clock the tests move themselves (no real sleeps).
 */
import { ManualClock } from '../clock.js'

export interface TimerHandle {
  /** Stops the timer; calling it again, or after it fired, does nothing. */
  clear(): void
  /** Lets the process exit while the timer is pending. */
  unref(): void
}

export interface Timers {
  /** Runs `fn` once after `ms`. */
  after(ms: number, fn: () => void): TimerHandle
  /** Runs `fn` every `ms` until cleared. */
  every(ms: number, fn: () => void): TimerHandle
}

function wrap(handle: NodeJS.Timeout, clear: (h: NodeJS.Timeout) => void): TimerHandle {
  return {
    clear: () => clear(handle),
    unref: () => { handle.unref() },
  }
}

export const systemTimers: Timers = Object.freeze({
  after: (ms: number, fn: () => void) => wrap(setTimeout(fn, ms), clearTimeout),
  every: (ms: number, fn: () => void) => wrap(setInterval(fn, ms), clearInterval),
})

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
