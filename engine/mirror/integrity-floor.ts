/**
 * The integrity floor of the public artifact leg (SPEC.md 4.4, 7.1): a
 * public version is served only when its digest is at least as strong as
 * the configured floor. The mirror worker re-verifies against the same
 * digests, so the strength rules live here, beside the mirror job.
 *
 * An `integrity` value is a Subresource-Integrity string (W3C SRI): one or
 * more `<alg>-<base64>[?<options>]` tokens separated by whitespace. Its
 * strength is the strongest token that is well formed, meaning a known
 * algorithm whose base64 digest has that algorithm's exact length; an
 * unknown algorithm or a malformed digest counts for nothing. A legacy
 * `shasum` (40 hex digits) counts as sha1.
 */
import { ServiceError } from '../errors.js'

export const INTEGRITY_ALGORITHMS = ['sha1', 'sha256', 'sha384', 'sha512'] as const
export type IntegrityAlgorithm = (typeof INTEGRITY_ALGORITHMS)[number]

const DIGEST_BYTES: Readonly<Record<IntegrityAlgorithm, number>> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }
const RANK: Readonly<Record<IntegrityAlgorithm, number>> = { sha1: 1, sha256: 2, sha384: 3, sha512: 4 }
const TOKEN = /^([a-z0-9]+)-([A-Za-z0-9+/]+={0,2})(?:\?.*)?$/
const SHASUM = /^[0-9a-f]{40}$/i

function isAlgorithm(name: string): name is IntegrityAlgorithm {
  return (INTEGRITY_ALGORITHMS as readonly string[]).includes(name)
}

/** The strongest well-formed digest among `integrity` and `shasum`, or undefined when there is none. */
export function strongestDigest(integrity: string | undefined, shasum: string | undefined): IntegrityAlgorithm | undefined {
  let best: IntegrityAlgorithm | undefined
  for (const token of (integrity ?? '').split(/\s+/)) {
    const match = TOKEN.exec(token)
    if (match === null) continue
    const [, alg = '', digest = ''] = match
    if (!isAlgorithm(alg) || digest.length % 4 !== 0) continue
    if (Buffer.from(digest, 'base64').byteLength !== DIGEST_BYTES[alg]) continue
    if (best === undefined || RANK[alg] > RANK[best]) best = alg
  }
  if (best === undefined && shasum !== undefined && SHASUM.test(shasum)) best = 'sha1'
  return best
}

/**
 * Refuses a version whose digests do not reach `floor`: INTEGRITY_MISSING
 * when it has no usable digest at all, INTEGRITY_BELOW_FLOOR when its
 * strongest one is weaker than the floor (both 403, SPEC.md 7.1).
 */
export function checkIntegrityFloor(integrity: string | undefined, shasum: string | undefined, floor: IntegrityAlgorithm): IntegrityAlgorithm {
  const strongest = strongestDigest(integrity, shasum)
  if (strongest === undefined) throw new ServiceError('INTEGRITY_MISSING')
  if (RANK[strongest] < RANK[floor]) {
    throw new ServiceError('INTEGRITY_BELOW_FLOOR', {
      message: `the version integrity digest (${strongest}) is below the configured floor (${floor})`,
      data: { strongest, floor },
    })
  }
  return strongest
}
