/**
 * The mirror worker's one job (SPEC.md 6.1 worker 1, 3.7): re-verify a
 * public artifact and publish it to the mirror target of its mount, the
 * same pipeline for every ecosystem over a target protocol
 * (target-protocol.ts: js-target-protocol.ts publishes to an npm registry,
 * py-target-protocol.ts uploads to a legacy upload API).
 *
 *  1. The job's digest, as the protocol reads it, is what the bytes must
 *     hash to; a job without a usable digest cannot succeed.
 *  2. The target is asked first: the version already there with the same
 *     digest is success (at-least-once delivery repeats jobs); with a
 *     different one it is a collision, refused and never overwritten.
 *  3. What the upload needs beside the bytes is read from the public
 *     upstream (the gated manifest; the core metadata).
 *  4. The artifact is fetched from the job's authoritative URL through the
 *     public leg's own client: the same egress policy (https only,
 *     certificate validated, host allowlist, internal-range block,
 *     tarball-host policy), anonymous, no redirect followed.
 *  5. It streams into the upload's body while it is hashed and counted
 *     against `limits.maxArtifactBytes`; the body's closing part is written
 *     only once the digests matched, so a mismatch or an oversized artifact
 *     aborts the publication before the target can accept it.
 *  6. A target that may hold the file already (a 409) is asked again.
 *
 * The outcome says what the consumer does with the delivery: delete it,
 * release it at once (a transient publish failure, SPEC.md 3.7), or leave
 * it to its window (a job that cannot succeed is left for the redrive
 * policy; other transient failures wait out their window).
 */
import { createHash } from 'node:crypto'
import { ServiceError, isServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { ADMISSION_CHARGES } from '../memory/admission-charges.js'
import { PAUSE_CAP_UPSTREAM_READ_MS, type Admission } from '../memory/gate.js'
import type { ArtifactBody } from '../upstream/http1/artifact-body.js'
import { SignalAbort } from '../upstream/http1/request-abort.js'
import { DigestVerifier } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import { isTransientStatus, type ChunkCharge } from './target-connection.js'
import { JobOutcomes, MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED, type MirrorOutcome } from './job-outcomes.js'
import type { Holding, PublicArtifactSource, StreamedArtifact, TargetPlan, TargetProtocol } from './target-protocol.js'

/** info: the version was published to the mirror target. */
export const MIRROR_JOB_MIRRORED = 'mirror job mirrored'
/** error: the target holds the version with another integrity (issue 12): both digests logged. */
export const MIRROR_COLLISION = 'mirror collision: the target holds this version with a different integrity'
/** error: the bytes or the manifest do not match the job's digests. */
export const MIRROR_INTEGRITY_MISMATCH = 'mirror integrity mismatch'
/** debug: the target already holds the job's version with its digest. */
export const MIRROR_JOB_ALREADY_PRESENT = 'mirror job already present'
// The log lines every outcome shares live with the outcomes (job-outcomes.ts).
export { MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED, MIRROR_JOB_RETRIED } from './job-outcomes.js'

/** The process's memory gate, when the worker shares a heap with the proxy (embedded): its document reads are charged to it. */
export interface MirrorMemory {
  enter(signal?: AbortSignal): Promise<Admission>
}

export interface MirrorWorkerOptions {
  /** The mount's public leg client. */
  readonly source: PublicArtifactSource
  readonly target: TargetProtocol
  /** `limits.maxArtifactBytes` resolved: the largest artifact accepted. */
  readonly maxArtifactBytes: number
  readonly logger: Logger
  readonly memory?: MirrorMemory
  /** A version was stored on the target: the proxy's cached view of its package is out of date (docs/cache.md "Invalidation"); never rejects. */
  readonly onMirrored?: (packageName: string) => Promise<void>
}

/** SPEC.md 8.1's rate for a js listing read: the worker's two document reads are listings too. */
const DOCUMENT_CHARGE_PER_BYTE = ADMISSION_CHARGES.sourcePerByte.js

/** A chunk charge against the job's admission, or undefined when the worker runs on its own (no gate). */
function chargeChunks(admission: Admission | undefined, signal: AbortSignal | undefined): ChunkCharge | undefined {
  if (admission === undefined) return undefined
  return (chunk) => {
    const bytes = Math.ceil(chunk.byteLength * DOCUMENT_CHARGE_PER_BYTE)
    if (admission.tryCharge(bytes)) return undefined
    return admission.charge(bytes, { timeoutMs: PAUSE_CAP_UPSTREAM_READ_MS, ...(signal === undefined ? {} : { signal }) })
  }
}

export class MirrorWorker {
  readonly #source: PublicArtifactSource
  readonly #target: TargetProtocol
  readonly #max: number
  readonly #logger: Logger
  readonly #onMirrored: ((packageName: string) => Promise<void>) | undefined
  readonly #memory: MirrorMemory | undefined
  readonly #outcomes: JobOutcomes

  constructor(options: MirrorWorkerOptions) {
    this.#source = options.source
    this.#target = options.target
    this.#max = options.maxArtifactBytes
    this.#logger = options.logger
    this.#onMirrored = options.onMirrored
    this.#memory = options.memory
    this.#outcomes = new JobOutcomes({ logger: options.logger, maxArtifactBytes: options.maxArtifactBytes, targetAuthority: options.target.authority })
  }

  /** Runs one job. Throws only the signal's reason when `signal` aborts (the consumer cancelled it). */
  async process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome> {
    const where = { ...this.#target.logFields, package: job.package, version: job.version, filename: job.filename }
    let admission: Admission | undefined
    try {
      // Embedded in the proxy, the documents this job reads share the requests' heap: charged like a listing (SPEC.md 8.1).
      if (this.#memory !== undefined) admission = await this.#memory.enter(signal)
      return await this.#process(job, where, signal, chargeChunks(admission, signal))
    } catch (error) {
      return this.#outcomes.failed(where, error, signal)
    } finally {
      admission?.release()
    }
  }

  async #process(job: MirrorJob, where: Record<string, string>, signal: AbortSignal | undefined, charge: ChunkCharge | undefined): Promise<MirrorOutcome> {
    const plan = this.#target.plan(job)
    if ('refused' in plan) {
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'no_digest', reason: plan.refused })
      return { result: 'no_digest', disposition: 'leave', reason: plan.refused }
    }

    let present: Holding
    try {
      present = await plan.lookup(signal, charge)
    } catch (error) {
      if (isServiceError(error, 'GATE_SHED') || isServiceError(error, 'GATE_PAUSE_TIMEOUT')) throw error
      return this.#outcomes.targetFailure(where, error, signal)
    }
    if (present.kind !== 'absent') return this.#alreadyThere(where, present)

    const upload = await plan.prepare({ source: this.#source, signal, charge, logger: this.#logger, where })
    if ('refused' in upload) {
      if (upload.refused === 'integrity_mismatch') this.#logger.error(MIRROR_INTEGRITY_MISMATCH, { ...where, ...upload.log })
      else this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: upload.refused, ...upload.log })
      return { result: upload.refused, disposition: 'leave', reason: upload.reason }
    }

    const response = await this.#source.openArtifact(new URL(job.url), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
    const status = response.statusCode
    if (status !== 200 || response.body === null) {
      response.body?.destroy()
      if (isTransientStatus(status)) return this.#outcomes.retried(where, `upstream status ${status}`, 'leave')
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', status })
      return { result: 'upstream_refused', disposition: 'leave', reason: `the public upstream answered ${status}` }
    }
    const header = response.headers['content-length']
    const declared = header === undefined || header === '' ? undefined : Number(header)
    if (declared !== undefined && Number.isFinite(declared) && declared > this.#max) {
      response.body.destroy()
      return this.#outcomes.tooLarge(where, declared)
    }

    const artifact = new VerifiedStream(response.body, plan, job.md5, declared, this.#max)
    let answer: { readonly status: number }
    try {
      answer = await upload.send(artifact, signal)
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      if (isServiceError(error, 'MIRROR_ARTIFACT_TOO_LARGE')) return this.#outcomes.tooLarge(where, artifact.bytes)
      if (isServiceError(error, 'MIRROR_INTEGRITY_MISMATCH')) {
        const mismatch = plan.mismatch(artifact.actual)
        this.#logger.error(MIRROR_INTEGRITY_MISMATCH, { ...where, ...mismatch })
        return { result: 'integrity_mismatch', disposition: 'leave', reason: mismatch.detail }
      }
      // No answer from the target: a transient publish failure, released at once (SPEC.md 3.7).
      if (isServiceError(error) && error.data?.['target'] !== undefined) return this.#outcomes.retried(where, 'no answer from the mirror target', 'release', error)
      // The artifact read failed mid-stream: an upstream problem, which waits out its window (process() maps it).
      throw error
    } finally {
      // A target that answered before pulling the whole body (or any of it) leaves the artifact unread: let its connection go.
      response.body.destroy()
    }
    return this.#answered(plan, where, answer.status, artifact.bytes, signal)
  }

  /** What the target's answer to the upload settles. */
  async #answered(plan: TargetPlan, where: Record<string, string>, status: number, bytes: number, signal: AbortSignal | undefined): Promise<MirrorOutcome> {
    const meaning = this.#target.classify(status)
    if (meaning.kind === 'stored') {
      this.#logger.info(MIRROR_JOB_MIRRORED, { ...where, bytes, target: this.#target.authority })
      await this.#onMirrored?.(where['package'] as string)
      return { result: 'mirrored', disposition: 'delete' }
    }
    if (meaning.kind === 'ask-again') {
      // Another delivery of the same job (or another worker) got there first: decide on what the target now holds.
      let now: Holding
      try {
        now = await plan.lookup(signal, undefined)
      } catch (error) {
        return this.#outcomes.targetFailure(where, error, signal)
      }
      if (now.kind !== 'absent') return this.#alreadyThere(where, now)
      if (meaning.retryIfAbsent !== undefined) return this.#outcomes.retried(where, meaning.retryIfAbsent, 'release')
    }
    if (isTransientStatus(status)) return this.#outcomes.retried(where, `target status ${status}`, 'release')
    this.#logger.error(MIRROR_PUBLISH_REFUSED, { ...where, status, target: this.#target.authority })
    return { result: 'publish_refused', disposition: 'leave', reason: `the mirror target answered ${status}` }
  }

  #alreadyThere(where: Record<string, string>, held: Exclude<Holding, { kind: 'absent' }>): MirrorOutcome {
    if (held.kind === 'same') {
      this.#logger.debug(MIRROR_JOB_ALREADY_PRESENT, where)
      return { result: 'already_present', disposition: 'delete' }
    }
    this.#logger.error(MIRROR_COLLISION, { ...where, target: this.#target.authority, comparison: held.comparison, job: held.job, held: held.held })
    return { result: 'collision', disposition: 'leave', reason: held.reason }
  }
}

/** The body's chunks; the body is destroyed when the iteration ends, however it ends. */
async function* chunksOf(body: ArtifactBody): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body as AsyncIterable<Uint8Array>) yield chunk
  } finally {
    body.destroy()
  }
}

/**
 * The artifact's bytes on their way into the upload: each chunk counted
 * against the limit and hashed with the plan's digest (and the job's md5,
 * which a `py` form carries) before the body writes it.
 */
class VerifiedStream implements StreamedArtifact {
  readonly chunks: AsyncIterable<Uint8Array>
  readonly declared: number | undefined
  readonly #verifier: DigestVerifier
  readonly #md5: ReturnType<typeof createHash> | undefined
  readonly #expectedMd5: string | undefined
  readonly #max: number
  #bytes = 0
  #md5Actual: string | undefined

  constructor(body: ArtifactBody, plan: TargetPlan, md5: string | undefined, declared: number | undefined, max: number) {
    this.chunks = chunksOf(body)
    this.#verifier = new DigestVerifier(plan.digest)
    this.#expectedMd5 = md5
    this.#md5 = md5 === undefined ? undefined : createHash('md5')
    this.declared = declared
    this.#max = max
  }

  get bytes(): number { return this.#bytes }

  see(chunk: Uint8Array): void {
    this.#bytes += chunk.byteLength
    if (this.#bytes > this.#max) throw new ServiceError('MIRROR_ARTIFACT_TOO_LARGE', { data: { limit: this.#max } })
    this.#verifier.update(chunk)
    this.#md5?.update(chunk)
  }

  verify(): number {
    this.#md5Actual = this.#md5?.digest('hex')
    // MUST: every digest checked before the body's closing part; without it the target cannot accept the upload.
    if (!this.#verifier.matches() || (this.#md5Actual !== undefined && this.#md5Actual !== this.#expectedMd5)) {
      throw new ServiceError('MIRROR_INTEGRITY_MISMATCH', { data: { actual: this.#verifier.actual } })
    }
    if (this.declared !== undefined && Number.isFinite(this.declared) && this.#bytes !== this.declared) {
      throw new ServiceError('UPSTREAM_DECODE', { data: { reason: 'the upstream sent another length than it declared' } })
    }
    return this.#bytes
  }

  /** What was hashed, after `verify()`. */
  get actual(): { digest: string, md5: string | undefined } {
    return { digest: this.#verifier.actual, md5: this.#md5Actual }
  }
}
