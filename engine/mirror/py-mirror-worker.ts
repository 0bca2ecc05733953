/**
 * The mirror worker's `py` job (issue 16): re-verify a public distribution
 * file and upload it to the `py` mount's mirror target as `twine upload`
 * would, with the same results, logs and dispositions as a `js` job
 * (mirror-worker.ts):
 *
 *  1. The job's sha256 (from the project page) is what the bytes must hash
 *     to; a job without one cannot succeed (`no_digest`). The page's md5,
 *     when given, is checked too, since it goes into the form.
 *  2. The target's Simple page is asked first: the file there with the same
 *     sha256 is `already_present`; with another one it is a `collision`,
 *     logged at error with both digests, never overwritten.
 *  3. The form fields (upload-metadata.ts): name, version, filetype and
 *     pyversion from the file name, the rest from the PEP 658 `.metadata`
 *     file when the page offers it.
 *  4. The file is fetched from the job's authoritative URL (and the
 *     `.metadata` beside it) through the public leg's own client: https
 *     only, certificate validated, host allowlist, internal-range block,
 *     tarball-host policy, anonymous, no redirect followed.
 *  5. It streams into the multipart body while hashed and counted against
 *     `limits.maxArtifactBytes`; the closing delimiter is written only once
 *     the digests matched, so a mismatch, an oversize file or a crash
 *     leaves the target an incomplete form it cannot store.
 *  6. A target that answers 400 or 409 (pypi-like servers' "File already
 *     exists") is asked again: the same sha256 is `already_present`, another
 *     a `collision`; a 409 for a file it does not list is retried.
 */
import { createHash } from 'node:crypto'
import { ServiceError, isServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { digestSet, DigestVerifier } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import { isTransientStatus } from './mirror-target.js'
import { JobOutcomes, MIRROR_JOB_REFUSED, MIRROR_PUBLISH_REFUSED } from './job-outcomes.js'
import {
  MIRROR_COLLISION, MIRROR_INTEGRITY_MISMATCH, MIRROR_JOB_MIRRORED,
  type MirrorOutcome, type PublicArtifactSource,
} from './mirror-worker.js'
import type { PyUploadTarget, TargetFile } from './py-upload-target.js'
import { distributionFacts, readMetadataHeader, uploadFields } from './upload-metadata.js'
import { uploadBody, uploadFormParts } from './upload-form.js'
import { metadataUrl } from '../pypi/file-url.js'
import { SignalAbort } from '../upstream/http1/request-abort.js'

/** debug: the page offered a `.metadata` file that could not be used; the form carries the file name's facts only. */
export const MIRROR_METADATA_UNUSED = 'mirror py core metadata not used'

export interface PyMirrorWorkerOptions {
  /** The `py` mount's public leg client. */
  readonly source: Pick<PublicArtifactSource, 'openArtifact'>
  readonly target: Pick<PyUploadTarget, 'lookup' | 'upload' | 'authority'>
  readonly maxArtifactBytes: number
  readonly logger: Logger
}


/** The job's sha256 as lower-case hex, from its SRI `integrity`. */
export function jobSha256(job: Pick<MirrorJob, 'integrity' | 'shasum'>): string | undefined {
  const set = digestSet(job.integrity, job.shasum).get('sha256')
  const first = set === undefined ? undefined : [...set][0]
  return first === undefined ? undefined : Buffer.from(first, 'base64').toString('hex')
}

export class PyMirrorWorker {
  readonly #source: PyMirrorWorkerOptions['source']
  readonly #target: PyMirrorWorkerOptions['target']
  readonly #max: number
  readonly #logger: Logger
  readonly #outcomes: JobOutcomes

  constructor(options: PyMirrorWorkerOptions) {
    this.#source = options.source
    this.#target = options.target
    this.#max = options.maxArtifactBytes
    this.#logger = options.logger
    this.#outcomes = new JobOutcomes({ logger: options.logger, maxArtifactBytes: options.maxArtifactBytes, targetAuthority: options.target.authority })
  }

  /** Runs one `py` job. Throws only the signal's reason when `signal` aborts. */
  async process(job: MirrorJob, signal?: AbortSignal): Promise<MirrorOutcome> {
    const where = { mount: 'py', package: job.package, version: job.version, filename: job.filename }
    try {
      return await this.#process(job, where, signal)
    } catch (error) {
      return this.#outcomes.failed(where, error, signal)
    }
  }

  async #process(job: MirrorJob, where: Record<string, string>, signal: AbortSignal | undefined): Promise<MirrorOutcome> {
    const sha256 = jobSha256(job)
    const facts = distributionFacts(job.filename, job.package)
    if (sha256 === undefined || facts === undefined) {
      const reason = sha256 === undefined ? 'the job carries no sha256' : 'the file name is no wheel or sdist of the project'
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'no_digest', reason })
      return { result: 'no_digest', disposition: 'leave', reason }
    }

    let present: TargetFile
    try {
      present = await this.#target.lookup(job.package, job.filename, signal)
    } catch (error) {
      return this.#outcomes.targetFailure(where, error, signal)
    }
    if (present.kind === 'present') return this.#alreadyThere(sha256, where, present)

    const metadata = job.coreMetadata === true ? await this.#readMetadata(job, where, signal) : undefined
    const { fields, usedMetadata } = uploadFields({ facts, project: job.package, sha256, md5: job.md5, metadata })
    if (metadata !== undefined && !usedMetadata) this.#logger.debug(MIRROR_METADATA_UNUSED, { ...where, reason: 'it names another project or version, or no Metadata-Version' })

    const artifact = await this.#source.openArtifact(new URL(job.url), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
    const status = artifact.statusCode
    if (status !== 200 || artifact.body === null) {
      artifact.body?.destroy()
      if (isTransientStatus(status)) return this.#outcomes.retried(where, `upstream status ${status}`, 'leave')
      this.#logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', status })
      return { result: 'upstream_refused', disposition: 'leave', reason: `the public upstream answered ${status}` }
    }
    const header = artifact.headers['content-length']
    const declared = header === undefined || header === '' ? undefined : Number(header)
    if (declared !== undefined && Number.isFinite(declared) && declared > this.#max) {
      artifact.body.destroy()
      return this.#outcomes.tooLarge(where, declared)
    }

    const sha = new DigestVerifier({ algorithm: 'sha256', accepted: new Set([Buffer.from(sha256, 'hex').toString('base64')]) })
    const md5 = job.md5 === undefined ? undefined : createHash('md5')
    const parts = uploadFormParts(fields, job.filename)
    const source = artifact.body
    const max = this.#max
    let bytes = 0
    let md5Actual: string | undefined
    const onChunk = (chunk: Uint8Array): void => {
      bytes += chunk.byteLength
      if (bytes > max) throw new ServiceError('MIRROR_ARTIFACT_TOO_LARGE', { data: { limit: max } })
      sha.update(chunk)
      md5?.update(chunk)
    }
    const verify = (): void => {
      md5Actual = md5?.digest('hex')
      // MUST: every digest checked before the closing delimiter; a mismatch leaves the target an incomplete form.
      if (!sha.matches() || (md5Actual !== undefined && md5Actual !== job.md5)) {
        throw new ServiceError('MIRROR_INTEGRITY_MISMATCH', { data: { actual: sha.actual } })
      }
      if (declared !== undefined && Number.isFinite(declared) && bytes !== declared) {
        throw new ServiceError('UPSTREAM_DECODE', { data: { reason: 'the upstream sent another length than it declared' } })
      }
    }
    async function* file(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of source as AsyncIterable<Uint8Array>) yield chunk
      } finally {
        source.destroy()
      }
    }
    const length = declared !== undefined && Number.isSafeInteger(declared) ? parts.length(declared) : undefined

    let answer
    try {
      answer = await this.#target.upload(parts.contentType, uploadBody(parts, file(), onChunk, verify), length, signal)
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason
      if (isServiceError(error, 'MIRROR_ARTIFACT_TOO_LARGE')) return this.#outcomes.tooLarge(where, bytes)
      if (isServiceError(error, 'MIRROR_INTEGRITY_MISMATCH')) {
        this.#logger.error(MIRROR_INTEGRITY_MISMATCH, {
          ...where, detail: 'the fetched bytes do not match the page\'s digests',
          expected: { sha256, md5: job.md5 }, actual: { sha256: Buffer.from(sha.actual.slice('sha256-'.length), 'base64').toString('hex'), md5: md5Actual },
        })
        return { result: 'integrity_mismatch', disposition: 'leave', reason: 'the fetched bytes do not match the page\'s digests' }
      }
      // No answer from the target: a transient upload failure, released at once (SPEC.md 3.7).
      if (isServiceError(error) && error.data?.['target'] !== undefined) return this.#outcomes.retried(where, 'no answer from the mirror target', 'release', error)
      throw error
    }
    const uploaded = answer.status
    if (uploaded === 200 || uploaded === 201) {
      this.#logger.info(MIRROR_JOB_MIRRORED, { ...where, bytes, target: this.#target.authority })
      return { result: 'mirrored', disposition: 'delete' }
    }
    if (uploaded === 400 || uploaded === 409) {
      // pypi-like servers refuse a file they hold ("File already exists"): decide on what the target now lists.
      let now: TargetFile
      try {
        now = await this.#target.lookup(job.package, job.filename, signal)
      } catch (error) {
        return this.#outcomes.targetFailure(where, error, signal)
      }
      if (now.kind === 'present') return this.#alreadyThere(sha256, where, now)
      if (uploaded === 409) return this.#outcomes.retried(where, 'the target answered 409 without listing the file', 'release')
    }
    if (isTransientStatus(uploaded)) return this.#outcomes.retried(where, `target status ${uploaded}`, 'release')
    this.#logger.error(MIRROR_PUBLISH_REFUSED, { ...where, status: uploaded, target: this.#target.authority })
    return { result: 'publish_refused', disposition: 'leave', reason: `the mirror target answered ${uploaded}` }
  }

  /** The `.metadata` header block, or undefined when the upstream does not serve a usable one (the form then goes without). */
  async #readMetadata(job: MirrorJob, where: Record<string, string>, signal: AbortSignal | undefined): Promise<string | undefined> {
    const response = await this.#source.openArtifact(new URL(metadataUrl(job.url)), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
    if (response.statusCode !== 200 || response.body === null) {
      response.body?.destroy()
      if (isTransientStatus(response.statusCode)) throw new ServiceError('UPSTREAM_UNAVAILABLE', { data: { status: response.statusCode, reason: 'core metadata' } })
      this.#logger.debug(MIRROR_METADATA_UNUSED, { ...where, status: response.statusCode })
      return undefined
    }
    const body = response.body
    try {
      return await readMetadataHeader(body as AsyncIterable<Uint8Array>)
    } finally {
      body.destroy()
    }
  }

  #alreadyThere(sha256: string, where: Record<string, string>, present: Extract<TargetFile, { kind: 'present' }>): MirrorOutcome {
    if (present.sha256 === sha256) {
      this.#logger.debug('mirror job already present', where)
      return { result: 'already_present', disposition: 'delete' }
    }
    this.#logger.error(MIRROR_COLLISION, {
      ...where, target: this.#target.authority, comparison: present.sha256 === undefined ? 'incomparable' : 'different',
      job: { sha256 }, held: { sha256: present.sha256 },
    })
    return { result: 'collision', disposition: 'leave', reason: 'the target holds the file with a different sha256' }
  }
}
