/**
 * The artifact route of a mount, GET and HEAD (SPEC.md 4.1, 4.4, 4.4a, 5,
 * 6.1): `/js/{package}/-/{filename}` on the `js` mount, and the `py` mount's
 * file, core-metadata and provenance URLs (server/roles/py-wiring.ts makes
 * one handler per kind, with the `py` selection and validation).
 *
 * Two legs, in order: the private one (private-leg.ts: trusted, by the
 * requested file name), then, when it misses, the public one (public-leg.ts:
 * the selected version, gated). What either answers is artifact-answers.ts.
 * The private leg is skipped for a file the mount knows the private side
 * lacks (`publicSourced`, docs/cache.md "The private registry's misses"):
 * the public leg gates it as it would after a private miss.
 * Neither leg's relay is charged to the memory gate; a public decision takes
 * the gate's entry step alone, in the mount's selection (SPEC.md 4.4a, 8.1).
 */
import { ServiceError, toServiceError } from '../../engine/errors.js'
import { validateArtifactFilename, validatePackageName } from '../../engine/npm/names.js'
import { AbortCue } from '../../engine/upstream/http1/request-abort.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { noSuchArtifact, type RouteOpenOptions } from './artifact-answers.js'
import { bearerOf, privateLeg, type PrivateLegDeps } from './private-leg.js'
import { publicLeg, type PublicLegDeps } from './public-leg.js'

export type { SelectedArtifact } from './public-leg.js'

export interface ArtifactRouteDeps extends PrivateLegDeps, PublicLegDeps {
  privateClient: UpstreamClient | undefined
  publicClient: UpstreamClient | undefined
  /**
   * True when the last listing of the package took this file's version from
   * the public side (the private side lacked it) and nothing changed the
   * package's private side since: the private leg is not asked. Absent:
   * always asked. Never consulted when the request forwards the client's
   * own credential: the private registry may show that client more than
   * the listing (read with the private client's credential) saw.
   */
  publicSourced?(name: string, file: string): Promise<boolean>
  /** Checks the route's raw names and returns them decoded; throws a ServiceError. Default: npm's package and file name rules. */
  validate?(rawPackage: string, rawFilename: string): readonly [name: string, file: string]
}

export type ArtifactHandler = (exchange: Exchange, pkg: string, filename: string) => Promise<void>

/** The artifact request's options: its method, its conditional headers, and the cue that calls it off when the client leaves. */
function openOptions(exchange: Exchange, head: boolean): RouteOpenOptions {
  // The client leaving aborts whatever upstream request is in flight. Only then:
  // aborting after a completed relay would tear down a body that is about to end.
  // An AbortCue, not an AbortController: the version selection and a py private
  // location still get an AbortSignal (made only when asked for), the artifact
  // request does without (engine/upstream/http1/request-abort.ts says why).
  const abort = new AbortCue()
  exchange.onClose((reason) => {
    if (reason !== 'completed') abort.abort(new ServiceError('UPSTREAM_UNAVAILABLE', { message: 'the client went away' }))
  })
  const ifNoneMatch = exchange.header('if-none-match')
  const ifModifiedSince = exchange.header('if-modified-since')
  return {
    method: head ? 'HEAD' : 'GET',
    abort,
    ...(ifNoneMatch === undefined && ifModifiedSince === undefined ? {} : {
      conditional: {
        ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
        ...(ifModifiedSince === undefined ? {} : { ifModifiedSince }),
      },
    }),
  }
}

export function createArtifactHandler(deps: ArtifactRouteDeps): ArtifactHandler {
  return async (exchange, rawPackage, rawFilename) => {
    const head = exchange.method === 'HEAD'
    if (exchange.method !== 'GET' && !head) {
      exchange.respondError(new ServiceError('NOT_FOUND'), { head })
      return
    }
    let name: string
    let file: string
    try {
      [name, file] = deps.validate === undefined ? [validatePackageName(rawPackage), validateArtifactFilename(rawFilename)] : deps.validate(rawPackage, rawFilename)
    } catch (error) {
      exchange.respondError(toServiceError(error), { head })
      return
    }
    const options = openOptions(exchange, head)
    const privateClient = deps.privateClient
    const skipPrivate = privateClient !== undefined && bearerOf(deps, exchange).bearer === undefined && (await deps.publicSourced?.(name, file) ?? false)
    if (privateClient !== undefined && !skipPrivate && await privateLeg(deps, exchange, privateClient, name, file, options)) return
    if (exchange.closed) return
    if (deps.publicClient === undefined) {
      exchange.respondError(noSuchArtifact(), { head })
      return
    }
    await publicLeg(deps, exchange, deps.publicClient, name, file, options)
  }
}
