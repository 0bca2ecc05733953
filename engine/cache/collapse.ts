/**
 * Request collapsing (SPEC.md 6.3): identical concurrent requests (same key)
 * share one leader's work and its result, failures included.
 *
 * The work belongs to a caller: `load` is that caller's own closure (its
 * upstream fetch, its memory charge), run with a signal this module owns.
 * When a waiter's own signal aborts, that waiter alone is released with the
 * abort reason. When it was the leader, its work is aborted and the first
 * follower still waiting takes over with its own `load`, so followers are
 * never stranded and no charge outlives the request that made it. A
 * follower that takes over was counted `collapsed` when it joined and is
 * not counted again (counted once, SPEC.md 6.3). A late result of aborted
 * work is ignored.
 */

export interface CollapseCounts {
  /** A request that started work (a leader). */
  miss(): void
  /** A request that joined a leader. */
  collapsed(): void
}

/** A leader's work; `takeover` is true when it took over from a leader that was cancelled (it was counted `collapsed` when it joined). */
export type Load<V> = (signal: AbortSignal, takeover: boolean) => Promise<V>

interface Waiter<V> {
  readonly load: Load<V>
  readonly signal: AbortSignal | undefined
  readonly resolve: (value: V) => void
  readonly reject: (reason: unknown) => void
  onAbort: (() => void) | undefined
}

interface Flight<V> {
  readonly key: string
  readonly waiters: Waiter<V>[]
  leader: Waiter<V> | undefined
  controller: AbortController | undefined
  /** Moves on every (re)start and on abandonment, so a stale result is recognised. */
  attempt: number
}

export interface RequestCollapserOptions<V> {
  readonly counts?: CollapseCounts
  /** Called with the leader's value, synchronously before any waiter resumes (the store retains it here). */
  readonly onValue?: (key: string, value: V) => void
}

export class RequestCollapser<V> {
  #flights = new Map<string, Flight<V>>()
  #counts: CollapseCounts | undefined
  #onValue: ((key: string, value: V) => void) | undefined

  constructor(options: RequestCollapserOptions<V> = {}) {
    this.#counts = options.counts
    this.#onValue = options.onValue
  }

  /** Keys with work in flight. */
  get inFlight(): number { return this.#flights.size }

  /** True while work for `key` is in flight. */
  has(key: string): boolean { return this.#flights.has(key) }

  /**
   * Runs `load` for `key`, or joins the work already in flight for it.
   * Rejects with `signal.reason` when this caller's signal aborts first.
   */
  run(key: string, load: Load<V>, signal?: AbortSignal): Promise<V> {
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    return new Promise<V>((resolve, reject) => {
      const waiter: Waiter<V> = { load, signal, resolve, reject, onAbort: undefined }
      let flight = this.#flights.get(key)
      const leads = flight === undefined
      if (flight === undefined) {
        flight = { key, waiters: [], leader: undefined, controller: undefined, attempt: 0 }
        this.#flights.set(key, flight)
        this.#counts?.miss()
      } else {
        this.#counts?.collapsed()
      }
      flight.waiters.push(waiter)
      if (signal !== undefined) {
        const joined = flight
        waiter.onAbort = () => this.#abandon(joined, waiter)
        signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      if (leads) this.#start(flight, waiter)
    })
  }

  #start(flight: Flight<V>, leader: Waiter<V>): void {
    const controller = new AbortController()
    const attempt = ++flight.attempt
    flight.leader = leader
    flight.controller = controller
    let work: Promise<V>
    try {
      work = Promise.resolve(leader.load(controller.signal, attempt > 1))
    } catch (error) {
      work = Promise.reject(error)
    }
    work.then(
      (value) => this.#settle(flight, attempt, true, value),
      (error: unknown) => this.#settle(flight, attempt, false, error),
    )
  }

  #settle(flight: Flight<V>, attempt: number, ok: boolean, outcome: unknown): void {
    if (flight.attempt !== attempt || this.#flights.get(flight.key) !== flight) return
    this.#flights.delete(flight.key)
    if (ok) {
      try {
        this.#onValue?.(flight.key, outcome as V)
      } catch {
        // Retention is best effort (SPEC.md 6.3: a failed write skips retention); the waiters still get the value.
      }
    }
    for (const waiter of flight.waiters) {
      this.#detach(waiter)
      if (ok) waiter.resolve(outcome as V)
      else waiter.reject(outcome)
    }
    flight.waiters.length = 0
  }

  #abandon(flight: Flight<V>, waiter: Waiter<V>): void {
    const index = flight.waiters.indexOf(waiter)
    if (index < 0) return
    flight.waiters.splice(index, 1)
    this.#detach(waiter)
    waiter.reject(waiter.signal?.reason)
    if (flight.leader !== waiter) return
    flight.controller?.abort(waiter.signal?.reason)
    const next = flight.waiters[0]
    if (next !== undefined) {
      this.#start(flight, next)
      return
    }
    flight.attempt++
    flight.leader = undefined
    if (this.#flights.get(flight.key) === flight) this.#flights.delete(flight.key)
  }

  #detach(waiter: Waiter<V>): void {
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.onAbort = undefined
  }
}
