/**
 * The `registry` provider (SPEC.md 5.5): a static secret setting. It never
 * expires, so it emits no expiry observation; the source mints it once.
 */
import type { BearerToken } from '../../secret.js'
import type { Mint } from './credential-source.js'

export function staticMint(token: BearerToken): Mint {
  return async () => ({ token })
}
