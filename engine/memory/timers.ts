/**
 * Timers as an injectable value, so that the gate's waits and the sampler's
 * ticks run on a clock the tests move themselves (no real sleeps;
 * test/doubles/manual-timers.ts).
 */
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
