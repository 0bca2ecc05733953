/**
 * Every pool thread's heap, for the budget sampler (SPEC.md 8.1: the sampler
 * "reads the collector ... ten times a second and moves the budget").
 *
 * Why: the packument work (scan, merge, gate, render) runs in the Piscina
 * pool's threads, each an isolate with its own heap and its own limit
 * (`resourceLimits`, v8-limits.ts). The main thread's getHeapStatistics()
 * sees none of it, so a flood whose pressure is all in the pool never moved
 * the budget. Each pool thread now publishes its own heap used and limit
 * into a slot of one SharedArrayBuffer; the sampler reads every slot without
 * a message or a wait, so sampling stays as cheap as before.
 *
 * The buffer is made by the role's composition root and handed to the pool as
 * `workerData` (engine/ never names a worker file); the thread side is
 * workers/heap-report.ts.
 *
 * Layout: SLOT_INTS Int32 values per slot: the owner's threadId (0: free),
 * heap used in KiB and heap limit in KiB. Int32 so every
 * field is read and written with Atomics, never torn; KiB so an Int32 holds
 * up to 2 TiB. A thread claims a free slot with compareExchange on the owner;
 * the composition root frees it when the pool reports the thread gone
 * (Piscina's `workerDestroy`), since a thread that died of out-of-memory
 * cannot free it itself.
 */
import type { HeapReading } from './heap-reading.js'

const SLOT_INTS = 3
const OWNER = 0
const USED_KIB = 1
const LIMIT_KIB = 2
const KiB = 1024
const INT32_MAX = 0x7fffffff

function kib(bytes: number): number {
  return Math.min(INT32_MAX, Math.max(0, Math.ceil(bytes / KiB)))
}

function view(buffer: SharedArrayBuffer): Int32Array {
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength === 0 || buffer.byteLength % (SLOT_INTS * 4) !== 0) {
    throw new TypeError('thread heaps: the buffer must be a SharedArrayBuffer made by ThreadHeapBoard')
  }
  return new Int32Array(buffer)
}

/** The main thread's side: owns the buffer, reads every slot, frees a dead thread's slot. */
export class ThreadHeapBoard {
  readonly #cells: Int32Array
  readonly buffer: SharedArrayBuffer

  /** `slots` bounds the threads that can report at once; a thread finding no free slot does not report. */
  constructor(slots: number) {
    if (!Number.isSafeInteger(slots) || slots < 1) throw new TypeError('ThreadHeapBoard: slots must be a positive integer')
    this.buffer = new SharedArrayBuffer(slots * SLOT_INTS * 4)
    this.#cells = new Int32Array(this.buffer)
  }

  get slots(): number { return this.#cells.length / SLOT_INTS }

  /** The heaps of the threads that have reported since they claimed their slot. */
  readings(): HeapReading[] {
    const out: HeapReading[] = []
    const cells = this.#cells
    for (let base = 0; base < cells.length; base += SLOT_INTS) {
      if (Atomics.load(cells, base + OWNER) === 0) continue
      const limit = Atomics.load(cells, base + LIMIT_KIB)
      if (limit === 0) continue
      out.push({ usedBytes: Atomics.load(cells, base + USED_KIB) * KiB, limitBytes: limit * KiB })
    }
    return out
  }

  /** Frees the slot of `threadId` (gone from the pool); its last reading no longer counts. */
  release(threadId: number): void {
    const cells = this.#cells
    for (let base = 0; base < cells.length; base += SLOT_INTS) {
      if (Atomics.load(cells, base + OWNER) !== threadId) continue
      // Zeroed before the owner is, so the next claimant never inherits a reading.
      Atomics.store(cells, base + USED_KIB, 0)
      Atomics.store(cells, base + LIMIT_KIB, 0)
      Atomics.compareExchange(cells, base + OWNER, threadId, 0)
    }
  }
}

/** A pool thread's side: its claimed slot. */
export class ThreadHeapSlot {
  readonly #cells: Int32Array
  readonly #base: number
  readonly #threadId: number

  private constructor(cells: Int32Array, base: number, threadId: number) {
    this.#cells = cells
    this.#base = base
    this.#threadId = threadId
  }

  /** Claims a free slot for `threadId` (a worker's, so never 0); undefined when every slot is taken. */
  static claim(buffer: SharedArrayBuffer, threadId: number): ThreadHeapSlot | undefined {
    if (!Number.isSafeInteger(threadId) || threadId < 1 || threadId > INT32_MAX) {
      throw new TypeError('ThreadHeapSlot: threadId must be a worker thread id (a positive integer)')
    }
    const cells = view(buffer)
    for (let base = 0; base < cells.length; base += SLOT_INTS) {
      if (Atomics.compareExchange(cells, base + OWNER, 0, threadId) === 0) return new ThreadHeapSlot(cells, base, threadId)
    }
    return undefined
  }

  /** Publishes this thread's heap; a no-op once the slot was freed for another thread. */
  publish(reading: HeapReading): void {
    const cells = this.#cells
    if (Atomics.load(cells, this.#base + OWNER) !== this.#threadId) return
    Atomics.store(cells, this.#base + USED_KIB, kib(reading.usedBytes))
    Atomics.store(cells, this.#base + LIMIT_KIB, kib(reading.limitBytes))
  }
}
