/**
 * `PUT /js/{package}` (SPEC.md 1.4, 2.5, 4.3, 7.1): the publish relay.
 *
 * In order, nothing reaching the publication target until the last step:
 * 1. The route's name is decoded and checked (a bad one is a 404 envelope,
 *    as on every package route) and must be inside the publish scopes
 *    (engine/publish/publish-scope.ts): otherwise 403. These refusals are
 *    answered once the client has sent its body (request-body.ts says why).
 * 2. The body is read under `publish.maxBodyBytes` (413 over it, declared or
 *    counted) and charged to the memory gate while in flight: each chunk as
 *    it arrives (the socket pauses while the gate brakes), then
 *    PARSE_CHARGE_FACTOR times the body before it is parsed, for the text,
 *    the parsed document and one decoded tarball that the check holds.
 * 3. The document is checked (engine/publish/publish-document.ts): 400
 *    malformed or a digest that disagrees, 403 another package's name, 501
 *    no `_attachments` (a metadata change: deprecate, unpublish).
 * 4. An exact unscoped name the operator listed is refused 403 while the
 *    public upstream has it, 503 when the public upstream cannot say
 *    (engine/publish/public-name-check.ts). Owned scopes are not asked.
 * 5. The body, as received, is PUT to `{target}/{package}` keyed on the
 *    route's name with the target's credential; the target's status and
 *    body are relayed.
 * Every charge returns and the target request is aborted however the
 * exchange ends.
 */
import { isServiceError, ServiceError, toServiceError } from '../../engine/errors.js'
import type { PublishConfig } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'
import type { AdmissionGate } from '../../engine/memory/gate.js'
import { REQUEST_TIMEOUT_MS } from '../../engine/memory/gate.js'
import { validatePackageName } from '../../engine/npm/names.js'
import { checkPublishDocument } from '../../engine/publish/publish-document.js'
import { scopeStanding } from '../../engine/publish/publish-scope.js'
import type { PublishTarget } from '../../engine/publish/publish-target.js'
import type { PublishCounters } from '../../engine/publish/publish-counters.js'
import type { Exchange } from '../http/exchange.js'
import { readAdmittedBody, respondAfterBody } from '../http/request-body.js'

/** Charged per body byte before parsing, on top of the bytes held: text, document, one decoded tarball. */
export const PARSE_CHARGE_FACTOR = 3

export const PUBLISH_RELAYED = 'publish relayed'
export const PUBLISH_REFUSED = 'publish refused'

export interface PublishRouteDeps {
  readonly publish: PublishConfig
  readonly target: Pick<PublishTarget, 'publish'>
  /** Does the public upstream have this name? Undefined: no public upstream, nothing to shadow. */
  readonly publicHasName: ((name: string, signal: AbortSignal) => Promise<boolean>) | undefined
  readonly gate: AdmissionGate
  readonly logger: Logger
  readonly counters: PublishCounters
  /** A publish the target took: the package's cached answers are out of date on every replica (docs/cache.md "Invalidation"); never rejects. */
  readonly onPublished?: (name: string) => Promise<void>
}

export function createPublishHandler(deps: PublishRouteDeps): (exchange: Exchange, pkg: string) => void | Promise<void> {
  const { publish, target, gate, logger, counters } = deps
  const tooLarge = new ServiceError('PUBLISH_BODY_TOO_LARGE', { message: `the publish document exceeds ${publish.maxBodyBytes} bytes (publish.maxBodyBytes)` })
  const outside = new ServiceError('PUBLISH_OUTSIDE_SCOPES')

  const refuse = (ex: Exchange, error: ServiceError, name: string | undefined): void => {
    counters.refused(error.code)
    logger.info(PUBLISH_REFUSED, { ...(name === undefined ? {} : { package: name }), code: error.code, status: error.status })
  }

  return (ex, pkg) => {
    // Everything up to readBoundedBody is synchronous: uWS hands the body only to a reader registered here.
    let name: string
    try {
      name = validatePackageName(pkg)
    } catch (error) {
      const failure = toServiceError(error, 'BAD_PACKAGE_NAME')
      refuse(ex, failure, undefined)
      respondAfterBody(ex, failure, { maxBytes: publish.maxBodyBytes })
      return
    }
    const standing = scopeStanding(name, publish.scopes)
    if (standing === 'outside') {
      refuse(ex, outside, name)
      respondAfterBody(ex, outside, { maxBytes: publish.maxBodyBytes })
      return
    }

    const { signal, entered, body, release } = readAdmittedBody(ex, gate, { maxBytes: publish.maxBodyBytes, tooLarge })

    return (async () => {
      let received = false
      try {
        const bytes = await body
        received = true
        const a = await entered
        if (ex.closed) return
        await a.charge(bytes.byteLength * PARSE_CHARGE_FACTOR, { timeoutMs: REQUEST_TIMEOUT_MS, signal })
        const checked = checkPublishDocument(bytes, name)
        if (standing === 'listed-name' && deps.publicHasName !== undefined && await deps.publicHasName(name, signal)) {
          throw new ServiceError('PUBLISH_SHADOWS_PUBLIC')
        }
        if (ex.closed) return
        const answer = await target.publish(name, bytes, signal)
        counters.relayed(answer.status)
        // Before the answer: the publisher's next read, on any replica, sees its version.
        if (answer.status < 300) await deps.onPublished?.(name)
        logger.info(PUBLISH_RELAYED, { package: name, versions: checked.versions, status: answer.status })
        ex.respond(answer.status, { 'content-type': answer.contentType ?? 'application/json' }, answer.body)
      } catch (error) {
        if (ex.closed) return
        const failure = isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })
        refuse(ex, failure, name)
        // A body refused before its end (over the bound, the gate) is still arriving: answer now and close, never read it all.
        ex.respondError(failure, received ? {} : { close: true })
      } finally {
        release()
      }
    })()
  }
}
