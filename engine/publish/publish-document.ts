/**
 * Checks a publish document (SPEC.md 2.5) before anything is sent to the
 * publication target. The shape is npm's (libnpmpublish; pnpm and yarn
 * write the same): the packument root with `name`, `_id`, `versions`
 * holding the new version manifests, and `_attachments` holding each
 * version's tarball as base64 under `<name>-<version>.tgz`.
 *
 * - Not JSON, a key repeated within one object (repeated-key.ts: JSON.parse
 *   reads the last, a first-wins target the first, and the body is relayed
 *   as received), not an object, a `versions` key that is not a canonical
 *   semver version (`1.0.0`, `2.0.0-rc.1`; never `latest`, `__proto__`,
 *   `v1.0.0` or build metadata), a version without its manifest fields, an
 *   attachment that is not base64, or one whose decoded length or digests
 *   disagree with its manifest's `length`, `dist.integrity` and
 *   `dist.shasum`: PUBLISH_DOCUMENT_INVALID (400). Every tarball must be
 *   vouched for by at least one digest, or the target would store bytes no
 *   client can verify.
 * - `name`, `_id`, or a version manifest's `name` or `_id` naming another
 *   package than the route: PUBLISH_NAME_MISMATCH (403). The write is keyed
 *   on the route's name; a document that says otherwise is a smuggling
 *   attempt or a mistake, never relayed.
 * - No `_attachments` (or none at all): a metadata change, which is how
 *   `npm deprecate` and a one-version `npm unpublish` write:
 *   PUBLISH_METADATA_CHANGE (501); such changes are made at the target.
 * - Each version has exactly one tarball and each tarball one version, so a
 *   publish cannot carry a metadata rewrite of another version with it.
 *   A provenance bundle (`<name>-<version>.sigstore`, `npm publish
 *   --provenance`) is passed through for a version of the document; the
 *   target checks it.
 */
import { createHash } from 'node:crypto'
import { ServiceError } from '../errors.js'
import { canonicalVersion } from '../npm/canonical-version.js'
import { repeatedKey } from './repeated-key.js'

export interface CheckedPublish {
  /** The version strings published, in document order. */
  readonly versions: readonly string[]
}

/** Digests of SRI strings this check can compute (RFC: W3C Subresource Integrity). */
const SRI_ALGORITHMS: ReadonlySet<string> = new Set(['sha512', 'sha384', 'sha256', 'sha1'])
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function invalid(reason: string): never {
  throw new ServiceError('PUBLISH_DOCUMENT_INVALID', { message: `the publish document is malformed: ${reason}`, data: { reason } })
}

function mismatch(field: string): never {
  throw new ServiceError('PUBLISH_NAME_MISMATCH', { data: { field } })
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Checks `body` as the publish document of `name` (decoded, e.g. `@acme/pkg`); throws a ServiceError. */
export function checkPublishDocument(body: Uint8Array, name: string): CheckedPublish {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  let doc: unknown
  try {
    doc = JSON.parse(text.toString('utf8'))
  } catch {
    invalid('not JSON')
  }
  const repeated = repeatedKey(text)
  if (repeated !== undefined) invalid(`the key ${repeated} is repeated`)
  if (!isObject(doc)) invalid('not a JSON object')
  sameName(doc['name'], name, 'name')
  sameName(doc['_id'], name, '_id')

  const attachments = doc['_attachments']
  if (attachments === undefined || attachments === null || (isObject(attachments) && Object.keys(attachments).length === 0)) {
    throw new ServiceError('PUBLISH_METADATA_CHANGE')
  }
  if (!isObject(attachments)) invalid('_attachments is not an object')

  const versions = doc['versions']
  if (!isObject(versions) || Object.keys(versions).length === 0) invalid('no versions')
  const manifests = new Map<string, Record<string, unknown>>()
  for (const [version, manifest] of Object.entries(versions)) {
    // What npm publish writes (libnpmpublish: semver.clean). Anything else (`latest`, `__proto__`, `v1.0.0`,
    // build metadata) is no version a client reads as itself, and the target would store it as one.
    if (canonicalVersion(version) !== version) invalid(`the versions key ${JSON.stringify(version)} is not a canonical semver version`)
    if (!isObject(manifest)) invalid(`version ${version} is not an object`)
    if (typeof manifest['name'] !== 'string') invalid(`version ${version} has no name`)
    sameName(manifest['name'], name, `versions.${version}.name`)
    if (manifest['version'] !== version) invalid(`version ${version} is keyed under another version string`)
    if (manifest['_id'] !== undefined && manifest['_id'] !== `${name}@${version}`) mismatch(`versions.${version}._id`)
    if (!isObject(manifest['dist'])) invalid(`version ${version} has no dist`)
    manifests.set(version, manifest)
  }

  const unscoped = name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name
  const tarballOf = new Map<string, string>()
  for (const version of manifests.keys()) {
    tarballOf.set(`${name}-${version}.tgz`, version)
    tarballOf.set(`${unscoped}-${version}.tgz`, version)
  }
  const withTarball = new Set<string>()
  for (const [key, attachment] of Object.entries(attachments)) {
    if (key.endsWith('.sigstore') && [...manifests.keys()].some((v) => key === `${name}-${v}.sigstore`)) continue
    const version = tarballOf.get(key)
    if (version === undefined) invalid(`attachment ${key} is the tarball of no version in the document`)
    if (withTarball.has(version)) invalid(`version ${version} has two tarballs`)
    withTarball.add(version)
    checkTarball(key, attachment, (manifests.get(version) as Record<string, unknown>)['dist'] as Record<string, unknown>)
  }
  for (const version of manifests.keys()) {
    if (!withTarball.has(version)) invalid(`version ${version} has no tarball in _attachments`)
  }
  return { versions: [...manifests.keys()] }
}

function sameName(value: unknown, name: string, field: string): void {
  if (value === undefined) return
  if (typeof value !== 'string') invalid(`${field} is not a string`)
  if (value !== name) mismatch(field)
}

function checkTarball(key: string, attachment: unknown, dist: Record<string, unknown>): void {
  if (!isObject(attachment)) invalid(`attachment ${key} is not an object`)
  const data = attachment['data']
  const length = attachment['length']
  if (typeof data !== 'string' || data.length % 4 !== 0 || !BASE64.test(data)) invalid(`attachment ${key} is not base64`)
  const bytes = Buffer.from(data, 'base64')
  if (length !== undefined && length !== bytes.byteLength) invalid(`attachment ${key} is ${bytes.byteLength} bytes, its length says ${String(length)}`)

  const integrity = dist['integrity']
  const shasum = dist['shasum']
  if (integrity === undefined && shasum === undefined) invalid(`attachment ${key}: its version's dist has neither integrity nor shasum`)
  if (integrity !== undefined) {
    if (typeof integrity !== 'string') invalid(`attachment ${key}: dist.integrity is not a string`)
    let checked = 0
    for (const entry of integrity.trim().split(/\s+/)) {
      const dash = entry.indexOf('-')
      const algorithm = dash < 0 ? '' : entry.slice(0, dash)
      if (!SRI_ALGORITHMS.has(algorithm)) continue
      // SRI options (`?...`) follow the digest; they carry no bytes of it.
      const expected = entry.slice(dash + 1).split('?')[0]
      if (createHash(algorithm).update(bytes).digest('base64') !== expected) invalid(`attachment ${key} does not match dist.integrity (${algorithm})`)
      checked++
    }
    if (checked === 0) invalid(`attachment ${key}: dist.integrity names no known algorithm`)
  }
  if (shasum !== undefined) {
    if (typeof shasum !== 'string') invalid(`attachment ${key}: dist.shasum is not a string`)
    if (createHash('sha1').update(bytes).digest('hex') !== shasum.toLowerCase()) invalid(`attachment ${key} does not match dist.shasum`)
  }
}
