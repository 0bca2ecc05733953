/**
 * The memory admission gate (SPEC.md 8, 8.1).
 *
 * - Entering: every request takes one 1 MiB entry step and then a CPU slot
 *   (the serve admission concurrency). Both are granted together, in arrival
 *   order. A request that cannot enter within 1 s is refused with GATE_SHED
 *   (503, Retry-After: 1); so is one that finds the waiting room full.
 *   Started requests come first: while any started request is paused, no new
 *   request enters.
 * - Charging: a started request charges bytes as it uses memory (per chunk).
 *   When the budget is exhausted it pauses, keeping its slot, until memory
 *   frees; paused charges resume in arrival order. A paused charge fails with
 *   GATE_PAUSE_TIMEOUT after the cap its caller passes (50 s for an upstream
 *   read, the rest of the 60 s request timeout for a render).
 * - Growth lanes: while memory is scarce (more than half the budget charged)
 *   and a request is paused, only requests holding one of the gate's growth
 *   lanes (by the plan one fewer than cores, at least one: with the
 *   overshoot holder, as many documents grow as there are cores) may charge
 *   more; a paused request takes a free lane, in arrival order, when its
 *   charge fits, and keeps it until it ends. Without lanes, memory freed by
 *   one finished document was spread over every paused partial read, one
 *   chunk each (a gate trace of the flood bench: each release granted ~30
 *   chunks in the same millisecond): they all grew, none finished, and only
 *   the overshoot holder completed, one at a time. With lanes the freed memory goes to as many documents as
 *   there are cores to render them (a lane per core beside the holder, in
 *   one run each: 1.82 against 2.04 documents a second, peak RSS 794 MiB
 *   against 774).
 * - Overshoot: only one request at a time may run past the budget, and it
 *   keeps that right until it ends. The right goes to the first request whose
 *   charge does not fit while nobody holds it; when the holder ends, it passes
 *   to the oldest paused request that still does not fit. This is what
 *   guarantees progress: a document larger than the whole budget still gets
 *   served, one at a time.
 * - Work the holder waits on runs past the budget with it (SPEC.md 8). This
 *   holds by construction: a request only ever waits on another's work as a
 *   follower of request collapsing (engine/cache/collapse.ts), which charges
 *   it nothing, so a follower never takes the right while it waits, and the
 *   work is charged to the leader, which pauses and takes the right like any
 *   other request. A follower that takes over aborted work runs it on its
 *   own admission. A request that charged for work of its own and then waited
 *   on another's could deadlock on memory it holds itself: no route does so.
 * - Releasing returns every charge and the slot, however the request ends;
 *   it is idempotent. A charge made ahead of use on an upper bound (a
 *   listing's response, engine/listing/prepaid-charge.ts) returns its unused
 *   part early with `refund`.
 *
 * The hot path (`tryCharge`, and `charge` when the bytes fit) is two
 * comparisons and two additions, and `charge` then returns one shared
 * resolved promise.
 */
import { ServiceError } from '../errors.js'
import { ADMISSION_CHARGES } from './admission-charges.js'
import type { MemoryPlan } from './plan.js'
import { systemTimers, type TimerHandle, type Timers } from './timers.js'

/** SPEC.md 8: a paused upstream read fails after the 50 s cap on that exchange. */
export const PAUSE_CAP_UPSTREAM_READ_MS = 50_000
/** SPEC.md 8: a paused render fails at the 60 s request timeout. */
export const REQUEST_TIMEOUT_MS = 60_000

export type BrakeLevel = 0 | 1 | 2

export interface GateOptions {
  readonly budgetBytes: number
  /** CPU slots: the serve admission concurrency. */
  readonly maxInFlight: number
  /** New requests that may wait for their entry step at once. */
  readonly waitingRoom: number
  /** SPEC.md 8.1: ADMISSION_CHARGES.entryStepBytes (1 MiB). */
  readonly entryStepBytes?: number
  /** SPEC.md 8: 1 s. */
  readonly entryWaitMs?: number
  /** Requests that may grow while memory is scarce (the plan: cores less one, at least one); unset, no lanes: paused charges resume in arrival order while they fit. */
  readonly growthLanes?: number
  readonly timers?: Timers
}

export interface ChargeOptions {
  /** The pause cap in ms: the charge fails with GATE_PAUSE_TIMEOUT if still paused after this (Infinity: no cap). */
  readonly timeoutMs: number
  readonly signal?: AbortSignal
}

/** The SPEC.md 6.3 `service.serve.admission.memory.*` figures. */
export interface GateSnapshot {
  readonly budgetBytes: number
  readonly chargedBytes: number
  readonly brakeLevel: BrakeLevel
  /** New requests waiting at the gate now. */
  readonly waiting: number
  /** Started requests paused now. */
  readonly pausedNow: number
  /** Requests that waited for their entry step (counter). */
  readonly queued: number
  /** Requests refused at the gate (counter). */
  readonly shed: number
  /** Times a started request paused (counter). */
  readonly pauses: number
  /** Steps taken past the budget (counter). */
  readonly overdraws: number
  /** Requests holding a CPU slot now. */
  readonly inFlight: number
}

interface AdmissionState {
  charged: number
  released: boolean
  pausedCharges: number
  /** Holds a growth lane: may charge while others are paused, when its charge fits. */
  lane: boolean
}

interface PausedCharge {
  readonly state: AdmissionState
  readonly bytes: number
  readonly resolve: () => void
  readonly reject: (reason: unknown) => void
  timer: TimerHandle | undefined
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

interface EntryWaiter {
  readonly resolve: (admission: Admission) => void
  readonly reject: (reason: unknown) => void
  timer: TimerHandle | undefined
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

const RESOLVED: Promise<void> = Promise.resolve()

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ServiceError('CONFIG_INVALID', { message: `memory gate: ${name} must be a positive whole number, got ${String(value)}` })
  }
  return value
}

function first<T>(set: Set<T>): T | undefined {
  for (const value of set) return value
  return undefined
}

/** The shared state and rules; both the gate and its admissions act through it. */
class GateCore {
  budget: number
  brake: BrakeLevel = 0
  charged = 0
  inFlight = 0
  holder: AdmissionState | undefined
  readonly paused = new Set<PausedCharge>()
  readonly waiting = new Set<EntryWaiter>()
  pausedRequests = 0
  queued = 0
  shed = 0
  pauses = 0
  overdraws = 0
  lanesHeld = 0
  readonly lanes: number | undefined
  readonly maxInFlight: number
  readonly waitingRoom: number
  readonly step: number
  readonly entryWaitMs: number
  readonly timers: Timers

  constructor(options: GateOptions) {
    if (!Number.isFinite(options.budgetBytes) || options.budgetBytes < 0) {
      throw new ServiceError('CONFIG_INVALID', { message: `memory gate: budgetBytes must be a non-negative number, got ${String(options.budgetBytes)}` })
    }
    this.budget = Math.floor(options.budgetBytes)
    this.maxInFlight = positiveInteger('maxInFlight', options.maxInFlight)
    this.waitingRoom = Math.floor(options.waitingRoom) >= 0 ? Math.floor(options.waitingRoom) : 0
    this.step = positiveInteger('entryStepBytes', options.entryStepBytes ?? ADMISSION_CHARGES.entryStepBytes)
    this.entryWaitMs = positiveInteger('entryWaitMs', options.entryWaitMs ?? 1000)
    this.timers = options.timers ?? systemTimers
    this.lanes = options.growthLanes === undefined ? undefined : positiveInteger('growthLanes', options.growthLanes)
  }

  // Entering ---------------------------------------------------------------

  canEnter(): boolean {
    // `charged === 0` admits one request even under a budget below one step,
    // so a misconfigured budget slows the service down instead of stopping it.
    return this.paused.size === 0 && this.inFlight < this.maxInFlight &&
      (this.charged + this.step <= this.budget || this.charged === 0)
  }

  admit(): Admission {
    const state: AdmissionState = { charged: this.step, released: false, pausedCharges: 0, lane: false }
    this.inFlight++
    this.charged += this.step
    return new Admission(this, state)
  }

  enter(signal: AbortSignal | undefined): Promise<Admission> {
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    if (this.waiting.size === 0 && this.canEnter()) return Promise.resolve(this.admit())
    if (this.waiting.size >= this.waitingRoom) {
      this.shed++
      return Promise.reject(new ServiceError('GATE_SHED', { data: { reason: 'waiting_room_full' } }))
    }
    this.queued++
    return new Promise<Admission>((resolve, reject) => {
      const waiter: EntryWaiter = { resolve, reject, timer: undefined, signal, onAbort: undefined }
      waiter.timer = this.timers.after(this.entryWaitMs, () => {
        this.dropWaiter(waiter)
        this.shed++
        reject(new ServiceError('GATE_SHED', { data: { reason: 'entry_wait' } }))
      })
      if (signal !== undefined) {
        waiter.onAbort = () => {
          this.dropWaiter(waiter)
          reject(signal.reason)
        }
        signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      this.waiting.add(waiter)
    })
  }

  dropWaiter(waiter: EntryWaiter): void {
    this.waiting.delete(waiter)
    waiter.timer?.clear()
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort)
  }

  // Charging ---------------------------------------------------------------

  tryCharge(state: AdmissionState, bytes: number): boolean {
    if (state.released || !(bytes > 0)) return true
    if ((this.paused.size === 0 || state.lane) && this.charged + bytes <= this.budget) {
      state.charged += bytes
      this.charged += bytes
      return true
    }
    if (this.holder === undefined) this.holder = state
    else if (state !== this.holder) return false
    this.add(state, bytes)
    return true
  }

  /** Charges, counting an overdraw when the total ends past the budget. */
  add(state: AdmissionState, bytes: number): void {
    state.charged += bytes
    this.charged += bytes
    if (this.charged > this.budget) this.overdraws++
  }

  charge(state: AdmissionState, bytes: number, options: ChargeOptions): Promise<void> {
    if (this.tryCharge(state, bytes)) return RESOLVED
    const signal = options.signal
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    this.pauses++
    return new Promise<void>((resolve, reject) => {
      const paused: PausedCharge = { state, bytes, resolve, reject, timer: undefined, signal, onAbort: undefined }
      // An infinite cap (a caller with no deadline of its own) sets no timer.
      if (Number.isFinite(options.timeoutMs)) {
        paused.timer = this.timers.after(options.timeoutMs, () => {
          this.dropPaused(paused)
          reject(new ServiceError('GATE_PAUSE_TIMEOUT', { data: { bytes, pausedMs: options.timeoutMs } }))
        })
      }
      if (signal !== undefined) {
        paused.onAbort = () => {
          this.dropPaused(paused)
          reject(signal.reason)
        }
        signal.addEventListener('abort', paused.onAbort, { once: true })
      }
      this.paused.add(paused)
      if (state.pausedCharges++ === 0) this.pausedRequests++
    })
  }

  dropPaused(paused: PausedCharge): void {
    if (!this.paused.delete(paused)) return
    if (--paused.state.pausedCharges === 0) this.pausedRequests--
    paused.timer?.clear()
    if (paused.onAbort !== undefined) paused.signal?.removeEventListener('abort', paused.onAbort)
  }

  /**
   * Resumes what memory now allows: paused charges first, then new requests.
   * The overshoot holder always resumes; lane holders resume when they fit,
   * each on its own; others resume in arrival order while they fit, taking a
   * free lane, or without one while memory is not scarce.
   */
  drain(): void {
    for (;;) {
      let blocked = false
      for (const paused of this.paused) {
        const state = paused.state
        if (state === this.holder) {
          this.grant(paused)
        } else if (!this.fits(paused.bytes)) {
          if (!state.lane) blocked = true
        } else if (state.lane) {
          this.grant(paused)
        } else if (!blocked && this.lanes !== undefined && this.lanesHeld < this.lanes) {
          state.lane = true
          this.lanesHeld++
          this.grant(paused)
        } else if (!blocked && !this.scarce()) {
          this.grant(paused)
        } else {
          blocked = true
        }
      }
      if (this.paused.size === 0 || this.holder !== undefined) break
      // Nobody holds the overshoot right and a request is still paused: the
      // oldest one takes the right, which guarantees progress.
      this.holder = first(this.paused)?.state
    }
    if (this.paused.size > 0) return
    for (const waiter of this.waiting) {
      if (!this.canEnter()) break
      this.dropWaiter(waiter)
      waiter.resolve(this.admit())
    }
  }

  fits(bytes: number): boolean {
    return this.charged + bytes <= this.budget
  }

  /** With lanes, more than half the budget charged: paused requests grow only in lanes. */
  scarce(): boolean {
    return this.lanes !== undefined && this.charged * 2 > this.budget
  }

  grant(paused: PausedCharge): void {
    this.dropPaused(paused)
    this.add(paused.state, paused.bytes)
    paused.resolve()
  }

  /** Returns up to `bytes` of a started request's charges, never its entry step, and resumes what that allows. */
  refund(state: AdmissionState, bytes: number): void {
    const back = Math.min(bytes, state.charged - this.step)
    if (state.released || !(back > 0)) return
    state.charged -= back
    this.charged -= back
    this.drain()
  }

  // Ending -----------------------------------------------------------------

  release(state: AdmissionState, reason: unknown): void {
    if (state.released) return
    state.released = true
    if (state.pausedCharges > 0) {
      const error = reason ?? new ServiceError('INTERNAL', { message: 'the request ended while a memory charge was paused' })
      for (const paused of this.paused) {
        if (paused.state !== state) continue
        this.dropPaused(paused)
        paused.reject(error)
      }
    }
    this.charged -= state.charged
    state.charged = 0
    this.inFlight--
    if (state.lane) {
      state.lane = false
      this.lanesHeld--
    }
    if (this.holder === state) this.holder = undefined
    this.drain()
  }

  snapshot(): GateSnapshot {
    return {
      budgetBytes: this.budget,
      chargedBytes: this.charged,
      brakeLevel: this.brake,
      waiting: this.waiting.size,
      pausedNow: this.pausedRequests,
      queued: this.queued,
      shed: this.shed,
      pauses: this.pauses,
      overdraws: this.overdraws,
      inFlight: this.inFlight,
    }
  }
}

/**
 * One request's hold on the gate: its entry step, its CPU slot and its
 * charges. Obtained from `AdmissionGate.enter`; `release()` it however the
 * request ends.
 */
export class Admission {
  readonly #core: GateCore
  readonly #state: AdmissionState

  /** @internal Made by `AdmissionGate.enter` only. */
  constructor(core: GateCore, state: AdmissionState) {
    this.#core = core
    this.#state = state
  }

  /** Bytes held, the entry step included; 0 once released. */
  get chargedBytes(): number { return this.#state.charged }
  get released(): boolean { return this.#state.released }
  /** True while this request holds the one right to run past the budget. */
  get overshooting(): boolean { return this.#core.holder === this.#state }

  /**
   * Charges now if memory allows (or this request may run past the budget)
   * and returns true; returns false, charging nothing, when the caller must
   * pause: then pause the source and await `charge` with the same bytes.
   * After release it charges nothing and returns true.
   */
  tryCharge(bytes: number): boolean {
    return this.#core.tryCharge(this.#state, bytes)
  }

  /**
   * Resolves once `bytes` are charged; pauses while the budget is exhausted.
   * Rejects with GATE_PAUSE_TIMEOUT after `timeoutMs` paused, with the
   * signal's reason on abort, or when the request is released meanwhile.
   */
  charge(bytes: number, options: ChargeOptions): Promise<void> {
    return this.#core.charge(this.#state, bytes, options)
  }

  /**
   * Returns up to `bytes` of this request's charges before it ends (never
   * the entry step): what an estimate charged ahead of use turned out not
   * to need. After release it does nothing.
   */
  refund(bytes: number): void {
    this.#core.refund(this.#state, bytes)
  }

  /** Returns every charge and the slot. Idempotent; paused charges reject with `reason`. */
  release(reason?: unknown): void {
    this.#core.release(this.#state, reason)
  }
}

export class AdmissionGate {
  readonly #core: GateCore

  constructor(options: GateOptions) {
    this.#core = new GateCore(options)
  }

  /** A gate sized by the memory plan: starting budget, serve admission and waiting room. */
  static fromPlan(plan: MemoryPlan, timers?: Timers): AdmissionGate {
    return new AdmissionGate({
      budgetBytes: plan.startingBudgetBytes.value,
      maxInFlight: plan.serveMaxInFlight.value,
      waitingRoom: plan.waitingRoom.value,
      entryStepBytes: plan.entryStepBytes,
      entryWaitMs: plan.entryWaitMs,
      // With the overshoot holder, as many documents grow as there are cores to render them.
      growthLanes: Math.max(1, plan.cores.value - 1),
      ...(timers === undefined ? {} : { timers }),
    })
  }

  /**
   * Takes the entry step and a CPU slot. Rejects with GATE_SHED when the
   * waiting room is full or entry did not happen within the entry wait, and
   * with the signal's reason on abort.
   */
  enter(signal?: AbortSignal): Promise<Admission> {
    return this.#core.enter(signal)
  }

  get budgetBytes(): number { return this.#core.budget }
  get chargedBytes(): number { return this.#core.charged }
  get brakeLevel(): BrakeLevel { return this.#core.brake }

  /** Moves the budget (the sampler's job); a larger budget resumes what it can. */
  setBudget(bytes: number): void {
    this.#core.budget = Math.max(0, Math.floor(bytes))
    this.#core.drain()
  }

  setBrakeLevel(level: BrakeLevel): void {
    this.#core.brake = level
  }

  snapshot(): GateSnapshot {
    return this.#core.snapshot()
  }
}
