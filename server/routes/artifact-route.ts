/**
 * The artifact route of the `/js` mount, GET and HEAD
 * `/js/{package}/-/{filename}` (SPEC.md 4.1, 4.4, 4.4a, 5, 6.1).
 *
 * Two legs, in order:
 * - Private (trusted): the conventional location by the requested file
 *   name, no packument, the client's bearer credential forwarded (else the
 *   private client's own), no redirect followed. A 2xx (or a 304 to the
 *   client's conditional) answers; any other status or no answer is a clean
 *   miss that falls through. No integrity floor, no mirror job.
 * - Public (gated, anonymous): the selected version, the admission gate,
 *   the integrity floor, then the authoritative `dist.tarball` URL exactly
 *   as upstream gave it (the public client enforces https, the allowlist,
 *   the internal-range block and the tarball-host policy). The relay is
 *   judged on status and headers only; a clean GET relay enqueues one
 *   mirror job after the last byte is handed over, best effort.
 * - On both legs an artifact is a 200, or a 304 when the client's request
 *   was conditional. Any other success (206 to a request that asked for no
 *   range, 304 to one that asked for no validation, 203...) is not the
 *   artifact: the private leg falls through, the public leg answers 503.
 *
 * Neither leg is charged to the memory gate (SPEC.md 4.4a, 8.1).
 *
 * Decisions where SPEC.md is silent:
 * - A private 304 to a conditional request answers the client (its copy is
 *   current); it is not a miss.
 * - The public leg maps a non-success it will not pass through to the serve
 *   error model: 404/410 a forwarded miss (404); 408, 429 and 5xx 503 with
 *   Retry-After; a redirect 500 (never followed); any other status 500.
 * - The gate runs before the integrity floor, so every public decision is
 *   observed by the outage tracker; both refusals are 403.
 * - A public 304 to a conditional request relays bodiless and enqueues
 *   nothing: no bytes were relayed.
 */
import { systemClock, type Clock } from '../../engine/clock.js'
import { advisoryExpired, ServiceError, toServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import { checkIntegrityFloor, type IntegrityAlgorithm } from '../../engine/mirror/integrity-floor.js'
import { checkMirrorJob, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import { validateArtifactFilename, validatePackageName } from '../../engine/npm/names.js'
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import type { Decision, HistoryFacts, VersionFacts } from '../../engine/policy/decision.js'
import { explainRefusal, type Explanation } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { BearerToken } from '../../engine/secret.js'
import type { ArtifactResponse } from '../../engine/upstream/http1/artifact-response.js'
import { AbortCue } from '../../engine/upstream/http1/request-abort.js'
import { authorityOf } from '../../engine/upstream/egress-guard.js'
import type { OpenArtifactOptions, UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { DEFAULT_ARTIFACT_TYPE, relayArtifact, relayedHeaders, type RelayOutcome } from '../http/relay.js'
import type { ArtifactCounters, ArtifactLeg, ArtifactOutcome } from './artifact-counters.js'

/** warn: a passed-through non-success, or a success visibly not an artifact (SPEC.md 4.4 public leg 6). */
export const ARTIFACT_RELAY_ANOMALOUS = 'artifact relay anomalous'
/** warn: the mirror job could not be enqueued; the response was not affected (SPEC.md 4.4 public leg 5). */
export const MIRROR_ENQUEUE_FAILED = 'mirror job enqueue failed'
/** error: the public upstream gave no answer, or failed mid-body (the client's connection was cut). */
export const ARTIFACT_UPSTREAM_FAILED = 'artifact upstream failed'
/** debug: the private leg missed and the request falls through to the public leg. */
export const ARTIFACT_PRIVATE_MISS = 'artifact private miss'
/** debug: the public leg refused the artifact (policy, integrity floor, tarball host, egress). */
export const ARTIFACT_REFUSED = 'artifact refused'

export interface SelectedArtifact {
  version: string
  filename: string
  /** upstream dist.tarball, unchanged */
  tarball: string
  integrity: string | undefined
  shasum: string | undefined
  publishedAt: Date | undefined
  /** The history facts the mount's rules read (engine/packument/merge.ts SelectedVersion), gated on again here. */
  history?: HistoryFacts | undefined
  /**
   * The fields of the mirror job that are not the route's own, for a mount
   * whose jobs carry more than a js job (py: `mount`, all SHA-2 digests,
   * md5, `coreMetadata`); they replace `integrity` and `shasum` in the job.
   * Undefined: a js job.
   */
  mirrorFields?: Pick<MirrorJob, 'mount' | 'integrity' | 'shasum' | 'md5' | 'coreMetadata'> | undefined
}

export interface ArtifactRouteDeps {
  ecosystem: Ecosystem
  privateClient: UpstreamClient | undefined
  publicClient: UpstreamClient | undefined
  /** Selected-version lookup: the store first, else a public packument fetch (the lead implements it). undefined = the public upstream has no such version/file (404). May throw ServiceError (503 etc). */
  selectVersion(packageName: string, filename: string, signal: AbortSignal): Promise<SelectedArtifact | undefined>
  /** The mount's admission-phase gate (main thread). */
  evaluate(facts: VersionFacts): Decision
  /** The mount's rule list, for refusals that explain themselves; without it a deny says only 'withheld by policy'. */
  rules?: readonly RuleConfig[]
  /** Feeds the advisory outage tracker and the skipped-check record (SPEC.md 3.3, 6.2); call it for every public decision. */
  observe(facts: VersionFacts, decision: Decision): void
  integrityFloor: IntegrityAlgorithm
  /** Best effort, never awaited on the response path; undefined when this route's relays are never mirrored (no mirror target, a `.metadata` or provenance file). */
  enqueue: ((job: MirrorJob) => Promise<void>) | undefined
  logger: Logger
  counters: ArtifactCounters
  /** Stamps `enqueuedAt`; the system clock when absent. */
  clock?: Clock
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
  /** Checks the route's raw names and returns them decoded; throws a ServiceError. Default: npm's package and file name rules. */
  validate?(rawPackage: string, rawFilename: string): readonly [name: string, file: string]
  /** Media types that say a public success is not what was asked for (warned and counted, never mirrored). Default: text, JSON and XML. */
  anomalousType?(contentType: string | undefined): boolean
}

export type ArtifactHandler = (exchange: Exchange, pkg: string, filename: string) => Promise<void>

/** Media types that say a success is not an artifact (an error page, a JSON document). */
function visiblyNotArtifact(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  return type.startsWith('text/') || type === 'application/json' || type === 'application/xml'
    || type === 'application/javascript' || type.endsWith('+json') || type.endsWith('+xml')
}

/** The client's `Authorization: Bearer X` as a BearerToken (SPEC.md 5.2); other schemes are not forwarded. */
export function clientBearer(authorization: string | undefined): BearerToken | undefined {
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '')
  return match?.[1] === undefined ? undefined : new BearerToken(match[1])
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
function statusRefusal(status: number, upstream: string): ServiceError {
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
function isArtifactAnswer(status: number, conditional: boolean): boolean {
  return status === 200 || (status === 304 && conditional)
}

/** The route's artifact requests: called off by its AbortCue when the client leaves. */
type RouteOpenOptions = OpenArtifactOptions & { readonly abort: AbortCue }

const NO_SUCH_ARTIFACT = (): ServiceError => new ServiceError('UPSTREAM_MISS', { message: 'no such artifact upstream' })

export function createArtifactHandler(deps: ArtifactRouteDeps): ArtifactHandler {
  const { logger, counters } = deps
  const clock = deps.clock ?? systemClock

  /** Answers a bodiless upstream response (HEAD, 304) with its status and the relayed headers. */
  const answerBodiless = (exchange: Exchange, response: ArtifactResponse): void => {
    const headers = relayedHeaders(response.headers)
    const length = response.headers['content-length']
    if (length !== undefined) headers['content-length'] = length
    if (isSuccess(response.statusCode)) headers['content-type'] ??= DEFAULT_ARTIFACT_TYPE
    // head: true keeps a HEAD's content-length as reported; a 304 gets none (Exchange.respond).
    exchange.respond(response.statusCode, headers, undefined, { head: true })
  }

  const count = (leg: ArtifactLeg, outcome: RelayOutcome): ArtifactOutcome => {
    const kind: ArtifactOutcome = outcome.kind === 'delivered' ? 'delivered'
      : outcome.kind === 'client-gone' ? 'client_gone'
        : outcome.afterFirstByte ? 'cut' : 'failed'
    counters.relay(leg, kind)
    return kind
  }

  const logUpstreamFailure = (leg: ArtifactLeg, name: string, upstream: string, outcome: RelayOutcome): void => {
    if (outcome.kind !== 'upstream-failed') return
    logger.error(ARTIFACT_UPSTREAM_FAILED, {
      leg, package: name, upstream, code: outcome.error.code, afterFirstByte: outcome.afterFirstByte, bytes: outcome.bytes,
      ...(outcome.error.data?.['reason'] === undefined ? {} : { reason: outcome.error.data['reason'] }),
    })
  }

  const enqueueLater = (job: MirrorJob): void => {
    const enqueue = deps.enqueue
    // Nothing to mirror: no job is made, so none can fail (and warn) on the way.
    if (enqueue === undefined) return
    // Serve-then-enqueue: never awaited by the response, and nothing it throws reaches it.
    void (async () => {
      try {
        checkMirrorJob(job)
        await enqueue(job)
        counters.enqueued()
      } catch (error) {
        counters.enqueueFailed()
        const failure = toServiceError(error)
        logger.warn(MIRROR_ENQUEUE_FAILED, {
          package: job.package, version: job.version, filename: job.filename, code: failure.code,
          ...(failure.data?.['detail'] === undefined ? {} : { detail: failure.data['detail'] }),
        })
      }
    })()
  }

  /** True when the private leg answered the request (or the client left meanwhile). */
  const privateLeg = async (exchange: Exchange, client: UpstreamClient, name: string, file: string, options: RouteOpenOptions): Promise<boolean> => {
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
      response = await client.openArtifact(url, { ...options, ...bearerOf(exchange) })
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
    const outcome = await relayArtifact(exchange, { status, headers: response.headers, body: response.body }, { upstream })
    count('private', outcome)
    logUpstreamFailure('private', name, upstream, outcome)
    return true
  }

  const bearerOf = (exchange: Exchange): { bearer?: BearerToken } => {
    if (deps.forwardClientCredential === false) return {}
    const bearer = clientBearer(exchange.header('authorization'))
    return bearer === undefined ? {} : { bearer }
  }

  const refuse = (exchange: Exchange, error: ServiceError, name: string, version: string | undefined): void => {
    counters.relay('public', 'refused')
    logger.debug(ARTIFACT_REFUSED, { package: name, ...(version === undefined ? {} : { version }), code: error.code })
    exchange.respondError(error, { head: exchange.method === 'HEAD' })
  }

  const publicLeg = async (exchange: Exchange, client: UpstreamClient, name: string, file: string, options: RouteOpenOptions): Promise<void> => {
    const head = exchange.method === 'HEAD'
    let selected: SelectedArtifact | undefined
    try {
      selected = await deps.selectVersion(name, file, options.abort.signal)
    } catch (error) {
      if (exchange.closed) return
      counters.relay('public', 'failed')
      exchange.respondError(toServiceError(error), { head })
      return
    }
    if (exchange.closed) return
    if (selected === undefined) {
      counters.relay('public', 'miss')
      exchange.respondError(NO_SUCH_ARTIFACT(), { head })
      return
    }

    const facts: VersionFacts = { ...selected.history, ecosystem: deps.ecosystem, name, version: selected.version, publishedAt: selected.publishedAt }
    const decision = deps.evaluate(facts)
    deps.observe(facts, decision)
    const refusal = refusalOf(decision, deps.rules === undefined ? undefined : explainRefusal(decision, facts, deps.rules, clock.now()))
    if (refusal !== undefined) {
      refuse(exchange, refusal, name, selected.version)
      return
    }
    try {
      checkIntegrityFloor(selected.integrity, selected.shasum, deps.integrityFloor)
    } catch (error) {
      refuse(exchange, toServiceError(error), name, selected.version)
      return
    }

    let url: URL
    try {
      url = new URL(selected.tarball)
    } catch {
      refuse(exchange, new ServiceError('TARBALL_HOST_REFUSED', { data: { reason: 'not a URL' } }), name, selected.version)
      return
    }
    const upstream = authorityOf(url)
    let response: ArtifactResponse
    try {
      // Anonymous: no bearer is passed, and the public client never builds one (SPEC.md 5.3).
      response = await client.openArtifact(url, options)
    } catch (error) {
      if (exchange.closed) return
      const failure = toServiceError(error)
      if (failure.status === 403) {
        refuse(exchange, failure, name, selected.version)
        return
      }
      counters.relay('public', 'failed')
      logger.error(ARTIFACT_UPSTREAM_FAILED, { leg: 'public', package: name, version: selected.version, upstream, code: failure.code, afterFirstByte: false })
      exchange.respondError(failure, { head })
      return
    }
    if (exchange.closed) {
      response.body?.destroy()
      return
    }

    const status = response.statusCode
    const where = { leg: 'public', package: name, version: selected.version, upstream, status }
    if (status === 304 && options.conditional !== undefined) {
      answerBodiless(exchange, response)
      counters.relay('public', 'bodiless')
      return
    }
    if (!isArtifactAnswer(status, false)) {
      response.body?.destroy()
      counters.anomalous('status')
      counters.relay('public', 'miss')
      logger.warn(ARTIFACT_RELAY_ANOMALOUS, { ...where, reason: 'status' })
      exchange.respondError(statusRefusal(status, upstream), { head })
      return
    }
    const contentType = response.headers['content-type']
    const anomalous = (deps.anomalousType ?? visiblyNotArtifact)(contentType) ? 'content_type' : undefined
    if (anomalous !== undefined) {
      counters.anomalous(anomalous)
      logger.warn(ARTIFACT_RELAY_ANOMALOUS, { ...where, reason: anomalous, ...(contentType === undefined ? {} : { contentType }) })
    }
    if (response.body === null || head) {
      response.body?.destroy()
      answerBodiless(exchange, response)
      counters.relay('public', 'bodiless')
      return
    }
    const outcome = await relayArtifact(exchange, { status, headers: response.headers, body: response.body }, { upstream })
    count('public', outcome)
    logUpstreamFailure('public', name, upstream, outcome)
    if (outcome.kind === 'delivered' && anomalous === undefined) {
      enqueueLater({
        url: selected.tarball,
        package: name,
        version: selected.version,
        filename: selected.filename,
        integrity: selected.integrity,
        shasum: selected.shasum,
        ...selected.mirrorFields,
        enqueuedAt: new Date(clock.now()).toISOString(),
      })
    }
  }

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
    const options: RouteOpenOptions = {
      method: head ? 'HEAD' : 'GET',
      abort,
      ...(ifNoneMatch === undefined && ifModifiedSince === undefined ? {} : {
        conditional: {
          ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
          ...(ifModifiedSince === undefined ? {} : { ifModifiedSince }),
        },
      }),
    }

    if (deps.privateClient !== undefined && await privateLeg(exchange, deps.privateClient, name, file, options)) return
    if (exchange.closed) return
    if (deps.publicClient === undefined) {
      exchange.respondError(NO_SUCH_ARTIFACT(), { head })
      return
    }
    await publicLeg(exchange, deps.publicClient, name, file, options)
  }
}
