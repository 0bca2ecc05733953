/**
 * The integrity floor (SPEC.md 4.4, 7.1): the strongest well-formed digest
 * of an SRI string (several algorithms allowed), a shasum counting as sha1,
 * INTEGRITY_MISSING and INTEGRITY_BELOW_FLOOR.
 */
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { checkIntegrityFloor, strongestDigest } from '../../engine/mirror/integrity-floor.js'

const digest = (alg: string, bytes: number): string => `${alg}-${Buffer.alloc(bytes, 7).toString('base64')}`
const SHA1 = digest('sha1', 20)
const SHA256 = digest('sha256', 32)
const SHA384 = digest('sha384', 48)
const SHA512 = digest('sha512', 64)
const SHASUM = 'ab'.repeat(20)

function codeOf(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e) ? e.code : `other: ${String(e)}`
  }
  return 'accepted'
}

t.test('strongest digest', async (t) => {
  t.equal(strongestDigest(SHA512, undefined), 'sha512')
  t.equal(strongestDigest(`${SHA1} ${SHA512}`, SHASUM), 'sha512', 'several algorithms: the strongest')
  t.equal(strongestDigest(`${SHA256}\n${SHA384}?opt`, undefined), 'sha384', 'any whitespace and options')
  t.equal(strongestDigest(undefined, SHASUM), 'sha1', 'a shasum alone is sha1')
  t.equal(strongestDigest('', SHASUM), 'sha1')
  t.equal(strongestDigest('sha512-tooShort', undefined), undefined, 'a digest of the wrong length counts for nothing')
  t.equal(strongestDigest(`md5-${Buffer.alloc(16).toString('base64')}`, undefined), undefined, 'an unknown algorithm counts for nothing')
  t.equal(strongestDigest(`sha512-tooShort ${SHA256}`, undefined), 'sha256')
  t.equal(strongestDigest(undefined, 'not-hex'), undefined)
  t.equal(strongestDigest(undefined, undefined), undefined)
})

t.test('floor', async (t) => {
  t.equal(codeOf(() => checkIntegrityFloor(SHA512, undefined, 'sha512')), 'accepted')
  t.equal(codeOf(() => checkIntegrityFloor(undefined, undefined, 'sha512')), 'INTEGRITY_MISSING')
  t.equal(codeOf(() => checkIntegrityFloor('garbage', undefined, 'sha1')), 'INTEGRITY_MISSING')
  t.equal(codeOf(() => checkIntegrityFloor(undefined, SHASUM, 'sha512')), 'INTEGRITY_BELOW_FLOOR')
  t.equal(codeOf(() => checkIntegrityFloor(SHA256, SHASUM, 'sha384')), 'INTEGRITY_BELOW_FLOOR')
  t.equal(codeOf(() => checkIntegrityFloor(undefined, SHASUM, 'sha1')), 'accepted', 'a sha1 floor takes a shasum')
  t.equal(codeOf(() => checkIntegrityFloor(`${SHA1} ${SHA384}`, undefined, 'sha384')), 'accepted')
})
