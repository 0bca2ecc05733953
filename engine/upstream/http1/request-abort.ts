/**
 * How the caller of an artifact request calls it off: the part of an
 * AbortSignal the artifact connections use, without its cost. Node 20's
 * AbortSignal is an EventTarget, tracked for AbortSignal.any: making one per
 * request and listening on it was a fifth of the relay process's user-space
 * instructions on 1 KiB artifacts (issue 18, callgrind of
 * bench/runners/artifact-relay-server.ts at steady state: about 139,000 per
 * request outside the compiler and GC with it, 110,000 without), paid by
 * every request although almost none is ever called off.
 *
 * One listener at a time: a request waits on one thing at a time (a free
 * connection, the connect, the response head, then the body) and each wait
 * takes the slot over from the one before it.
 */

export interface RequestAbort {
  readonly aborted: boolean
  /** Why it was called off; undefined until then. */
  readonly reason: unknown
  /**
   * Makes `fn` the one listener, called once when the request is called
   * off. It is not called for an abort that already happened: check
   * `aborted` first.
   */
  listen(fn: (reason: unknown) => void): void
  /** Clears the listener, if it is still `fn`. */
  unlisten(fn: (reason: unknown) => void): void
  /** An AbortSignal that follows this abort, for the APIs that take one; made on first use. */
  readonly signal: AbortSignal
}

/** A RequestAbort its owner calls off: one per client request (server/routes/artifact-route.ts). */
export class AbortCue implements RequestAbort {
  #aborted = false
  #reason: unknown
  #listener: ((reason: unknown) => void) | undefined
  #controller: AbortController | undefined

  get aborted(): boolean { return this.#aborted }
  get reason(): unknown { return this.#reason }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  listen(fn: (reason: unknown) => void): void {
    this.#listener = fn
  }

  unlisten(fn: (reason: unknown) => void): void {
    if (this.#listener === fn) this.#listener = undefined
  }

  /** Calls the request off, once: the signal (if one was made) aborts, then the listener runs. */
  abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    const listener = this.#listener
    this.#listener = undefined
    this.#controller?.abort(reason)
    listener?.(reason)
  }
}

/** A caller's AbortSignal as a RequestAbort (the mirror workers wrap theirs in one). */
export class SignalAbort implements RequestAbort {
  readonly signal: AbortSignal
  #listener: ((reason: unknown) => void) | undefined
  readonly #onAbort = (): void => {
    const listener = this.#listener
    this.#listener = undefined
    listener?.(this.signal.reason)
  }

  constructor(signal: AbortSignal) {
    this.signal = signal
  }

  get aborted(): boolean { return this.signal.aborted }
  get reason(): unknown { return this.signal.reason }

  listen(fn: (reason: unknown) => void): void {
    // One EventTarget listener however often the slot changes hands.
    if (this.#listener === undefined) this.signal.addEventListener('abort', this.#onAbort, { once: true })
    this.#listener = fn
  }

  unlisten(fn: (reason: unknown) => void): void {
    if (this.#listener !== fn) return
    this.#listener = undefined
    this.signal.removeEventListener('abort', this.#onAbort)
  }
}
