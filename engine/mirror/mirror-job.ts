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
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../errors.js'
import { checkPackageName } from '../npm/names.js'
import type { Queue } from '../queue/queue.js'

export const MIRROR_JOB_FORMAT = 1

export interface MirrorJob {
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
  /** When the route enqueued it, RFC 3339 UTC. */
  readonly enqueuedAt: string
}

/** The reason carried by an undecodable payload's QUEUE_FAILURE (SPEC.md 6.1 worker 4). */
export const UNDECODABLE_MIRROR_JOB = 'undecodable-mirror-job'

function refuse(detail: string): never {
  throw new ServiceError('QUEUE_FAILURE', { message: 'not a valid mirror job', data: { reason: UNDECODABLE_MIRROR_JOB, detail } })
}

const SHASUM = /^[0-9a-f]{40}$/i
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
  const url = checkUrl(v['url'])
  const pkg = v['package']
  if (typeof pkg !== 'string') refuse('package is not a string')
  try {
    checkPackageName(pkg)
  } catch {
    refuse('package is not a valid name')
  }
  const version = v['version']
  if (typeof version !== 'string' || version.length === 0 || /\s/.test(version)) refuse('version is not a version string')
  const filename = v['filename']
  if (typeof filename !== 'string' || !filename.endsWith('.tgz') || /[/\\]|\.\./.test(filename) || filename.length <= 4) {
    refuse('filename is not an artifact file name')
  }
  const integrity = optionalString(v['integrity'], 'integrity')
  const shasum = optionalString(v['shasum'], 'shasum')
  if (shasum !== undefined && !SHASUM.test(shasum)) refuse('shasum is not 40 hex digits')
  if (integrity === undefined && shasum === undefined) refuse('no digest: integrity and shasum are both absent')
  const enqueuedAt = v['enqueuedAt']
  if (typeof enqueuedAt !== 'string' || !RFC3339.test(enqueuedAt) || Number.isNaN(Date.parse(enqueuedAt))) {
    refuse('enqueuedAt is not an RFC 3339 instant')
  }
  return Object.freeze({ url, package: pkg, version, filename, integrity, shasum, enqueuedAt })
}

/** The message body; refuses a job that would not decode (nothing invalid is ever sent). */
export function encodeMirrorJob(job: MirrorJob): string {
  const checked = checkMirrorJob(job)
  return JSON.stringify({
    v: MIRROR_JOB_FORMAT,
    url: checked.url,
    package: checked.package,
    version: checked.version,
    filename: checked.filename,
    ...(checked.integrity === undefined ? {} : { integrity: checked.integrity }),
    ...(checked.shasum === undefined ? {} : { shasum: checked.shasum }),
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
