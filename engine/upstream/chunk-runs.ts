/**
 * A listing's body copied into runs of 256 KiB as it arrives, instead of
 * kept as the socket's and the decoder's 16 KiB pieces (issue 18: memory
 * after a flood).
 *
 * Why: the main thread holds a listing from its first byte until the pool
 * takes it, paused by the memory gate for seconds under a flood. Kept as
 * pieces, a 20 MB document is 1,280 allocations in the main thread's malloc
 * arena, alive for as long as the read is paused and interleaved with
 * everything else that thread allocates. An arena gives memory back only
 * from its top, so every live piece pins the free space below it: after a
 * flood of 20 MB documents about 200 MiB stayed resident in the arena.
 * Copying each piece into its run at once lets the piece die young, and a
 * run is above the allocator's mmap threshold (held fixed by the launcher,
 * engine/memory/malloc-tunables.ts): it is mapped on its own and unmapped
 * when freed. A run also moves to the pool as one transferable instead of 16.
 *
 * Collecting the pieces and joining them once they reach a run's size was
 * tried first: the pieces a paused read holds before its run is sealed still
 * kept about 110 MiB in the arena after the flood.
 *
 * A body of one piece is handed back as it came, uncopied; a body whose
 * length is announced gets a first run of that size, so a small listing is
 * copied once into a block of its own size.
 */

/** A run's size: above the 128 KiB mmap threshold, and a small copy against a render. */
export const RUN_BYTES = 256 * 1024

export class ChunkRuns {
  readonly #runs: Uint8Array[] = []
  /** The first piece, kept as it came until a second one arrives. */
  #first: Uint8Array | undefined
  #run: Buffer | undefined
  #filled = 0
  #nextRunBytes: number

  /** `expectedBytes`: the announced length, when there is one (an identity body's `content-length`). */
  constructor(expectedBytes?: number) {
    this.#nextRunBytes = expectedBytes !== undefined && Number.isSafeInteger(expectedBytes) && expectedBytes > 0
      ? Math.min(expectedBytes, RUN_BYTES)
      : RUN_BYTES
  }

  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return
    if (this.#run === undefined && this.#runs.length === 0) {
      if (this.#first === undefined) {
        this.#first = chunk
        return
      }
      const first = this.#first
      this.#first = undefined
      this.#copy(first)
    }
    this.#copy(chunk)
  }

  /** The body, in order. Every run owns its whole buffer, so it moves to the pool without a copy. */
  finish(): Uint8Array[] {
    if (this.#first !== undefined) {
      const only = this.#first
      this.#first = undefined
      return [only]
    }
    const run = this.#run
    if (run !== undefined && this.#filled > 0) {
      if (this.#filled === run.byteLength) this.#runs.push(run)
      else {
        // Its own block, not a view: a view would be copied again on its way to the pool (packument-client.ts transferable()).
        const tail = Buffer.allocUnsafeSlow(this.#filled)
        run.copy(tail, 0, 0, this.#filled)
        this.#runs.push(tail)
      }
    }
    this.#run = undefined
    this.#filled = 0
    return this.#runs.splice(0)
  }

  #copy(chunk: Uint8Array): void {
    let at = 0
    while (at < chunk.byteLength) {
      if (this.#run === undefined) {
        this.#run = Buffer.allocUnsafeSlow(this.#nextRunBytes)
        this.#nextRunBytes = RUN_BYTES
        this.#filled = 0
      }
      const n = Math.min(chunk.byteLength - at, this.#run.byteLength - this.#filled)
      this.#run.set(chunk.subarray(at, at + n), this.#filled)
      this.#filled += n
      at += n
      if (this.#filled === this.#run.byteLength) {
        this.#runs.push(this.#run)
        this.#run = undefined
      }
    }
  }
}
