/**
 * The mirror worker's one job (SPEC.md 6.1 worker 1, 3.7): re-verify a
 * public artifact and publish it to the mirror target.
 *
 *  1. The job's strongest digest is what the bytes must hash to; a job
 *     without a usable digest cannot succeed.
 *  2. The target is asked first: the version already there with the same
 *     integrity is success (at-least-once delivery repeats jobs); with a
 *     different integrity it is a collision, refused and never overwritten.
 *  3. The gated manifest is read from the public upstream (version-manifest.ts).
 *  4. The artifact is fetched from the job's authoritative URL through the
 *     public leg's own client: the same egress policy (https only,
 *     certificate validated, host allowlist, internal-range block,
 *     tarball-host policy), anonymous, no redirect followed.
 *  5. It streams into the publish body (publish-body.ts) while it is hashed
 *     and counted against `limits.maxArtifactBytes`; the body's tail is
 *     written only once the digest matched, so a mismatch or an oversized
 *     artifact aborts the publication before the target can accept it.
 *
 * The outcome says what the consumer does with the delivery: delete it,
 * release it at once (a transient publish failure, SPEC.md 3.7), or leave
 * it to its window (a job that cannot succeed is left for the redrive
 * policy; other transient failures wait out their window).
 */
import { ServiceError, isServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { ADMISSION_CHARGES } from '../memory/admission-charges.js'
import { PAUSE_CAP_UPSTREAM_READ_MS, type Admission } from '../memory/gate.js'
import type { ArtifactResponse } from '../upstream/http1/artifact-response.js'
import type { OpenArtifactOptions } from '../upstream/upstream-client.js'
import { SignalAbort } from '../upstream/http1/request-abort.js'
import { compareDigests, digestSet, DigestVerifier, expectedDigest } from './artifact-digest.js'
import type { MirrorResult } from './mirror-counters.js'
import type { MirrorJob } from './mirror-job.js'
import { isTransientStatus, type ChunkCharge, type MirrorTarget, type TargetVersion } from './mirror-target.js'
import { JobOutcomes, MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED } from './job-outcomes.js'
import { attachmentName, Base64Chunker, publishDocumentParts } from './publish-body.js'
import { publishedManifest, readPublicManifest, type ManifestSource } from './version-manifest.js'

/** info: the version was published to the mirror target. */
export const MIRROR_JOB_MIRRORED = 'mirror job mirrored'
/** error: the target holds the version with another integrity (issue 12): both digests logged. */
export const MIRROR_COLLISION = 'mirror collision: the target holds this version with a different integrity'
/** error: the bytes or the manifest do not match the job's digests. */
export const MIRROR_INTEGRITY_MISMATCH = 'mirror integrity mismatch'
// The log lines both workers share live with their outcomes (job-outcomes.ts).
export { MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED, MIRROR_JOB_RETRIED } from './job-outcomes.js'

/** What the consumer does with the delivery. */
export type Disposition = 'delete' | 'release' | 'leave'

export interface MirrorOutcome {
  readonly result: MirrorResult
  readonly disposition: Disposition
  /** Why, for the discard log line when the budget is reached. */
  readonly reason?: string
}

/** What the worker needs of the public upstream: the public leg's UpstreamClient. */
export interface PublicArtifactSource extends ManifestSource {
  openArtifact(url: URL, options: OpenArtifactOptions): Promise<ArtifactResponse>
}

/** The process's memory gate, when the worker shares a heap with the proxy (embedded): its document reads are charged to it. */
export interface MirrorMemory {
  enter(signal?: AbortSignal): Promise<Admission>
}

export interface MirrorWorkerOptions {
  readonly source: PublicArtifactSource
  readonly target: MirrorTarget
  /** `limits.maxArtifactBytes` resolved: the largest artifact accepted. */
  readonly maxArtifactBytes: number
  readonly logger: Logger
  readonly memory?: MirrorMemory
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
  readonly #target: MirrorTarget
  readonly #max: number
  readonly #logger: Logger
  readonly #memory: MirrorMemory | undefined
  readonly #outcomes: JobOutcomes

  constructor(options: MirrorWorkerOptions) {
    this.#source = options.source
    this.#target = options.target
    this.#max = options.maxArtifactBytes
    this.#logger = options.logger
    this.#memory = options.memory
    this.#outcomes = new JobOutcomes({ logger: options.logger, maxArtifactBytes: options.maxArtifactBytes, targetAuthority: options.target.authority })
  }

  /** Runs one job. Throws only the signal's reason when `signal` aborts (the consumer cancelled it). */
  async process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome> {
    const where = { package: job.package, version: job.version, filename: job.filename }
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
    const expected = expectedDigest(job.integrity, job.shasum)
    if (expected === undefined) {
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'no_digest' })
      return { result: 'no_digest', disposition: 'leave', reason: 'the job carries no usable digest' }
    }

    let present: TargetVersion
    try {
      present = await this.#target.lookup(job.package, job.version, signal, charge)
    } catch (error) {
      if (isServiceError(error, 'GATE_SHED') || isServiceError(error, 'GATE_PAUSE_TIMEOUT')) throw error
      return this.#outcomes.targetFailure(where, error, signal)
    }
    if (present.kind === 'present') return this.#alreadyThere(job, where, present)

    const manifest = await readPublicManifest(this.#source, job, signal, charge)
    if (manifest.kind === 'missing') {
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', detail: manifest.detail })
      return { result: 'upstream_refused', disposition: 'leave', reason: manifest.detail }
    }
    if (manifest.kind === 'mismatch') {
      this.#logger.error(MIRROR_INTEGRITY_MISMATCH, {
        ...where, detail: manifest.detail,
        expected: { integrity: job.integrity, shasum: job.shasum }, upstream: { integrity: manifest.integrity, shasum: manifest.shasum },
      })
      return { result: 'integrity_mismatch', disposition: 'leave', reason: manifest.detail }
    }

    const artifact = await this.#source.openArtifact(new URL(job.url), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
    const status = artifact.statusCode
    if (status !== 200 || artifact.body === null) {
      artifact.body?.destroy()
      if (isTransientStatus(status)) return this.#outcomes.retried(where, `upstream status ${status}`, 'leave')
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', status })
      return { result: 'upstream_refused', disposition: 'leave', reason: `the public upstream answered ${status}` }
    }
    const declared = Number(artifact.headers['content-length'])
    if (Number.isFinite(declared) && declared > this.#max) {
      artifact.body.destroy()
      return this.#outcomes.tooLarge(where, declared)
    }

    const verifier = new DigestVerifier(expected)
    const parts = publishDocumentParts({
      name: job.package,
      version: job.version,
      manifest: publishedManifest(manifest.manifest, this.#target.artifactUrl(job.package, job.filename).href),
      attachment: attachmentName(job.package, job.filename),
    })
    const body = artifact.body
    const max = this.#max
    let bytes = 0
    async function* document(): AsyncGenerator<string> {
      yield parts.head
      const base64 = new Base64Chunker()
      try {
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          bytes += chunk.byteLength
          if (bytes > max) throw new ServiceError('MIRROR_ARTIFACT_TOO_LARGE', { data: { limit: max } })
          verifier.update(chunk)
          const encoded = base64.push(chunk)
          if (encoded.length > 0) yield encoded
        }
      } finally {
        body.destroy()
      }
      const rest = base64.end()
      // MUST: the tail only after the digest matched; without it the document is not JSON and cannot be accepted.
      if (!verifier.matches()) throw new ServiceError('MIRROR_INTEGRITY_MISMATCH', { data: { actual: verifier.actual } })
      yield rest + parts.tail(bytes)
    }

    let answer
    try {
      answer = await this.#target.publish(job.package, document(), signal)
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      if (isServiceError(error, 'MIRROR_ARTIFACT_TOO_LARGE')) return this.#outcomes.tooLarge(where, bytes)
      if (isServiceError(error, 'MIRROR_INTEGRITY_MISMATCH')) {
        this.#logger.error(MIRROR_INTEGRITY_MISMATCH, {
          ...where, detail: 'the fetched bytes do not match the admitted digest',
          expected: { integrity: job.integrity, shasum: job.shasum, algorithm: expected.algorithm }, actual: verifier.actual,
        })
        return { result: 'integrity_mismatch', disposition: 'leave', reason: 'the fetched bytes do not match the admitted digest' }
      }
      // No answer from the target: a transient publish failure, released at once (SPEC.md 3.7).
      if (isServiceError(error) && error.data?.['target'] !== undefined) return this.#outcomes.retried(where, 'no answer from the mirror target', 'release', error)
      // The artifact read failed mid-stream: an upstream problem, which waits out its window (process() maps it).
      throw error
    }
    const published = answer.status
    if (published === 200 || published === 201) {
      this.#logger.info(MIRROR_JOB_MIRRORED, { ...where, bytes, target: this.#target.authority })
      return { result: 'mirrored', disposition: 'delete' }
    }
    if (published === 409) {
      // Another delivery of the same job (or another worker) got there first: decide on what the target now holds.
      let now: TargetVersion
      try {
        now = await this.#target.lookup(job.package, job.version, signal)
      } catch (error) {
        return this.#outcomes.targetFailure(where, error, signal)
      }
      if (now.kind === 'present') return this.#alreadyThere(job, where, now)
      return this.#outcomes.retried(where, 'the target answered 409 without the version', 'release')
    }
    if (isTransientStatus(published)) return this.#outcomes.retried(where, `target status ${published}`, 'release')
    this.#logger.error(MIRROR_PUBLISH_REFUSED, { ...where, status: published, target: this.#target.authority })
    return { result: 'publish_refused', disposition: 'leave', reason: `the mirror target answered ${published}` }
  }

  #alreadyThere(job: MirrorJob, where: Record<string, string>, present: Extract<TargetVersion, { kind: 'present' }>): MirrorOutcome {
    const comparison = compareDigests(digestSet(job.integrity, job.shasum), present.digests)
    if (comparison === 'same') {
      this.#logger.debug('mirror job already present', where)
      return { result: 'already_present', disposition: 'delete' }
    }
    this.#logger.error(MIRROR_COLLISION, {
      ...where, target: this.#target.authority, comparison,
      job: { integrity: job.integrity, shasum: job.shasum },
      held: { integrity: present.integrity, shasum: present.shasum },
    })
    return { result: 'collision', disposition: 'leave', reason: 'the target holds the version with a different integrity' }
  }
}
