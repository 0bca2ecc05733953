/**
 * Anti-shadowing at publish time (SPEC.md 1.4, 4.3): does the public
 * upstream have a package of this name? Asked only for an exact unscoped
 * name the operator listed (engine/publish/publish-scope.ts); a name in an
 * owned scope is never checked.
 *
 * Existence is all that is needed, so the read stops at the first byte of a
 * document: a popular packument is tens of megabytes and none of it is
 * read. A miss (404/410) means free; any failure to get an answer fails
 * closed with PUBLISH_PUBLIC_UNAVAILABLE (503): a publish that might shadow
 * a public package waits for the public upstream to answer.
 */
import { isServiceError, ServiceError } from '../errors.js'
import type { UpstreamClient } from '../upstream/upstream-client.js'

/** The abbreviated form is the smallest answer a registry gives. */
const ABBREVIATED = 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8'

class Found extends Error {}

export async function publicHasName(client: Pick<UpstreamClient, 'fetchDocument'>, name: string, signal: AbortSignal): Promise<boolean> {
  const stop = new AbortController()
  const found = new Found('the public upstream has the name')
  try {
    const result = await client.fetchDocument(name, {
      accept: ABBREVIATED,
      signal: AbortSignal.any([signal, stop.signal]),
      onChunk: () => { stop.abort(found) },
    })
    return result.kind === 'document'
  } catch (error) {
    if (error === found) return true
    if (signal.aborted) throw signal.reason
    throw new ServiceError('PUBLISH_PUBLIC_UNAVAILABLE', { cause: error, data: { code: isServiceError(error) ? error.code : 'transport' } })
  }
}
