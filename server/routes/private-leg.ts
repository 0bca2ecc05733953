/**
 * The artifact route's private leg (SPEC.md 4.4, 5.2): trusted, so no
 * packument, no gate, no integrity floor and no mirror job. The artifact is
 * asked for at its conventional location by the requested file name (npm;
 * the `py` mount finds it on its project page), the client's bearer
 * credential forwarded (else the private client's own), no redirect
 * followed. A 2xx (or a 304 to the client's conditional) answers; any other
 * status or no answer is a clean miss that falls through to the public leg.
 *
 * A private 304 to a conditional request answers the client (its copy is
 * current); it is not a miss (SPEC.md is silent there).
 *
 * The one judgement (issue 31 item 4): a file whose version a malware record
 * names is refused before the private upstream is asked, with the public
 * leg's explained 403 (`privateRefusal`, engine/policy/private-malware-gate.ts).
 */
import { toServiceError, type ServiceError } from '../../engine/errors.js'
import { BearerToken } from '../../engine/secret.js'
import type { ArtifactResponse } from '../../engine/upstream/http1/artifact-response.js'
import { authorityOf } from '../../engine/upstream/egress-guard.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { answerBodiless, isArtifactAnswer, relayToClient, type ArtifactReporting, type RouteOpenOptions } from './artifact-answers.js'

/** debug: the private leg missed and the request falls through to the public leg. */
export const ARTIFACT_PRIVATE_MISS = 'artifact private miss'
/** debug: the private leg refused a file a malware record names (the private side's one judgement). */
export const ARTIFACT_PRIVATE_REFUSED = 'artifact private refused'

export interface PrivateLegDeps extends ArtifactReporting {
  /**
   * False when edge tokens are configured (SPEC.md 5.1): the client's
   * Authorization then carries the edge token, which is this proxy's and is
   * never sent upstream; the private leg sends the private upstream's own
   * configured token instead, or nothing. Default true (SPEC.md 5.2).
   */
  forwardClientCredential?: boolean
  /**
   * Where the private leg asks, or undefined to skip it. Default: the
   * conventional location `{base}/{package}/-/{file}` (npm). The `py` mount
   * has no conventional location: it answers from its project page.
   */
  privateUrl?(client: UpstreamClient, name: string, file: string, signal: AbortSignal): Promise<URL | undefined>
  /**
   * The refusal of a file whose version a malware record names (first-party
   * names and every other version: undefined, and the private upstream is
   * asked). Absent: the private leg judges nothing.
   */
  privateRefusal?(name: string, file: string): ServiceError | undefined
}

/** The client's `Authorization: Bearer X` as a BearerToken (SPEC.md 5.2); other schemes are not forwarded. */
export function clientBearer(authorization: string | undefined): BearerToken | undefined {
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '')
  return match?.[1] === undefined ? undefined : new BearerToken(match[1])
}

/** The client's credential the private leg forwards, if any (none: it asks with the private client's own, as a listing does). */
export function bearerOf(deps: PrivateLegDeps, exchange: Exchange): { bearer?: BearerToken } {
  if (deps.forwardClientCredential === false) return {}
  const bearer = clientBearer(exchange.header('authorization'))
  return bearer === undefined ? {} : { bearer }
}

/** True when the private leg answered the request (or the client left meanwhile); false: a miss, the public leg's turn. */
export async function privateLeg(deps: PrivateLegDeps, exchange: Exchange, client: UpstreamClient, name: string, file: string, options: RouteOpenOptions): Promise<boolean> {
  const { counters, logger } = deps
  const refusal = deps.privateRefusal?.(name, file)
  if (refusal !== undefined) {
    counters.relay('private', 'refused')
    logger.debug(ARTIFACT_PRIVATE_REFUSED, { package: name, file, code: refusal.code })
    exchange.respondError(refusal, { head: exchange.method === 'HEAD' })
    return true
  }
  let located: URL | undefined
  try {
    located = deps.privateUrl === undefined ? client.artifactUrl(name, file) : await deps.privateUrl(client, name, file, options.abort.signal)
  } catch (error) {
    if (exchange.closed) return true
    counters.relay('private', 'failed')
    exchange.respondError(toServiceError(error), { head: exchange.method === 'HEAD' })
    return true
  }
  if (located === undefined || exchange.closed) return exchange.closed
  const url = located
  const upstream = authorityOf(url)
  let response: ArtifactResponse
  try {
    response = await client.openArtifact(url, { ...options, ...bearerOf(deps, exchange) })
  } catch (error) {
    if (exchange.closed) return true
    counters.relay('private', 'miss')
    logger.debug(ARTIFACT_PRIVATE_MISS, { package: name, upstream, code: toServiceError(error).code })
    return false
  }
  if (exchange.closed) {
    response.body?.destroy()
    return true
  }
  const status = response.statusCode
  if (!isArtifactAnswer(status, options.conditional !== undefined)) {
    response.body?.destroy()
    counters.relay('private', 'miss')
    logger.debug(ARTIFACT_PRIVATE_MISS, { package: name, upstream, status })
    return false
  }
  if (response.body === null || exchange.method === 'HEAD') {
    response.body?.destroy()
    answerBodiless(exchange, response)
    counters.relay('private', 'bodiless')
    return true
  }
  await relayToClient(deps, exchange, 'private', name, upstream, response, response.body)
  return true
}
