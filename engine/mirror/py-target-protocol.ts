/**
 * The `py` side of a mirror job (issue 16), for the mirror pipeline
 * (mirror-worker.ts, target-protocol.ts): a Python index that takes
 * `twine upload` through the legacy upload API (py-upload-target.ts), with
 * the same results, logs and dispositions as a `js` job.
 *
 * - The job's sha256 (from the project page) is what the bytes must hash
 *   to; a job without one, or whose file name is no wheel or sdist of the
 *   project, cannot succeed. The page's md5, when given, goes into the form
 *   and is checked too (the pipeline checks a job's md5).
 * - The target's Simple page says whether it holds the file; the same
 *   sha256 is already present, another a collision.
 * - The form fields (upload-metadata.ts): name, version, filetype and
 *   pyversion from the file name, the rest from the PEP 658 `.metadata`
 *   file when the page offers it, fetched beside the file through the
 *   public leg's client.
 * - The multipart body (upload-form.ts) streams with the file inside; a
 *   Content-Length when the upstream declared the file's length.
 * - 200 and 201 are stored; a 400 or 409 (pypi-like servers' "File already
 *   exists") has the target asked again, and for a file it does not list
 *   either is a refusal.
 */
import { ServiceError } from '../errors.js'
import { metadataUrl } from '../pypi/file-url.js'
import { SignalAbort } from '../upstream/http1/request-abort.js'
import { digestSet } from './artifact-digest.js'
import type { MirrorJob } from './mirror-job.js'
import type { PyUploadTarget, TargetFile } from './py-upload-target.js'
import { isTransientStatus } from './target-connection.js'
import type { Answer, Holding, PrepareContext, TargetPlan, TargetProtocol, Upload } from './target-protocol.js'
import { distributionFacts, readMetadataHeader, uploadFields } from './upload-metadata.js'
import { uploadBody, uploadFormParts } from './upload-form.js'

/** debug: the page offered a `.metadata` file that could not be used; the form carries the file name's facts only. */
export const MIRROR_METADATA_UNUSED = 'mirror py core metadata not used'

/** The job's sha256 as lower-case hex, from its SRI `integrity`. */
function jobSha256(job: Pick<MirrorJob, 'integrity' | 'shasum'>): string | undefined {
  const set = digestSet(job.integrity, job.shasum).get('sha256')
  const first = set === undefined ? undefined : [...set][0]
  return first === undefined ? undefined : Buffer.from(first, 'base64').toString('hex')
}

export class PyTargetProtocol implements TargetProtocol {
  readonly logFields = { mount: 'py' }
  readonly #target: Pick<PyUploadTarget, 'lookup' | 'upload' | 'authority'>

  constructor(target: Pick<PyUploadTarget, 'lookup' | 'upload' | 'authority'>) {
    this.#target = target
  }

  get authority(): string {
    return this.#target.authority
  }

  plan(job: MirrorJob): TargetPlan | { readonly refused: string } {
    const sha256 = jobSha256(job)
    const facts = distributionFacts(job.filename, job.package)
    if (sha256 === undefined) return { refused: 'the job carries no sha256' }
    if (facts === undefined) return { refused: 'the file name is no wheel or sdist of the project' }
    const target = this.#target
    return {
      digest: { algorithm: 'sha256', accepted: new Set([Buffer.from(sha256, 'hex').toString('base64')]) },
      lookup: async (signal) => holding(sha256, await target.lookup(job.package, job.filename, signal)),
      prepare: async (context) => {
        const { logger, where } = context
        const metadata = job.coreMetadata === true ? await readMetadata(job, context) : undefined
        const { fields, usedMetadata } = uploadFields({ facts, project: job.package, sha256, md5: job.md5, metadata })
        if (metadata !== undefined && !usedMetadata) logger.debug(MIRROR_METADATA_UNUSED, { ...where, reason: 'it names another project or version, or no Metadata-Version' })
        const parts = uploadFormParts(fields, job.filename)
        const upload: Upload = {
          send: (artifact, signal) => {
            const declared = artifact.declared
            const length = declared !== undefined && Number.isSafeInteger(declared) ? parts.length(declared) : undefined
            return target.upload(parts.contentType, uploadBody(parts, artifact.chunks, (chunk) => artifact.see(chunk), () => { artifact.verify() }), length, signal)
          },
        }
        return upload
      },
      mismatch: (actual) => ({
        detail: 'the fetched bytes do not match the page\'s digests',
        expected: { sha256, md5: job.md5 },
        actual: { sha256: Buffer.from(actual.digest.slice('sha256-'.length), 'base64').toString('hex'), md5: actual.md5 },
      }),
    }
  }

  classify(status: number): Answer {
    if (status === 200 || status === 201) return { kind: 'stored' }
    // pypi-like servers refuse a file they hold ("File already exists"): decide on what the target now lists.
    if (status === 409 || status === 400) return { kind: 'ask-again' }
    return { kind: 'other' }
  }
}

function holding(sha256: string, present: TargetFile): Holding {
  if (present.kind === 'absent') return present
  if (present.sha256 === sha256) return { kind: 'same' }
  return {
    kind: 'other', comparison: present.sha256 === undefined ? 'incomparable' : 'different',
    job: { sha256 }, held: { sha256: present.sha256 },
    reason: 'the target holds the file with a different sha256',
  }
}

/** The `.metadata` header block, or undefined when the upstream does not serve a usable one (the form then goes without). */
async function readMetadata(job: MirrorJob, { source, signal, logger, where }: PrepareContext): Promise<string | undefined> {
  const response = await source.openArtifact(new URL(metadataUrl(job.url)), { method: 'GET', ...(signal === undefined ? {} : { abort: new SignalAbort(signal) }) })
  if (response.statusCode !== 200 || response.body === null) {
    response.body?.destroy()
    if (isTransientStatus(response.statusCode)) throw new ServiceError('UPSTREAM_UNAVAILABLE', { data: { status: response.statusCode, reason: 'core metadata' } })
    logger.debug(MIRROR_METADATA_UNUSED, { ...where, status: response.statusCode })
    return undefined
  }
  const body = response.body
  try {
    return await readMetadataHeader(body as AsyncIterable<Uint8Array>)
  } finally {
    body.destroy()
  }
}
