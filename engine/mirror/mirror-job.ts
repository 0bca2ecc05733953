/**
 * The mirror job (SPEC.md 2.8, 6.1): the queue message the artifact GET
 * route emits after an admitted, clean public relay, and the mirror worker
 * decodes. It names the authoritative artifact URL, the public upstream
 * location taken unchanged from the gated version's `dist.tarball`, and
 * carries no credential (SPEC.md 5.4).
 *
 * Layout decision (SPEC.md 6.1 leaves it open): one JSON object with a
 * format version `v`, so a later layout can be told apart by a worker that
 * predates it. `integrity` and `shasum` are the digests the version was
 * admitted with, byte-for-byte from upstream; the worker re-verifies the
 * bytes it fetches against them (SPEC.md 6.1 worker 1). At least one is
 * present: the route never admits a version without a digest.
 *
 * A URL with userinfo or a query is refused at both ends: either may carry
 * a credential (SPEC.md 2.9 strips both from provenance for that reason),
 * and a job must never hold one.
 *
 * Mounts (issue 16): a job names the mount whose mirror target it goes to
 * in `mount`. A `js` job is written without the field, byte for byte as
 * before, and a job without it (every job queued by a build that predates
 * `py` mirroring) decodes as `js`; so old and new workers share a queue for
 * `js` jobs. A `py` job carries `mount: "py"`, the PEP 503 normal project
 * name in `package`, the file's PEP 440 version (as its file name states
 * it, normalised), the distribution's file name, its SHA-2 digests from the
 * project page as one SRI string in `integrity` (a `sha256` token is what
 * the worker verifies and uploads), the page's sha1 as `shasum` and md5 as
 * `md5` when it gave them, and `coreMetadata` when the page offers the PEP
 * 658 `{url}.metadata` file. A worker that predates `py` mirroring refuses
 * a `py` job as undecodable (its file name is no `.tgz`).
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../errors.js'
import { checkPackageName } from '../npm/names.js'
import { fileNameVersion } from '../pypi/file-name-version.js'
import { isNormalizedProjectName, isValidProjectName } from '../pypi/project-name.js'
import { usableFilename } from '../pypi/simple-read-common.js'
import { EMBEDDED_QUEUE_BOUNDS } from '../queue/embedded-queue-bounds.js'
import { QueueFailureReason, type Queue } from '../queue/queue.js'

export const MIRROR_JOB_FORMAT = 1

/** The mounts a job can name; absent means `js`. */
export const MIRROR_JOB_MOUNTS = ['js', 'py'] as const
export type MirrorJobMount = (typeof MIRROR_JOB_MOUNTS)[number]

export interface MirrorJob {
  /** The mount whose mirror target takes the job; undefined (a `js` job, or one queued before jobs named mounts) means `js`. */
  readonly mount?: 'py' | undefined
  /** The authoritative artifact URL (https, no userinfo, query or fragment). */
  readonly url: string
  /** Decoded package name (`@scope/name` for a scoped one). */
  readonly package: string
  readonly version: string
  /** The artifact's file name, decoded (`name-1.0.0.tgz`). */
  readonly filename: string
  /** The SRI string from upstream, byte-for-byte; undefined when the version has only a shasum. */
  readonly integrity: string | undefined
  /** The legacy SHA-1 hex digest from upstream; undefined when absent. */
  readonly shasum: string | undefined
  /** py: the page's md5 hex digest, sent as `md5_digest`; undefined when it gave none. */
  readonly md5?: string | undefined
  /** py: the page offers the PEP 658 core metadata file (`{url}.metadata`). */
  readonly coreMetadata?: boolean | undefined
  /** When the route enqueued it, RFC 3339 UTC. */
  readonly enqueuedAt: string
}

/** The mount a job goes to: `js` unless it names `py`. */
export function mountOf(job: Pick<MirrorJob, 'mount'>): MirrorJobMount {
  return job.mount === 'py' ? 'py' : 'js'
}

/** The reason carried by an undecodable payload's QUEUE_FAILURE (SPEC.md 6.1 worker 4). */
export const UNDECODABLE_MIRROR_JOB = 'undecodable-mirror-job'

function refuse(detail: string): never {
  throw new ServiceError('QUEUE_FAILURE', { message: 'not a valid mirror job', data: { reason: UNDECODABLE_MIRROR_JOB, detail } })
}

const SHASUM = /^[0-9a-f]{40}$/i
const MD5 = /^[0-9a-f]{32}$/
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/

function checkUrl(raw: unknown): string {
  if (typeof raw !== 'string') refuse('url is not a string')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    refuse('url does not parse')
  }
  if (url.protocol !== 'https:') refuse('url is not https')
  if (url.username !== '' || url.password !== '') refuse('url carries userinfo')
  if (url.search !== '') refuse('url carries a query')
  if (url.hash !== '') refuse('url carries a fragment')
  return raw
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.length === 0) refuse(`${field} is not a non-empty string`)
  return value
}

/** Checks every field; throws QUEUE_FAILURE with reason UNDECODABLE_MIRROR_JOB. */
export function checkMirrorJob(value: unknown): MirrorJob {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse('not an object')
  const v = value as Record<string, unknown>
  const mount = v['mount']
  if (mount !== undefined && mount !== null && mount !== 'js' && mount !== 'py') refuse('mount is not js or py')
  const py = mount === 'py'
  const url = checkUrl(v['url'])
  const pkg = v['package']
  if (typeof pkg !== 'string') refuse('package is not a string')
  if (py) {
    if (!isValidProjectName(pkg) || !isNormalizedProjectName(pkg)) refuse('package is not a PEP 503 normal project name')
  } else {
    try {
      checkPackageName(pkg)
    } catch {
      refuse('package is not a valid name')
    }
  }
  const version = v['version']
  if (typeof version !== 'string' || version.length === 0 || /\s/.test(version)) refuse('version is not a version string')
  const filename = v['filename']
  if (py) {
    if (typeof filename !== 'string' || !usableFilename(filename)) refuse('filename is not a distribution file name')
    // The file name states the version (wheel and sdist name rules): a job whose fields disagree with it is not one the route wrote.
    if (fileNameVersion(filename, pkg)?.version !== version) refuse('filename is not a wheel or sdist of this project and version')
  } else if (typeof filename !== 'string' || !filename.endsWith('.tgz') || /[/\\]|\.\./.test(filename) || filename.length <= 4) {
    refuse('filename is not an artifact file name')
  }
  const integrity = optionalString(v['integrity'], 'integrity')
  const shasum = optionalString(v['shasum'], 'shasum')
  if (shasum !== undefined && !SHASUM.test(shasum)) refuse('shasum is not 40 hex digits')
  if (integrity === undefined && shasum === undefined) refuse('no digest: integrity and shasum are both absent')
  const md5 = py ? optionalString(v['md5'], 'md5') : undefined
  if (md5 !== undefined && !MD5.test(md5)) refuse('md5 is not 32 lower-case hex digits')
  const coreMetadata = py ? v['coreMetadata'] : undefined
  if (coreMetadata !== undefined && coreMetadata !== null && typeof coreMetadata !== 'boolean') refuse('coreMetadata is not a boolean')
  const enqueuedAt = v['enqueuedAt']
  if (typeof enqueuedAt !== 'string' || !RFC3339.test(enqueuedAt) || Number.isNaN(Date.parse(enqueuedAt))) {
    refuse('enqueuedAt is not an RFC 3339 instant')
  }
  const common = { url, package: pkg, version, filename, integrity, shasum, enqueuedAt }
  // A js job keeps exactly the fields it always had (no `mount` key), so it compares and encodes as before.
  if (!py) return Object.freeze(common)
  return Object.freeze({ mount: 'py' as const, ...common, md5, coreMetadata: coreMetadata === true })
}

/**
 * The largest job body, on every queue (UTF-8 bytes): the embedded queue's
 * own bound, so SQS and the proxy's enqueue buffer hold jobs of the size the
 * memory plan accounts for (a 200 KB tarball URL never reaches a queue).
 */
export const MAX_MIRROR_JOB_BYTES = EMBEDDED_QUEUE_BOUNDS.maxBodyBytes

/** The message body; refuses a job that would not decode (nothing invalid is ever sent) or is over MAX_MIRROR_JOB_BYTES. */
export function encodeMirrorJob(job: MirrorJob): string {
  const body = jobBody(job)
  const bytes = Buffer.byteLength(body, 'utf8')
  if (bytes > MAX_MIRROR_JOB_BYTES) {
    throw new ServiceError('QUEUE_FAILURE', { message: 'the mirror job is too large', data: { reason: QueueFailureReason.TOO_LARGE, bytes, maxBodyBytes: MAX_MIRROR_JOB_BYTES } })
  }
  return body
}

function jobBody(job: MirrorJob): string {
  const checked = checkMirrorJob(job)
  return JSON.stringify({
    v: MIRROR_JOB_FORMAT,
    ...(checked.mount === 'py' ? { mount: 'py' } : {}),
    url: checked.url,
    package: checked.package,
    version: checked.version,
    filename: checked.filename,
    ...(checked.integrity === undefined ? {} : { integrity: checked.integrity }),
    ...(checked.shasum === undefined ? {} : { shasum: checked.shasum }),
    ...(checked.md5 === undefined ? {} : { md5: checked.md5 }),
    ...(checked.coreMetadata === true ? { coreMetadata: true } : {}),
    enqueuedAt: checked.enqueuedAt,
  })
}

export function decodeMirrorJob(body: string): MirrorJob {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    refuse('not JSON')
  }
  if (typeof parsed !== 'object' || parsed === null) refuse('not an object')
  const format = (parsed as { v?: unknown }).v
  if (format !== MIRROR_JOB_FORMAT) refuse(`unknown format ${JSON.stringify(format)}`)
  return checkMirrorJob(parsed)
}

/**
 * The de-duplication key of a job: one per artifact (its authoritative URL),
 * so repeated downloads of one version add one pending job, not thousands
 * (queue.ts SendOptions.dedupKey). A SHA-256 hex digest: 64 printable
 * characters whatever the URL's length.
 */
export function mirrorJobKey(job: Pick<MirrorJob, 'url'>): string {
  return createHash('sha256').update(job.url).digest('hex')
}

/** An `enqueue` for the artifact route: encodes the job and sends it on `queue`, de-duplicated by artifact. */
export function enqueueOn(queue: Pick<Queue, 'send'>): (job: MirrorJob) => Promise<void> {
  return async (job) => {
    await queue.send(encodeMirrorJob(job), { dedupKey: mirrorJobKey(job) })
  }
}
