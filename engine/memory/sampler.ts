/**
 * The budget sampler (SPEC.md 8.1, 3.8): ten times a second it reads the
 * collector (V8 heap statistics) and the cgroup, sets the brake level and
 * moves the gate's budget.
 *
 * What moves the brake level (SPEC.md 3.8 leaves it "not shown"; our choice):
 *
 *   pressure = the largest of
 *     - heap used / old-generation limit of each heap (heap-reading.ts says
 *       why not V8's heap_size_limit): the main thread's and every
 *       pool thread's (thread-heaps.ts). Each heap against its own limit,
 *       not their sum against the sum: a pool thread past its
 *       `resourceLimits` dies (ERR_WORKER_OUT_OF_MEMORY) whatever the other
 *       heaps hold, and a sum would hide one full thread behind idle ones
 *       and behind the main thread's larger limit. The sums are reported;
 *     - cgroup memory in use / memory limit (working set: memory.current less
 *       inactive file pages; only with a memory limit): the whole process,
 *       heaps, buffers and native memory of every thread together.
 *
 *   Rising: 2 (braking) at pressure >= 0.85, 1 (holding) at >= 0.70.
 *   Falling needs 5 points more (hysteresis, so the level does not flap on
 *   one collection): leave 2 below 0.80, leave 1 below 0.65.
 *
 *   The plan leaves an eighth of the limit outside the heap, so a working set
 *   above 85% of the limit means memory outside the plan's heap is being used
 *   up; 70% is where a 1 GiB pod's heap ceiling plus one area starts to fill.
 *
 * What each level does to the budget:
 *   0 calm     grows by a sixteenth of (live ceiling - floor) per sample, up
 *              to the live ceiling (about 1.6 s from floor to ceiling);
 *   1 holding  keeps it where it is;
 *   2 braking  cuts it by a quarter per sample, down to the floor; started
 *              requests then pause and new ones wait at the gate.
 */
import type { AdmissionGate, BrakeLevel } from './gate.js'
import { readV8Heap, type HeapReading } from './heap-reading.js'
import { MiB, type MemoryPlan } from './plan.js'
import { systemTimers, type TimerHandle, type Timers } from './timers.js'

export const SAMPLE_INTERVAL_MS = 100
export const HOLD_AT = 0.70
export const BRAKE_AT = 0.85
export const HYSTERESIS = 0.05
export const CALM_GROWTH_STEPS = 16
export const BRAKE_CUT = 0.75

export { readV8Heap, type HeapReading }

export interface SamplerOptions {
  readonly gate: AdmissionGate
  readonly plan: MemoryPlan
  /** Defaults to this thread's V8 heap against its old-generation limit (heap-reading.ts). */
  readonly readHeap?: () => HeapReading
  /** The pool threads' heaps (ThreadHeapBoard.readings); omit when no pool reports. */
  readonly readThreadHeaps?: () => readonly HeapReading[]
  /** The cgroup's memory in use (see cgroup.ts memoryInUseReader); omit when there is no limit. */
  readonly readMemoryInUse?: () => number | undefined
  readonly timers?: Timers
  readonly intervalMs?: number
}

/** What one sample read of the heaps: sums over the main thread and the reporting pool threads. */
export interface HeapsReading {
  readonly usedBytes: number
  readonly limitBytes: number
  /** Heaps read: the main thread's and one per reporting pool thread. */
  readonly heaps: number
  /** The largest used / limit among them. */
  readonly fullest: number
}

export interface Sample {
  readonly pressure: number
  readonly brakeLevel: BrakeLevel
  readonly budgetBytes: number
  readonly heaps: HeapsReading
}

const NO_HEAPS: HeapsReading = Object.freeze({ usedBytes: 0, limitBytes: 0, heaps: 0, fullest: 0 })

/** The level that `pressure` moves `current` to (the rule in the header). */
export function nextBrakeLevel(current: BrakeLevel, pressure: number): BrakeLevel {
  const rising: BrakeLevel = pressure >= BRAKE_AT ? 2 : pressure >= HOLD_AT ? 1 : 0
  const falling: BrakeLevel = pressure >= BRAKE_AT - HYSTERESIS ? 2 : pressure >= HOLD_AT - HYSTERESIS ? 1 : 0
  return Math.max(rising, Math.min(current, falling)) as BrakeLevel
}

export class BudgetSampler {
  readonly #gate: AdmissionGate
  readonly #readHeap: () => HeapReading
  readonly #readThreadHeaps: (() => readonly HeapReading[]) | undefined
  readonly #readMemoryInUse: (() => number | undefined) | undefined
  readonly #memoryLimit: number | null
  readonly #floor: number
  readonly #ceiling: number
  readonly #growth: number
  readonly #timers: Timers
  readonly #intervalMs: number
  #timer: TimerHandle | undefined
  #level: BrakeLevel = 0
  #heaps: HeapsReading = NO_HEAPS

  constructor(options: SamplerOptions) {
    this.#gate = options.gate
    this.#readHeap = options.readHeap ?? (() => readV8Heap())
    this.#readThreadHeaps = options.readThreadHeaps
    this.#readMemoryInUse = options.readMemoryInUse
    this.#memoryLimit = options.plan.memoryLimitBytes.value
    this.#floor = options.plan.budgetFloorBytes.value
    this.#ceiling = Math.max(this.#floor, options.plan.liveCeilingBytes.value)
    this.#growth = Math.max(MiB, Math.floor((this.#ceiling - this.#floor) / CALM_GROWTH_STEPS))
    this.#timers = options.timers ?? systemTimers
    this.#intervalMs = options.intervalMs ?? SAMPLE_INTERVAL_MS
  }

  get brakeLevel(): BrakeLevel { return this.#level }

  /** The heaps as the last sample read them (zeros before the first). */
  get heaps(): HeapsReading { return this.#heaps }

  /** Starts sampling; the timer never keeps the process alive. */
  start(): void {
    if (this.#timer !== undefined) return
    this.#timer = this.#timers.every(this.#intervalMs, () => { this.sample() })
    this.#timer.unref()
  }

  stop(): void {
    this.#timer?.clear()
    this.#timer = undefined
  }

  /** One reading: sets the brake level and moves the budget. */
  sample(): Sample {
    const pressure = this.#pressure()
    this.#level = nextBrakeLevel(this.#level, pressure)
    const budget = this.#gate.budgetBytes
    let next = budget
    if (this.#level === 0) next = Math.min(this.#ceiling, Math.max(budget, this.#floor) + this.#growth)
    else if (this.#level === 2) next = Math.max(this.#floor, Math.floor(budget * BRAKE_CUT))
    if (next !== budget) this.#gate.setBudget(next)
    this.#gate.setBrakeLevel(this.#level)
    return { pressure, brakeLevel: this.#level, budgetBytes: this.#gate.budgetBytes, heaps: this.#heaps }
  }

  #pressure(): number {
    let usedBytes = 0
    let limitBytes = 0
    let heaps = 0
    let fullest = 0
    const add = (heap: HeapReading): void => {
      if (heap.limitBytes <= 0) return
      usedBytes += heap.usedBytes
      limitBytes += heap.limitBytes
      heaps += 1
      fullest = Math.max(fullest, heap.usedBytes / heap.limitBytes)
    }
    add(this.#readHeap())
    if (this.#readThreadHeaps !== undefined) for (const heap of this.#readThreadHeaps()) add(heap)
    this.#heaps = { usedBytes, limitBytes, heaps, fullest }
    let pressure = fullest
    if (this.#memoryLimit !== null && this.#readMemoryInUse !== undefined) {
      const inUse = this.#readMemoryInUse()
      if (inUse !== undefined) pressure = Math.max(pressure, inUse / this.#memoryLimit)
    }
    return pressure
  }
}
