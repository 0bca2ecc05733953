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
import { ServiceError, isServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { ArtifactResponse } from '../upstream/http1/artifact-response.js'
import type { OpenArtifactOptions } from '../upstream/upstream-client.js'
import { compareDigests, digestSet, DigestVerifier, expectedDigest } from './artifact-digest.js'
import type { MirrorResult } from './mirror-counters.js'
import type { MirrorJob } from './mirror-job.js'
import { isTransientStatus, type MirrorTarget, type TargetVersion } from './mirror-target.js'
import { attachmentName, Base64Chunker, publishDocumentParts } from './publish-body.js'
import { publishedManifest, readPublicManifest, type ManifestSource } from './version-manifest.js'

/** info: the version was published to the mirror target. */
export const MIRROR_JOB_MIRRORED = 'mirror job mirrored'
/** error: the target holds the version with another integrity (issue 12): both digests logged. */
export const MIRROR_COLLISION = 'mirror collision: the target holds this version with a different integrity'
/** error: the bytes or the manifest do not match the job's digests. */
export const MIRROR_INTEGRITY_MISMATCH = 'mirror integrity mismatch'
/** warn: the job cannot succeed (too large, no digest, upstream refusal); left for the redrive policy. */
export const MIRROR_JOB_REFUSED = 'mirror job cannot succeed'
/** error: the mirror target refused the publication. */
export const MIRROR_PUBLISH_REFUSED = 'mirror publication refused'
/** warn: a transient failure; the job is retried. */
export const MIRROR_JOB_RETRIED = 'mirror job failed transiently; retried'

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

export interface MirrorWorkerOptions {
  readonly source: PublicArtifactSource
  readonly target: MirrorTarget
  /** `limits.maxArtifactBytes` resolved: the largest artifact accepted. */
  readonly maxArtifactBytes: number
  readonly logger: Logger
}

const TRANSIENT_CODES: ReadonlySet<string> = new Set(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_TIMEOUT', 'UPSTREAM_DECODE'])

export class MirrorWorker {
  readonly #source: PublicArtifactSource
  readonly #target: MirrorTarget
  readonly #max: number
  readonly #logger: Logger

  constructor(options: MirrorWorkerOptions) {
    if (!Number.isSafeInteger(options.maxArtifactBytes) || options.maxArtifactBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxArtifactBytes must be a positive integer' })
    }
    this.#source = options.source
    this.#target = options.target
    this.#max = options.maxArtifactBytes
    this.#logger = options.logger
  }

  /** Runs one job. Throws only the signal's reason when `signal` aborts (the consumer cancelled it). */
  async process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome> {
    const where = { package: job.package, version: job.version, filename: job.filename }
    try {
      return await this.#process(job, where, signal)
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      const failure = toServiceError(error)
      if (TRANSIENT_CODES.has(failure.code)) return this.#retried(where, failure.code, 'leave', failure)
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', code: failure.code, ...detailOf(failure) })
      return { result: 'upstream_refused', disposition: 'leave', reason: failure.code }
    }
  }

  async #process(job: MirrorJob, where: Record<string, string>, signal: AbortSignal | undefined): Promise<MirrorOutcome> {
    const expected = expectedDigest(job.integrity, job.shasum)
    if (expected === undefined) {
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'no_digest' })
      return { result: 'no_digest', disposition: 'leave', reason: 'the job carries no usable digest' }
    }

    let present: TargetVersion
    try {
      present = await this.#target.lookup(job.package, job.version, signal)
    } catch (error) {
      return this.#targetFailure(where, error, signal)
    }
    if (present.kind === 'present') return this.#alreadyThere(job, where, present)

    const manifest = await readPublicManifest(this.#source, job, signal)
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

    const artifact = await this.#source.openArtifact(new URL(job.url), { method: 'GET', ...(signal === undefined ? {} : { signal }) })
    const status = artifact.statusCode
    if (status !== 200 || artifact.body === null) {
      artifact.body?.destroy()
      if (isTransientStatus(status)) return this.#retried(where, `upstream status ${status}`, 'leave')
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', status })
      return { result: 'upstream_refused', disposition: 'leave', reason: `the public upstream answered ${status}` }
    }
    const declared = Number(artifact.headers['content-length'])
    if (Number.isFinite(declared) && declared > this.#max) {
      artifact.body.destroy()
      return this.#tooLarge(where, declared)
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
      if (isServiceError(error, 'MIRROR_ARTIFACT_TOO_LARGE')) return this.#tooLarge(where, bytes)
      if (isServiceError(error, 'MIRROR_INTEGRITY_MISMATCH')) {
        this.#logger.error(MIRROR_INTEGRITY_MISMATCH, {
          ...where, detail: 'the fetched bytes do not match the admitted digest',
          expected: { integrity: job.integrity, shasum: job.shasum, algorithm: expected.algorithm }, actual: verifier.actual,
        })
        return { result: 'integrity_mismatch', disposition: 'leave', reason: 'the fetched bytes do not match the admitted digest' }
      }
      // No answer from the target: a transient publish failure, released at once (SPEC.md 3.7).
      if (isServiceError(error) && error.data?.['target'] !== undefined) return this.#retried(where, 'no answer from the mirror target', 'release', error)
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
        return this.#targetFailure(where, error, signal)
      }
      if (now.kind === 'present') return this.#alreadyThere(job, where, now)
      return this.#retried(where, 'the target answered 409 without the version', 'release')
    }
    if (isTransientStatus(published)) return this.#retried(where, `target status ${published}`, 'release')
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

  #targetFailure(where: Record<string, string>, error: unknown, signal: AbortSignal | undefined): MirrorOutcome {
    if (signal?.aborted === true) throw signal.reason
    const failure = toServiceError(error)
    if (failure.code === 'UPSTREAM_UNAVAILABLE') return this.#retried(where, 'mirror target unavailable', 'leave', failure)
    this.#logger.error(MIRROR_PUBLISH_REFUSED, { ...where, code: failure.code, target: this.#target.authority, ...detailOf(failure) })
    return { result: 'publish_refused', disposition: 'leave', reason: `the mirror target refused the lookup (${failure.code})` }
  }

  #tooLarge(where: Record<string, string>, bytes: number): MirrorOutcome {
    this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'too_large', bytes, limit: this.#max })
    return { result: 'too_large', disposition: 'leave', reason: `the artifact exceeds ${this.#max} bytes` }
  }

  #retried(where: Record<string, string>, reason: string, disposition: Disposition, error?: ServiceError): MirrorOutcome {
    this.#logger.warn(MIRROR_JOB_RETRIED, { ...where, reason, ...(error === undefined ? {} : { code: error.code, ...detailOf(error) }) })
    return { result: 'retried', disposition, reason }
  }
}

function detailOf(error: ServiceError): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['status', 'reason', 'code'] as const) {
    const value = error.data?.[key]
    if (value !== undefined) out[key === 'code' ? 'transport' : key] = value
  }
  return out
}
