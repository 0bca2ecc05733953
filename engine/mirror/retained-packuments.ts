/**
 * Where the `js` mirror worker finds the gated manifest of a job's version
 * without reading the whole public packument again (issue 29 item 3): a
 * packument the proxy already holds. The worker scans it exactly as it
 * scans a public read (version-manifest.ts) and uses it only when the
 * version is there with the job's digests byte for byte; anything else (not
 * held, the version missing, other digests: an older answer) falls back to
 * the public read, which stays the authority.
 *
 * Implementations:
 * - `retainedAnswers` (here): the proxy's own retained answer in the full
 *   form (SPEC.md 6.3 assembled store, identity coding, current
 *   generation), for the worker the proxy runs on the embedded queue. The
 *   abbreviated form is never used: it lacks fields the target must keep
 *   (description, license, scripts, repository...).
 * - a shared backend (issue 29 item 1) plugs in as another implementation
 *   with `source: 'shared'`, for `service mirror` too: the public
 *   upstream's document from the shared full store, or a shared full-form
 *   answer. Its reads must never throw (a failed backend read is a miss,
 *   SPEC.md 6.3) and must not block past the backend's own timeout.
 */
import { assembledKey, type CachedStore, type AssembledResponse } from '../cache/metadata-cache.js'

export type RetainedSource = 'retained' | 'shared'

export interface RetainedPackument {
  /** The document's bytes, a packument whose `versions` may list the job's version. */
  readonly chunks: readonly Uint8Array[]
  readonly source: RetainedSource
}

export interface RetainedPackuments {
  /** A packument held for `packageName`, or undefined. Never throws: a failure is a miss. */
  read(packageName: string, signal?: AbortSignal): Promise<RetainedPackument | undefined>
}

/**
 * The proxy's retained full-form answer of a package, under the mount's
 * current generation (a new database or new rules never serve an old
 * decision). Read without counting: it is not a client request.
 */
export function retainedAnswers(assembled: Pick<CachedStore<AssembledResponse>, 'retained'>, ecosystem: string, generation: () => number | string): RetainedPackuments {
  return {
    read: async (packageName) => {
      // The answer under a configured server.baseUrl (variant ''); with request-derived origins each origin has its own, and a miss reads the public side.
      const held = await assembled.retained(assembledKey(ecosystem, packageName, 'full', generation()))
      if (held === undefined || held.coding !== undefined) return undefined
      return { chunks: [held.body], source: 'retained' }
    },
  }
}
