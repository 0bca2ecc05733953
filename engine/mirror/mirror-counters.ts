/**
 * The counter `service.mirror.jobs.processed` (SPEC.md 6.3, 3.7) by
 * `result`: one count per delivery the worker decided. Telemetry reads
 * `snapshot()` (through RunningRole.metrics); nothing here exports anything,
 * so the telemetry issue can back it with an OpenTelemetry counter later.
 */
export const MIRROR_RESULTS = [
  /** Published to the mirror target. */
  'mirrored',
  /** The target already holds the version with the same integrity (at-least-once delivery repeats jobs). */
  'already_present',
  /** The target holds the version with a different integrity: refused, never overwritten. */
  'collision',
  /** The artifact is larger than `limits.maxArtifactBytes`. */
  'too_large',
  /** The fetched bytes, or the upstream manifest, do not match the job's digests. */
  'integrity_mismatch',
  /** The job carries no usable digest: nothing to verify against, so it cannot succeed. */
  'no_digest',
  /** This worker has no mirror target for the job's mount (mirror-dispatch.ts). */
  'publish_refused',
  /** The target refused every try (`limits.mirrorRefusalTries`: a 409 for a version left half-written, 401, 403, 413...): left for the dead-letter queue. */
  'refused',
  /** The public upstream no longer has the version or the artifact, or refuses it permanently. */
  'upstream_refused',
  /** A transient failure outside the target (the public upstream, the memory gate): retried after its window. */
  'retried',
  /** Renewal of the message kept failing: the job was cancelled or skipped, left to its window. */
  'given_up',
  /** The delivery reached the receive budget: deleted, with an error log (SPEC.md 3.7). */
  'discarded',
] as const
export type MirrorResult = (typeof MIRROR_RESULTS)[number]

export class MirrorCounters {
  readonly #counts = new Map<MirrorResult, number>()

  record(result: MirrorResult): void {
    this.#counts.set(result, (this.#counts.get(result) ?? 0) + 1)
  }

  get(result: MirrorResult): number {
    return this.#counts.get(result) ?? 0
  }

  /** Every result with its running total, zeros included; a fresh object each call. */
  snapshot(): Record<MirrorResult, number> {
    const out = {} as Record<MirrorResult, number>
    for (const result of MIRROR_RESULTS) out[result] = this.#counts.get(result) ?? 0
    return out
  }
}
