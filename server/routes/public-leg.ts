/**
 * The artifact route's public leg (SPEC.md 4.4, 5.3, 6.1): gated and
 * anonymous. In order: the selected version (the selected-version store,
 * else the public listing), the admission gate, the integrity floor, then
 * the authoritative upstream location (`dist.tarball` exactly as upstream
 * gave it; the public client enforces https, the allowlist, the
 * internal-range block and the tarball-host policy). The relay is judged on
 * status and headers only; a clean GET relay enqueues one mirror job after
 * the last byte is handed over, best effort.
 *
 * Decisions where SPEC.md is silent:
 * - The gate runs before the integrity floor, so every public decision is
 *   observed by the outage tracker; both refusals are 403.
 * - A public 304 to a conditional request relays bodiless and enqueues
 *   nothing: no bytes were relayed.
 */
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import { systemClock, type Clock } from '../../engine/clock.js'
import { ServiceError, toServiceError } from '../../engine/errors.js'
import { checkIntegrityFloor, type IntegrityAlgorithm } from '../../engine/mirror/integrity-floor.js'
import { checkMirrorJob, type MirrorJob } from '../../engine/mirror/mirror-job.js'
import type { Decision, HistoryFacts, VersionFacts } from '../../engine/policy/decision.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { ArtifactResponse } from '../../engine/upstream/http1/artifact-response.js'
import { authorityOf } from '../../engine/upstream/egress-guard.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { Exchange } from '../http/exchange.js'
import { forwardProxyDetail } from '../../engine/upstream/forward-proxy.js'
import {
  answerBodiless, ARTIFACT_UPSTREAM_FAILED, isArtifactAnswer, noSuchArtifact, refusalOf, relayToClient, statusRefusal,
  type ArtifactReporting, type RouteOpenOptions,
} from './artifact-answers.js'

/** warn: a passed-through non-success, or a success visibly not an artifact (SPEC.md 4.4 public leg 6). */
export const ARTIFACT_RELAY_ANOMALOUS = 'artifact relay anomalous'
/** warn: the mirror job could not be enqueued; the response was not affected (SPEC.md 4.4 public leg 5). */
export const MIRROR_ENQUEUE_FAILED = 'mirror job enqueue failed'
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

export interface PublicLegDeps extends ArtifactReporting {
  ecosystem: Ecosystem
  /** Selected-version lookup: the store first, else a public listing fetch. undefined = the public upstream has no such version/file (404). May throw ServiceError (503 etc). */
  selectVersion(packageName: string, filename: string, signal: AbortSignal): Promise<SelectedArtifact | undefined>
  /** The mount's admission-phase gate (main thread). */
  evaluate(facts: VersionFacts): Decision
  /** The mount's rules in force (a reload swaps them), for refusals that explain themselves; without it a deny says only 'withheld by policy'. */
  rules?: () => readonly RuleConfig[]
  /** Feeds the advisory outage tracker and the skipped-check record (SPEC.md 3.3, 6.2); call it for every public decision. */
  observe(facts: VersionFacts, decision: Decision): void
  integrityFloor: IntegrityAlgorithm
  /** Best effort, never awaited on the response path; undefined when this route's relays are never mirrored (no mirror target, a `.metadata` or provenance file). */
  enqueue: ((job: MirrorJob) => Promise<void>) | undefined
  /** Stamps `enqueuedAt`; the system clock when absent. */
  clock?: Clock
  /** Media types that say a public success is not what was asked for (warned and counted, never mirrored). Default: text, JSON and XML. */
  anomalousType?(contentType: string | undefined): boolean
  /** When set, such a success is refused with the error it returns rather than relayed (the py `.metadata` relay). */
  anomalousRefusal?(contentType: string | undefined, upstream: string): ServiceError
}

/** Media types that say a success is not an artifact (an error page, a JSON document). */
export function visiblyNotArtifact(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  return type.startsWith('text/') || type === 'application/json' || type === 'application/xml'
    || type === 'application/javascript' || type.endsWith('+json') || type.endsWith('+xml')
}

function refuse(deps: PublicLegDeps, exchange: Exchange, error: ServiceError, name: string, version: string | undefined): void {
  deps.counters.relay('public', 'refused')
  deps.logger.debug(ARTIFACT_REFUSED, { package: name, ...(version === undefined ? {} : { version }), code: error.code })
  exchange.respondError(error, { head: exchange.method === 'HEAD' })
}

/** Serve-then-enqueue: never awaited by the response, and nothing it throws reaches it. */
function enqueueLater(deps: PublicLegDeps, job: MirrorJob): void {
  const { enqueue, counters, logger } = deps
  // Nothing to mirror: no job is made, so none can fail (and warn) on the way.
  if (enqueue === undefined) return
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

/** The selected version of the file, gated and past the integrity floor, with its upstream URL; undefined when the leg has answered. */
async function admittedArtifact(deps: PublicLegDeps, exchange: Exchange, name: string, file: string, options: RouteOpenOptions): Promise<{ selected: SelectedArtifact, url: URL } | undefined> {
  const head = exchange.method === 'HEAD'
  let selected: SelectedArtifact | undefined
  try {
    selected = await deps.selectVersion(name, file, options.abort.signal)
  } catch (error) {
    if (exchange.closed) return undefined
    deps.counters.relay('public', 'failed')
    exchange.respondError(toServiceError(error), { head })
    return undefined
  }
  if (exchange.closed) return undefined
  if (selected === undefined) {
    deps.counters.relay('public', 'miss')
    exchange.respondError(noSuchArtifact(), { head })
    return undefined
  }

  const facts: VersionFacts = { ...selected.history, ecosystem: deps.ecosystem, name, version: selected.version, publishedAt: selected.publishedAt }
  const decision = deps.evaluate(facts)
  deps.observe(facts, decision)
  const refusal = refusalOf(decision, deps.rules === undefined ? undefined : explainRefusal(decision, facts, deps.rules(), (deps.clock ?? systemClock).now()))
  if (refusal !== undefined) {
    refuse(deps, exchange, refusal, name, selected.version)
    return undefined
  }
  try {
    checkIntegrityFloor(selected.integrity, selected.shasum, deps.integrityFloor)
  } catch (error) {
    refuse(deps, exchange, toServiceError(error), name, selected.version)
    return undefined
  }
  try {
    return { selected, url: new URL(selected.tarball) }
  } catch {
    refuse(deps, exchange, new ServiceError('TARBALL_HOST_REFUSED', { data: { reason: 'not a URL' } }), name, selected.version)
    return undefined
  }
}

export async function publicLeg(deps: PublicLegDeps, exchange: Exchange, client: UpstreamClient, name: string, file: string, options: RouteOpenOptions): Promise<void> {
  const admitted = await admittedArtifact(deps, exchange, name, file, options)
  if (admitted === undefined) return
  const { selected, url } = admitted
  const upstream = authorityOf(url)
  let response: ArtifactResponse
  try {
    // Anonymous: no bearer is passed, and the public client never builds one (SPEC.md 5.3).
    response = await client.openArtifact(url, options)
  } catch (error) {
    if (exchange.closed) return
    const failure = toServiceError(error)
    if (failure.status === 403) {
      refuse(deps, exchange, failure, name, selected.version)
      return
    }
    deps.counters.relay('public', 'failed')
    deps.logger.error(ARTIFACT_UPSTREAM_FAILED, { leg: 'public', package: name, version: selected.version, upstream, code: failure.code, afterFirstByte: false, ...forwardProxyDetail(failure) })
    exchange.respondError(failure, { head: exchange.method === 'HEAD' })
    return
  }
  if (exchange.closed) {
    response.body?.destroy()
    return
  }
  await answerPublic(deps, exchange, response, selected, name, upstream, options)
}

/** Judges the public upstream's answer on its status and headers alone, and relays it (SPEC.md 4.4 public leg 4-6). */
async function answerPublic(deps: PublicLegDeps, exchange: Exchange, response: ArtifactResponse, selected: SelectedArtifact, name: string, upstream: string, options: RouteOpenOptions): Promise<void> {
  const { counters, logger } = deps
  const head = exchange.method === 'HEAD'
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
    if (deps.anomalousRefusal !== undefined) {
      response.body?.destroy()
      counters.relay('public', 'miss')
      exchange.respondError(deps.anomalousRefusal(contentType, upstream), { head })
      return
    }
  }
  if (response.body === null || head) {
    response.body?.destroy()
    answerBodiless(exchange, response)
    counters.relay('public', 'bodiless')
    return
  }
  const outcome = await relayToClient(deps, exchange, 'public', name, upstream, response, response.body)
  if (outcome.kind === 'delivered' && anomalous === undefined) {
    enqueueLater(deps, {
      url: selected.tarball,
      package: name,
      version: selected.version,
      filename: selected.filename,
      integrity: selected.integrity,
      shasum: selected.shasum,
      ...selected.mirrorFields,
      enqueuedAt: new Date((deps.clock ?? systemClock).now()).toISOString(),
    })
  }
}
