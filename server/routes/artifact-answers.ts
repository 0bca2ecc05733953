/**
 * What the artifact route answers on either leg (SPEC.md 4.4, 7.1): the serve
 * error model's refusals, a bodiless answer, and a relay to the client
 * counted and logged once it ends.
 *
 * Decisions where SPEC.md is silent:
 * - On both legs an artifact is a 200, or a 304 when the client's request
 *   was conditional. Any other success (206 to a request that asked for no
 *   range, 304 to one that asked for no validation, 203...) is not the
 *   artifact: the private leg falls through, the public leg answers 503.
 * - The public leg maps a non-success it will not pass through to the serve
 *   error model: 404/410 a forwarded miss (404); 408, 429 and 5xx 503 with
 *   Retry-After; a redirect 500 (never followed); any other status 500.
 */
import { advisoryExpired, ServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { Decision } from '../../engine/policy/decision.js'
import type { Explanation } from '../../engine/policy/explain.js'
import type { ArtifactBody } from '../../engine/upstream/http1/artifact-body.js'
import type { ArtifactResponse } from '../../engine/upstream/http1/artifact-response.js'
import type { AbortCue } from '../../engine/upstream/http1/request-abort.js'
import type { OpenArtifactOptions } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { DEFAULT_ARTIFACT_TYPE, relayArtifact, relayedHeaders, type RelayBound, type RelayOutcome } from '../http/relay.js'
import type { ArtifactCounters, ArtifactLeg, ArtifactOutcome } from './artifact-counters.js'

/** error: the public upstream gave no answer, or failed mid-body (the client's connection was cut). */
export const ARTIFACT_UPSTREAM_FAILED = 'artifact upstream failed'

/** The route's artifact requests: called off by its AbortCue when the client leaves. */
export type RouteOpenOptions = OpenArtifactOptions & { readonly abort: AbortCue }

/** What both legs report to. */
export interface ArtifactReporting {
  readonly logger: Logger
  readonly counters: ArtifactCounters
  /** A bound on every relayed body, on either leg (the py `.metadata` relay); unset: none. */
  readonly relayBound?: RelayBound
}

/**
 * The serve error model answer for an admission decision other than admit
 * (SPEC.md 3.5, 7.1). A deny carries the explanation's sentence as its
 * envelope text, which npm prints (issue 17 item 5).
 */
export function refusalOf(decision: Decision, explained?: Explanation): ServiceError | undefined {
  switch (decision.verdict) {
    case 'admit':
      return undefined
    case 'deny':
      return new ServiceError('POLICY_WITHHELD', {
        ...(explained === undefined ? {} : { message: explained.message }),
        data: {
          rule: decision.rule ?? 'default', reason: decision.reason,
          ...(explained?.admittedFrom === undefined ? {} : { admittedFrom: explained.admittedFrom }),
        },
      })
    case 'unavailable':
      return new ServiceError('ADVISORY_UNAVAILABLE', { data: { reason: decision.reason } })
    case 'expired':
      return advisoryExpired(decision.ageSeconds, decision.maxAgeSeconds)
  }
}

/** The serve error model for a public non-success status (see the decisions above). */
export function statusRefusal(status: number, upstream: string): ServiceError {
  const data = { upstream, status }
  if (status === 404 || status === 410) return new ServiceError('UPSTREAM_MISS', { message: 'no such artifact upstream', data })
  if (status === 408 || status === 429 || status >= 500) return new ServiceError('UPSTREAM_UNAVAILABLE', { data })
  if (status >= 300 && status < 400 && status !== 304) return new ServiceError('UPSTREAM_REDIRECT', { data })
  // A success that is not the artifact (206, an unprompted 304, 203...): transient from the client's side.
  if (isSuccess(status) || status === 304) return new ServiceError('UPSTREAM_UNAVAILABLE', { data: { ...data, reason: 'not the whole artifact' } })
  return new ServiceError('UPSTREAM_REFUSED', { data })
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300
}

/**
 * The statuses that carry the artifact or vouch for the client's copy: 200,
 * and 304 only to a conditional request. A 206 without a range asked for
 * lacks part of the bytes (its Content-Range is not relayed), and an
 * unprompted 304 carries none (RFC 9110 sections 15.3.7, 15.4.5).
 */
export function isArtifactAnswer(status: number, conditional: boolean): boolean {
  return status === 200 || (status === 304 && conditional)
}

export function noSuchArtifact(): ServiceError {
  return new ServiceError('UPSTREAM_MISS', { message: 'no such artifact upstream' })
}

/** Answers a bodiless upstream response (HEAD, 304) with its status and the relayed headers. */
export function answerBodiless(exchange: Exchange, response: ArtifactResponse): void {
  const headers = relayedHeaders(response.headers)
  const length = response.headers['content-length']
  if (length !== undefined) headers['content-length'] = length
  if (isSuccess(response.statusCode)) headers['content-type'] ??= DEFAULT_ARTIFACT_TYPE
  // head: true keeps a HEAD's content-length as reported; a 304 gets none (Exchange.respond).
  exchange.respond(response.statusCode, headers, undefined, { head: true })
}

/** Relays an upstream artifact to the client, then counts how it ended and logs an upstream failure. */
export async function relayToClient(
  report: ArtifactReporting, exchange: Exchange, leg: ArtifactLeg, name: string, upstream: string, response: ArtifactResponse, body: ArtifactBody,
): Promise<RelayOutcome> {
  const outcome = await relayArtifact(exchange, { status: response.statusCode, headers: response.headers, body }, { upstream, ...(report.relayBound === undefined ? {} : { bound: report.relayBound }) })
  const kind: ArtifactOutcome = outcome.kind === 'delivered' ? 'delivered'
    : outcome.kind === 'client-gone' ? 'client_gone'
      : outcome.afterFirstByte ? 'cut' : 'failed'
  report.counters.relay(leg, kind)
  if (outcome.kind === 'upstream-failed') {
    report.logger.error(ARTIFACT_UPSTREAM_FAILED, {
      leg, package: name, upstream, code: outcome.error.code, afterFirstByte: outcome.afterFirstByte, bytes: outcome.bytes,
      ...(outcome.error.data?.['reason'] === undefined ? {} : { reason: outcome.error.data['reason'] }),
    })
  }
  return outcome
}
