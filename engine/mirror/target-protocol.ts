/**
 * What the mirror pipeline (mirror-worker.ts) asks of one ecosystem's
 * mirror target (SPEC.md 6.1 worker 1): `js` publishes to an npm registry
 * (js-target-protocol.ts), `py` uploads to a legacy upload API
 * (py-target-protocol.ts). The pipeline does what every job does alike:
 * the memory charge, the order of the steps, the artifact fetch through the
 * public leg's client, the size limit, the digest check before the body's
 * closing part, the outcomes and their log lines. A protocol answers only
 * what differs, for one job at a time (`plan`):
 *
 * 1. what the job's bytes must hash to, or why it cannot succeed;
 * 2. `lookup`: whether the target holds the version already, with the same
 *    digest (already present) or another (a collision, never overwritten);
 * 3. `prepare`: what the upload needs beside the bytes, read from the
 *    public upstream (the gated manifest, the core metadata);
 * 4. `send`: the publication or upload, its body built around the
 *    artifact's bytes as they stream;
 * 5. `classify`: what the target's answer means.
 */
import type { Logger } from '../log/logger.js'
import type { ArtifactResponse } from '../upstream/http1/artifact-response.js'
import type { OpenArtifactOptions } from '../upstream/upstream-client.js'
import type { Comparison, ExpectedDigest } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import type { ChunkCharge, TargetAnswer } from './target-connection.js'
import type { ManifestSource } from './version-manifest.js'

/** What the pipeline needs of the public upstream: the public leg's UpstreamClient. */
export interface PublicArtifactSource extends ManifestSource {
  openArtifact(url: URL, options: OpenArtifactOptions): Promise<ArtifactResponse>
}

export interface TargetProtocol {
  /** The target's host:port, for the log lines. */
  readonly authority: string
  /** Fields every log line of a job starts with, before package, version and filename. */
  readonly logFields: Readonly<Record<string, string>>
  /** The job on this target, or why it cannot succeed (`no_digest`: nothing to verify against). */
  plan(job: MirrorJob): TargetPlan | { readonly refused: string }
  classify(status: number): Answer
}

/** One job on one target. */
export interface TargetPlan {
  /** What the fetched bytes must hash to. */
  readonly digest: ExpectedDigest
  /** Throws UPSTREAM_UNAVAILABLE for a transient failure (the target is down), any other ServiceError for a refusal. */
  lookup(signal: AbortSignal | undefined, charge: ChunkCharge | undefined): Promise<Holding>
  /** Throws the source's ServiceError when a read fails. */
  prepare(context: PrepareContext): Promise<Upload | EarlyRefusal>
  /** The log fields of bytes that did not verify: what was expected, what came. */
  mismatch(actual: ActualDigests): MismatchDetail
}

export type Holding =
  | { readonly kind: 'absent' }
  | { readonly kind: 'same' }
  /** A collision: the job's and the held digests, both logged. */
  | { readonly kind: 'other'; readonly comparison: Comparison; readonly job: Readonly<Record<string, unknown>>; readonly held: Readonly<Record<string, unknown>>; readonly reason: string }

export interface PrepareContext {
  readonly source: PublicArtifactSource
  readonly signal: AbortSignal | undefined
  readonly charge: ChunkCharge | undefined
  /** For a protocol's own debug notes; the pipeline logs every outcome. */
  readonly logger: Logger
  readonly where: Readonly<Record<string, string>>
}

/** A job refused before its artifact is fetched; `log` goes on the pipeline's line. */
export interface EarlyRefusal {
  readonly refused: 'upstream_refused' | 'integrity_mismatch'
  readonly reason: string
  readonly log: Readonly<Record<string, unknown>>
}

/** The upload, everything ready but the artifact's bytes. */
export interface Upload {
  /**
   * Sends it, the body pulled as the connection drains. The body sees each
   * chunk (`artifact.see`) before writing it and writes its closing part
   * only after `artifact.verify()` returned, so a target never accepts
   * bytes that failed verification or an interrupted body. Throws what the
   * body threw; any HTTP status comes back (a refusal's with the target's
   * reason); no answer throws UPSTREAM_UNAVAILABLE with `data.target`.
   * Callable again for another try, with a new artifact stream.
   */
  send(artifact: StreamedArtifact, signal: AbortSignal | undefined): Promise<TargetAnswer>
}

export interface StreamedArtifact {
  /** The bytes as they arrive; the source is destroyed when the iteration ends, however it ends. */
  readonly chunks: AsyncIterable<Uint8Array>
  /** Counts a chunk against the size limit (throws MIRROR_ARTIFACT_TOO_LARGE) and hashes it. */
  see(chunk: Uint8Array): void
  /** After the last chunk: throws MIRROR_INTEGRITY_MISMATCH, or UPSTREAM_DECODE for another length than declared; returns the bytes seen. */
  verify(): number
  /** The length the upstream declared, when it declared one. */
  readonly declared: number | undefined
}

export interface ActualDigests {
  /** `<alg>-<base64>` of the plan's algorithm. */
  readonly digest: string
  /** Hex, when the job carries an md5. */
  readonly md5: string | undefined
}

export interface MismatchDetail {
  readonly detail: string
  readonly expected: Readonly<Record<string, unknown>>
  readonly actual: unknown
}

/**
 * `stored`; `ask-again` when the target may hold a file of that name (the
 * lookup that missed it raced another delivery): asked again, the same
 * digest is already present and another a collision, and when it holds
 * none the answer is a refusal like `other`'s. `other`: a transient status
 * pauses the target (target-pace.ts), any other is a refusal, tried again
 * up to `limits.mirrorRefusalTries` times (mirror-worker.ts).
 */
export type Answer =
  | { readonly kind: 'stored' }
  | { readonly kind: 'ask-again' }
  | { readonly kind: 'other' }
