/**
 * The serving advisory database of one mount (SPEC.md 3.1 rule 2): empty at
 * boot even when files remain on disk, filled by the consumer when it accepts
 * a qualified generation, and kept when a replacement is rejected. Both
 * sides of the process read it: the main thread's evaluator through
 * `database()`, and the workers through `shared` (one SharedArrayBuffer for
 * every worker, DESIGN.md). `generation` moves on every swap so caches keyed
 * by it (assembled responses, the workers' evaluators) are not reused across
 * generations.
 */
import type { AdvisoryDatabase } from '../artifact/database.js'

export interface ServingArtifact {
  readonly database: AdvisoryDatabase
  readonly shared: SharedArrayBuffer
  /** The object's publication time in the store (the push time); undefined counts as expired. */
  readonly publishedAt: Date | undefined
  readonly etag: string
}

export class AdvisorySlot {
  #serving: ServingArtifact | undefined
  #generation = 0

  get generation(): number { return this.#generation }
  get serving(): ServingArtifact | undefined { return this.#serving }

  database(): AdvisoryDatabase | undefined { return this.#serving?.database }

  swap(artifact: ServingArtifact): void {
    this.#serving = artifact
    this.#generation++
  }
}
