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
 *  3. What the upload needs beside the bytes is read once per job (the
 *     gated manifest, from a packument the proxy holds or the public
 *     upstream; the core metadata).
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
 * Steps 2 to 6 are one try, admitted by the target's pace (target-pace.ts):
 *
 * - The target down (no answer, 408, 429, 5xx, its credential unavailable)
 *   or refusing the mirror's credential (401, 403 at the lookup or the
 *   publication: the same for every job, so a configuration fault of the
 *   target or a rotated token, never a reason to dead-letter the backlog):
 *   the pace pauses the target and the job is held, its delivery kept (its
 *   visibility renewed by the consumer), and tried again once the target
 *   answers. No receive is spent on it.
 * - The target refusing (any other status but 404 at the lookup, which is
 *   `absent`; a 409 for a version it does not hold: one left half-written):
 *   tried again after 2 s, then 4 s...
 *   (doubling), up to `limits.mirrorRefusalTries` tries in all; refused every
 *   time, the job is `refused`: one error line naming package, version,
 *   the target's status and its reason, and left to its window so the
 *   redrive policy moves it to the dead-letter queue (SPEC.md 3.7). Never an
 *   immediate retry loop.
 *
 * The outcome says what the consumer does with the delivery: delete it, or
 * leave it to its window (a job that cannot succeed is left for the redrive
 * policy; a transient upstream failure waits out its window).
 *
 * Embedded in the proxy, each try holds a memory admission for its document
 * reads (SPEC.md 8.1), never a held job or a pause: an outage of the target
 * takes no admission from the installs the proxy serves.
 */
import { createHash } from 'node:crypto'
import { ServiceError, isServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { ADMISSION_CHARGES } from '../memory/admission-charges.js'
import { PAUSE_CAP_UPSTREAM_READ_MS, type Admission } from '../memory/gate.js'
import type { ArtifactBody } from '../upstream/http1/artifact-body.js'
import { SignalAbort } from '../upstream/http1/request-abort.js'
import { DigestVerifier } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import { isTransientStatus, type ChunkCharge, type TargetAnswer } from './target-connection.js'
import { JobOutcomes, MIRROR_JOB_REFUSED, type MirrorOutcome, type TargetRefusal } from './job-outcomes.js'
import { TargetPace, type TargetTicket } from './target-pace.js'
import type { Holding, PublicArtifactSource, StreamedArtifact, TargetPlan, TargetProtocol, Upload } from './target-protocol.js'

/** info: the version was published to the mirror target. */
export const MIRROR_JOB_MIRRORED = 'mirror job mirrored'
/** error: the target holds the version with another integrity (issue 12): both digests logged. */
export const MIRROR_COLLISION = 'mirror collision: the target holds this version with a different integrity'
/** error: the bytes or the manifest do not match the job's digests. */
export const MIRROR_INTEGRITY_MISMATCH = 'mirror integrity mismatch'
/** debug: the target already holds the job's version with its digest. */
export const MIRROR_JOB_ALREADY_PRESENT = 'mirror job already present'
/** debug: the target is down; the job waits for it in its delivery. */
export const MIRROR_JOB_HELD = 'mirror job held until its target answers'
// The log lines every outcome shares live with the outcomes (job-outcomes.ts).
export { MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED, MIRROR_JOB_RETRIED, MIRROR_PUBLICATION_TRIED_AGAIN } from './job-outcomes.js'

/** Default `limits.mirrorRefusalTries`: tries of a job the target refuses before it is `refused`. */
export const DEFAULT_REFUSAL_TRIES = 3
/** Wait before the second try of a refused job; doubled before each further one. */
export const REFUSAL_PAUSE_MS = 2_000

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
  /** The target's pace (shared with its connection's answer times); default one of its own, one job at a time. */
  readonly pace?: TargetPace
  /** `limits.mirrorRefusalTries`; default 3. */
  readonly refusalTries?: number
  /** Wait before the second try of a refused job (doubled each time); tests shorten it. */
  readonly refusalPauseMs?: number
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

/** One try's end: the job settled, the target down (held, tried again), or a refusal (tried again up to the bound). */
type Step =
  | { readonly kind: 'settled'; readonly outcome: MirrorOutcome }
  | { readonly kind: 'down' }
  | { readonly kind: 'refused'; readonly refusal: TargetRefusal }

const DOWN: Step = { kind: 'down' }
const settled = (outcome: MirrorOutcome): Step => ({ kind: 'settled', outcome })

/** What a job keeps from one try to the next. */
interface JobState {
  upload: Upload | undefined
}

export class MirrorWorker {
  readonly #source: PublicArtifactSource
  readonly #target: TargetProtocol
  readonly #max: number
  readonly #logger: Logger
  readonly #onMirrored: ((packageName: string) => Promise<void>) | undefined
  readonly #memory: MirrorMemory | undefined
  readonly #outcomes: JobOutcomes
  readonly #pace: TargetPace
  readonly #tries: number
  readonly #refusalPauseMs: number

  constructor(options: MirrorWorkerOptions) {
    const tries = options.refusalTries ?? DEFAULT_REFUSAL_TRIES
    if (!Number.isSafeInteger(tries) || tries < 1) throw new ServiceError('CONFIG_INVALID', { message: 'refusalTries must be a positive integer' })
    this.#source = options.source
    this.#target = options.target
    this.#max = options.maxArtifactBytes
    this.#logger = options.logger
    this.#onMirrored = options.onMirrored
    this.#memory = options.memory
    this.#outcomes = new JobOutcomes({ logger: options.logger, maxArtifactBytes: options.maxArtifactBytes, targetAuthority: options.target.authority })
    this.#pace = options.pace ?? new TargetPace({ maxConcurrency: 1, authority: options.target.authority, logger: options.logger })
    this.#tries = tries
    this.#refusalPauseMs = options.refusalPauseMs ?? REFUSAL_PAUSE_MS
  }

  /** The target's pace: how many jobs the consumer runs for it now. */
  get pace(): TargetPace { return this.#pace }

  capacity(): number { return this.#pace.capacity }

  onCapacity(listener: () => void): void { this.#pace.onChange(listener) }

  /** Runs one job. Throws only the signal's reason when `signal` aborts (the consumer cancelled it). */
  async process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome> {
    const where = { ...this.#target.logFields, package: job.package, version: job.version, filename: job.filename }
    try {
      return await this.#process(job, where, signal)
    } catch (error) {
      return this.#outcomes.failed(where, error, signal)
    }
  }

  async #process(job: MirrorJob, where: Record<string, string>, signal: AbortSignal | undefined): Promise<MirrorOutcome> {
    const plan = this.#target.plan(job)
    if ('refused' in plan) {
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'no_digest', reason: plan.refused })
      return { result: 'no_digest', disposition: 'leave', reason: plan.refused }
    }
    const state: JobState = { upload: undefined }
    const refusals: TargetRefusal[] = []
    for (;;) {
      const step = await this.#try(job, plan, where, state, signal)
      if (step.kind === 'settled') return step.outcome
      if (step.kind === 'down') {
        this.#logger.debug(MIRROR_JOB_HELD, { ...where, target: this.#target.authority })
        continue
      }
      refusals.push(step.refusal)
      if (refusals.length >= this.#tries) return this.#outcomes.refused(where, refusals)
      const waitMs = this.#refusalPauseMs * 2 ** (refusals.length - 1)
      this.#outcomes.triedAgain(where, step.refusal, refusals.length, this.#tries, waitMs)
      await pause(waitMs, signal)
    }
  }

  /** One try: admitted by the pace (held while the target is down), under a memory admission of its own. */
  async #try(job: MirrorJob, plan: TargetPlan, where: Record<string, string>, state: JobState, signal: AbortSignal | undefined): Promise<Step> {
    const ticket = await this.#pace.admit(signal)
    let admission: Admission | undefined
    try {
      // Embedded in the proxy, the documents this try reads share the requests' heap: charged like a listing (SPEC.md 8.1).
      if (this.#memory !== undefined) admission = await this.#memory.enter(signal)
      return await this.#attempt(job, plan, where, state, ticket, signal, chargeChunks(admission, signal))
    } finally {
      admission?.release()
      ticket.end()
    }
  }

  async #attempt(job: MirrorJob, plan: TargetPlan, where: Record<string, string>, state: JobState, ticket: TargetTicket, signal: AbortSignal | undefined, charge: ChunkCharge | undefined): Promise<Step> {
    const held = await this.#lookup(plan, ticket, signal, charge)
    if ('kind' in held) return held
    if (held.holding.kind !== 'absent') return settled(this.#alreadyThere(where, held.holding))

    if (state.upload === undefined) {
      const upload = await plan.prepare({ source: this.#source, signal, charge, logger: this.#logger, where })
      if ('refused' in upload) {
        if (upload.refused === 'integrity_mismatch') this.#logger.error(MIRROR_INTEGRITY_MISMATCH, { ...where, ...upload.log })
        else this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: upload.refused, ...upload.log })
        return settled({ result: upload.refused, disposition: 'leave', reason: upload.reason })
      }
      state.upload = upload
    }

    const response = await this.#source.openArtifact(new URL(job.url), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
    const status = response.statusCode
    if (status !== 200 || response.body === null) {
      response.body?.destroy()
      if (isTransientStatus(status)) return settled(this.#outcomes.retried(where, `upstream status ${status}`))
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', status })
      return settled({ result: 'upstream_refused', disposition: 'leave', reason: `the public upstream answered ${status}` })
    }
    const header = response.headers['content-length']
    const declared = header === undefined || header === '' ? undefined : Number(header)
    if (declared !== undefined && Number.isFinite(declared) && declared > this.#max) {
      response.body.destroy()
      return settled(this.#outcomes.tooLarge(where, declared))
    }

    const artifact = new VerifiedStream(response.body, plan, job.md5, declared, this.#max)
    let answer: TargetAnswer
    try {
      answer = await state.upload.send(artifact, signal)
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      if (isServiceError(error, 'MIRROR_ARTIFACT_TOO_LARGE')) return settled(this.#outcomes.tooLarge(where, artifact.bytes))
      if (isServiceError(error, 'MIRROR_INTEGRITY_MISMATCH')) {
        const mismatch = plan.mismatch(artifact.actual)
        this.#logger.error(MIRROR_INTEGRITY_MISMATCH, { ...where, ...mismatch })
        return settled({ result: 'integrity_mismatch', disposition: 'leave', reason: mismatch.detail })
      }
      // No answer from the target: it is down; the job is held and tried again once it answers.
      if (isServiceError(error) && error.data?.['target'] !== undefined) {
        ticket.failed(`no answer to the publication (${String(error.data['reason'] ?? error.code)})`)
        return DOWN
      }
      // The artifact read failed mid-stream: an upstream problem, which waits out its window (process() maps it).
      throw error
    } finally {
      // A target that answered before pulling the whole body (or any of it) leaves the artifact unread: let its connection go.
      response.body.destroy()
    }
    return this.#answered(plan, where, answer, artifact.bytes, ticket, signal)
  }

  /** What the target holds, or the try's end: down (no answer, a transient status) or a refusal (it answered otherwise). */
  async #lookup(plan: TargetPlan, ticket: TargetTicket, signal: AbortSignal | undefined, charge: ChunkCharge | undefined): Promise<{ readonly holding: Holding } | Step> {
    try {
      const holding = await plan.lookup(signal, charge)
      ticket.answered()
      return { holding }
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      // A proxy that embeds the worker shedding or pausing the read: the memory gate's, not the target's.
      if (isServiceError(error, 'GATE_SHED') || isServiceError(error, 'GATE_PAUSE_TIMEOUT')) throw error
      const failure = toServiceError(error)
      const status = typeof failure.data?.['status'] === 'number' ? failure.data['status'] : undefined
      if (failure.code === 'UPSTREAM_UNAVAILABLE') {
        ticket.failed(status === undefined ? `no answer to the lookup (${String(failure.data?.['reason'] ?? failure.code)})` : `the lookup answered ${status}`)
        return DOWN
      }
      if (status !== undefined && isCredentialRefusal(status)) {
        ticket.failed(`the lookup answered ${status}: the target refused the mirror's credential`)
        return DOWN
      }
      ticket.answered()
      const cause = failure.data?.['cause']
      return { kind: 'refused', refusal: { exchange: 'lookup', status, code: failure.code, cause: typeof cause === 'string' ? cause : undefined } }
    }
  }

  /** What the target's answer to the upload settles. */
  async #answered(plan: TargetPlan, where: Record<string, string>, answer: TargetAnswer, bytes: number, ticket: TargetTicket, signal: AbortSignal | undefined): Promise<Step> {
    const status = answer.status
    if (isTransientStatus(status)) {
      ticket.failed(`the publication answered ${status}`)
      return DOWN
    }
    if (isCredentialRefusal(status)) {
      ticket.failed(`the publication answered ${status}: the target refused the mirror's credential`)
      return DOWN
    }
    ticket.answered()
    const meaning = this.#target.classify(status)
    if (meaning.kind === 'stored') {
      this.#logger.info(MIRROR_JOB_MIRRORED, { ...where, bytes, target: this.#target.authority })
      await this.#onMirrored?.(where['package'] as string)
      return settled({ result: 'mirrored', disposition: 'delete' })
    }
    if (meaning.kind === 'ask-again') {
      // Another delivery of the same job (or another worker) may have got there first: decide on what the target now holds.
      const now = await this.#lookup(plan, ticket, signal, undefined)
      if ('kind' in now) return now
      if (now.holding.kind !== 'absent') return settled(this.#alreadyThere(where, now.holding))
    }
    // Refused: a 409 for a version the target does not hold (left half-written), or any other refusal.
    return { kind: 'refused', refusal: { exchange: 'publication', status, code: undefined, cause: answer.cause } }
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

/**
 * 401 and 403: the target refuses the mirror's credential, whatever the job
 * (an expired or rotated token, a missing publish right): held like an
 * outage until it is fixed, never dead-lettered job by job.
 */
export function isCredentialRefusal(status: number): boolean {
  return status === 401 || status === 403
}

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted === true) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const onAbort = (): void => { clearTimeout(timer); reject(signal?.reason) }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
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
