/**
 * `GET /js/{package}` on the front door (SPEC.md 4.1, 4.2): validate the name
 * (a bad one is a 404 envelope, never an upstream request), take the memory
 * gate's entry step, assemble, and answer the full or abbreviated form with
 * the document's own strong ETag (a matching `If-None-Match` is a 304), in
 * the content coding `Accept-Encoding` asks for (br or gzip; each coding has
 * its own ETag; `Vary: Accept, Accept-Encoding`).
 * However the exchange ends, the upstream work is aborted and every charge
 * returns.
 */
import type { AssembledResponse } from '../../engine/cache/metadata-cache.js'
import { isServiceError, ServiceError, toServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { Admission, AdmissionGate } from '../../engine/memory/gate.js'
import { NPM_COMMAND_HEADER, packumentViewOf } from '../../engine/npm/npm-command.js'
import { NPM_NOTICE_HEADER } from '../../engine/packument/withheld-notice.js'
import { validatePackageName } from '../../engine/npm/names.js'
import { ABBREVIATED_MEDIA_TYPE } from '../../engine/packument/abbreviated-fields.js'
import { negotiateCoding } from '../../engine/packument/content-coding.js'
import type { PackumentService } from '../../engine/packument/packument-service.js'
import { inChildSpan } from '../../engine/telemetry/work-span.js'
import type { Exchange } from '../http/exchange.js'
import type { RequestOrigin } from '../http/request-origin.js'

export interface PackumentRouteDeps {
  readonly service: PackumentService
  readonly gate: AdmissionGate
  readonly logger: Logger
  /** The base URL of the answer's artifact URLs (server/http/request-origin.ts); absent: the configured one. */
  readonly origin?: RequestOrigin
}

export const PACKUMENT_REQUEST_FAILED = 'packument request failed'

/** RFC 9110 13.1.2: weak comparison; `*` matches any current representation. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const bare = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((candidate) => {
    const c = candidate.trim()
    return c === '*' || c.replace(/^W\//, '') === bare
  })
}

export function createPackumentHandler(deps: PackumentRouteDeps): (exchange: Exchange, pkg: string) => Promise<void> {
  const { service, gate, logger } = deps
  return async (ex, pkg) => {
    const head = ex.method === 'HEAD'
    let packageName: string
    let baseUrl: string | undefined
    try {
      packageName = validatePackageName(pkg)
      // Read now, while uWS still holds the request (STYLE.md rule 1).
      baseUrl = requestBaseUrl(deps.origin, ex)
    } catch (error) {
      ex.respondError(toServiceError(error, 'BAD_PACKAGE_NAME'), { head })
      return
    }
    const abbreviated = (ex.header('accept') ?? '').includes(ABBREVIATED_MEDIA_TYPE)
    const npmCommand = ex.header(NPM_COMMAND_HEADER)
    const view = packumentViewOf(npmCommand)
    const coding = negotiateCoding(ex.header('accept-encoding'))
    await serveListing(ex, gate, {
      assemble: (admission, signal) => service.assemble({ packageName, abbreviated, coding, baseUrl, view, admission, signal }),
      headers: (assembled) => ({
        etag: assembled.etag,
        // npm's audit is answered another document (the audit view), and npm alone gets the notice: a shared cache must not serve one for the other.
        vary: `Accept, Accept-Encoding, ${NPM_COMMAND_HEADER}`,
        'cache-control': noticeFor(assembled, npmCommand) === undefined ? 'no-cache' : 'no-store',
        ...(assembled.coding === undefined ? {} : { 'content-encoding': assembled.coding }),
      }),
      bodyHeaders: (assembled): Record<string, string> => {
        const notice = noticeFor(assembled, npmCommand)
        return notice === undefined ? {} : { [NPM_NOTICE_HEADER]: notice }
      },
      contentType: abbreviated ? ABBREVIATED_MEDIA_TYPE : 'application/json',
      failed: (failure) => logger.warn(PACKUMENT_REQUEST_FAILED, { package: packageName, code: failure.code, status: failure.status }),
    })
  }
}

/**
 * The `npm-notice` line an answer carries to npm (engine/packument/withheld-notice.ts),
 * or undefined: to npm only (the request names its command; pnpm and yarn
 * send none and print nothing of it), and only for an answer from which
 * versions were withheld. Such an answer is `no-store`: npm prints a notice
 * only from the network, never from its cache (docs/npm.md "Withheld
 * versions and npm notice").
 */
function noticeFor(assembled: AssembledResponse, npmCommand: string | undefined): string | undefined {
  // The audit view lists the withheld versions itself (render-variant.ts): nothing there is missing.
  return npmCommand === undefined || packumentViewOf(npmCommand) === 'audit' ? undefined : assembled.notice
}

/** The request's own base URL when artifact URLs follow it, else undefined (the configured one); throws HOST_NOT_ALLOWED. */
export function requestBaseUrl(origin: RequestOrigin | undefined, ex: Exchange): string | undefined {
  return origin === undefined || origin.fixed ? undefined : origin.baseUrlOf(ex)
}

export interface ListingAnswer {
  assemble(admission: Admission, signal: AbortSignal): Promise<AssembledResponse>
  /** The answer's headers but its type, also sent on a 304. */
  headers(assembled: AssembledResponse): Record<string, string>
  /** Headers of a 200 alone, never of a 304 (a notice a client would print again for its cached copy). */
  bodyHeaders?(assembled: AssembledResponse): Record<string, string>
  readonly contentType: string
  /** A 5xx other than a shed, for the route's warn line. */
  failed(failure: ServiceError): void
}

/**
 * Answers a listing (a packument, a project page): take the gate's entry
 * step, assemble, 304 on a matching `If-None-Match`, else 200 with the body.
 * However the exchange ends, the upstream work is aborted and every charge
 * returns; the charge is held until uWS has taken the last byte.
 */
export async function serveListing(ex: Exchange, gate: AdmissionGate, answer: ListingAnswer): Promise<void> {
  const head = ex.method === 'HEAD'
  const controller = new AbortController()
  let admission: Admission | undefined
  ex.onClose(() => {
    controller.abort()
    admission?.release()
  })
  try {
    admission = await inChildSpan('gate enter', {}, () => gate.enter(controller.signal))
    if (ex.closed) return
    const assembled = await answer.assemble(admission, controller.signal)
    const headers = answer.headers(assembled)
    if (etagMatches(ex.header('if-none-match'), assembled.etag)) {
      ex.respond(304, headers, undefined, { head: true })
      return
    }
    await ex.respondBuffered(200, { ...headers, ...answer.bodyHeaders?.(assembled), 'content-type': answer.contentType }, assembled.body, { head })
  } catch (error) {
    if (ex.closed) return
    const failure = isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })
    if (failure.status >= 500 && failure.code !== 'GATE_SHED') answer.failed(failure)
    ex.respondError(failure, { head })
  } finally {
    admission?.release()
  }
}
