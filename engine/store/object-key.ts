/**
 * Object keys and user metadata, checked identically by every ObjectStore so
 * that the embedded store and S3 accept exactly the same things.
 *
 * Keys are `/`-separated segments of a conservative character set. No empty
 * segment, no `.` or `..` segment and no leading dot, so a key can never name
 * a path outside the store's folder nor collide with the embedded store's
 * temporary files (which start with a dot). At most 100 characters, so the
 * embedded store's encoded file names stay far below the 255-byte file name
 * limit of common filesystems.
 *
 * Metadata travels as `x-amz-meta-*` HTTP headers on S3, which lower-case the
 * names and cannot carry arbitrary bytes, and S3 caps it at 2 KB: the same
 * limits apply everywhere.
 */
import { ServiceError } from '../errors.js'
import type { ObjectMetadata } from './object-store.js'

export const MAX_KEY_LENGTH = 100
export const MAX_METADATA_BYTES = 2048

const SEGMENT = /^[A-Za-z0-9_~@+=,-][A-Za-z0-9._~@+=,-]*$/
const METADATA_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/
const METADATA_VALUE = /^[\x20-\x7e]*$/

/** Throws STORE_FAILURE (data.reason `invalid-key`) unless `key` is acceptable. */
export function checkObjectKey(key: string): void {
  const problem = keyProblem(key)
  if (problem !== undefined) {
    throw new ServiceError('STORE_FAILURE', { message: `invalid object key: ${problem}`, data: { reason: 'invalid-key' } })
  }
}

/** Prefixes of list() follow the key rules except that they may be empty or end in `/`. */
export function checkObjectPrefix(prefix: string): void {
  if (prefix === '') return
  const probe = prefix.endsWith('/') ? `${prefix}x` : prefix
  checkObjectKey(probe)
}

function keyProblem(key: string): string | undefined {
  if (typeof key !== 'string' || key.length === 0) return 'empty'
  if (key.length > MAX_KEY_LENGTH) return `longer than ${MAX_KEY_LENGTH} characters`
  for (const segment of key.split('/')) {
    if (segment === '') return 'empty segment'
    if (!SEGMENT.test(segment)) return 'a segment starts with a dot or holds a character outside [A-Za-z0-9._~@+=,-]'
  }
  return undefined
}

/** Throws STORE_FAILURE (data.reason `invalid-metadata`) unless `metadata` is acceptable. */
export function checkObjectMetadata(metadata: ObjectMetadata): void {
  let bytes = 0
  for (const [name, value] of Object.entries(metadata)) {
    let problem: string | undefined
    if (!METADATA_NAME.test(name)) problem = `name ${JSON.stringify(name)} is not lower-case [a-z0-9_-]`
    else if (typeof value !== 'string' || !METADATA_VALUE.test(value)) problem = `value of ${name} is not printable ASCII`
    bytes += name.length + (typeof value === 'string' ? value.length : 0)
    if (problem === undefined && bytes > MAX_METADATA_BYTES) problem = `larger than ${MAX_METADATA_BYTES} bytes`
    if (problem !== undefined) {
      throw new ServiceError('STORE_FAILURE', { message: `invalid object metadata: ${problem}`, data: { reason: 'invalid-metadata' } })
    }
  }
}
