/**
 * `POST /js/-/npm/v1/security/advisories/bulk` (issue 17 item 3): `npm
 * audit` and `npm audit fix` answered from the mount's serving advisory
 * database (engine/npm/bulk-advisory.ts). The request names the client's
 * whole dependency tree, private packages included: it is read here and
 * never sent to any upstream.
 *
 * In order:
 * 1. The gate's entry step, then the body read under AUDIT_MAX_BODY_BYTES
 *    as received (413 over it, declared or counted, once the rest has been
 *    read and dropped up to AUDIT_DRAIN_BYTES), each chunk charged to the
 *    memory gate as it arrives (request-body.ts).
 * 2. Its `Content-Encoding` (npm sends gzip) undone under
 *    AUDIT_MAX_DECODED_BYTES (413 past it: a gzip bomb stops there), and
 *    AUDIT_PARSE_CHARGE_FACTOR times the decoded size charged before it is
 *    parsed: the text, the parsed request and the answer.
 * 3. 400 for anything but `{name: [version, ...]}`.
 * 4. No database loaded: 503 with Retry-After (the advisories are unknown,
 *    not absent, so "no vulnerabilities" would be a lie); a database past
 *    its maximum age: 503 as for the advisory rules (SPEC.md 3.5).
 * 5. 200 with the bulk answer; a private name answers nothing.
 *
 * The legacy endpoints (`/-/npm/v1/security/audits`, `.../audits/quick`,
 * npm 6) answer 501 with an envelope telling the user to upgrade npm.
 */
import { advisoryExpired, isServiceError, ServiceError } from '../../engine/errors.js'
import { DEFAULT_PUBLISH_MAX_BODY_BYTES } from '../../engine/config/schema.js'
import type { AdvisoryDatabase } from '../../engine/advisory/artifact/database.js'
import type { Clock } from '../../engine/clock.js'
import type { Logger } from '../../engine/log/logger.js'
import type { AdmissionGate } from '../../engine/memory/gate.js'
import { REQUEST_TIMEOUT_MS } from '../../engine/memory/gate.js'
import { bulkAdvisories, parseBulkAdvisoryRequest } from '../../engine/npm/bulk-advisory.js'
import type { Exchange } from '../http/exchange.js'
import { decodeRequestBody } from '../http/decoded-request-body.js'
import { readAdmittedBody, respondAfterBody } from '../http/request-body.js'

const MiB = 1024 * 1024
/** The audit request as received (gzip from npm): a tree of 10,000 packages is well under 1 MiB. */
export const AUDIT_MAX_BODY_BYTES = 4 * MiB
/**
 * A body over AUDIT_MAX_BODY_BYTES is read and dropped up to this many bytes
 * before its 413 (npm reads no answer before its upload ends: cut off, it
 * reports EPIPE); past it the 413 goes at once and the connection closes.
 * The bound every refused write under the mount is read to by default.
 */
export const AUDIT_DRAIN_BYTES = DEFAULT_PUBLISH_MAX_BODY_BYTES
/** The audit request once its coding is undone. */
export const AUDIT_MAX_DECODED_BYTES = 32 * MiB
/** Names looked up between two yields to the event loop (a few milliseconds of work at most). */
export const AUDIT_NAMES_PER_SLICE = 256
/** Charged per decoded byte before parsing: the text, the parsed request, the answer. */
export const AUDIT_PARSE_CHARGE_FACTOR = 3

/** debug: one line per answered audit (counts only: never the names, which are the client's tree). */
export const AUDIT_ANSWERED = 'audit answered'

export interface AuditRouteDeps {
  /** The mount's serving advisory database, undefined while none is loaded. */
  readonly database: () => AdvisoryDatabase | undefined
  /** The mount's advisory maximum age (SPEC.md 3.5, 8). */
  readonly maxAgeSeconds: number
  /** True for a first-party name: it answers nothing. */
  readonly isPrivate: (name: string) => boolean
  readonly gate: AdmissionGate
  readonly clock: Clock
  readonly logger: Logger
}

const tooLarge = (what: string, bytes: number): ServiceError => new ServiceError('AUDIT_BODY_TOO_LARGE', {
  message: `the audit request exceeds ${bytes} bytes ${what}`,
})

export function createBulkAuditHandler(deps: AuditRouteDeps): (exchange: Exchange) => void | Promise<void> {
  const { gate, logger } = deps
  const bodyTooLarge = tooLarge('as sent', AUDIT_MAX_BODY_BYTES)
  const decodedTooLarge = tooLarge('once decoded', AUDIT_MAX_DECODED_BYTES)

  return (ex) => {
    // Everything up to readAdmittedBody is synchronous: uWS hands the body only to a reader registered here.
    const { signal, entered, body, ended, release } = readAdmittedBody(ex, gate, { maxBytes: AUDIT_MAX_BODY_BYTES, tooLarge: bodyTooLarge, drainBytes: AUDIT_DRAIN_BYTES })

    return (async () => {
      let received = false
      try {
        const bytes = await body
        received = true
        const a = await entered
        if (ex.closed) return
        const decoded = decodeRequestBody(bytes, ex.header('content-encoding'), {
          maxDecodedBytes: AUDIT_MAX_DECODED_BYTES,
          tooLarge: decodedTooLarge,
          malformed: (reason) => new ServiceError('AUDIT_REQUEST_INVALID', { data: { reason } }),
        })
        await a.charge(decoded.byteLength * AUDIT_PARSE_CHARGE_FACTOR, { timeoutMs: REQUEST_TIMEOUT_MS, signal })
        const request = parseBulkAdvisoryRequest(decoded)
        const database = deps.database()
        if (database === undefined) {
          throw new ServiceError('ADVISORY_UNAVAILABLE', { message: 'no advisory database is loaded yet, so no audit can be answered; retry once Pilot has published one' })
        }
        const published = database.publishedAt?.getTime()
        const age = published === undefined ? undefined : (deps.clock.now() - published) / 1000
        if (age === undefined || age >= deps.maxAgeSeconds) throw advisoryExpired(age, deps.maxAgeSeconds)
        // The lookups run on the main thread: a slice at a time, so other requests go on between slices.
        const answer = Object.create(null) as ReturnType<typeof bulkAdvisories>
        const names = [...request]
        for (let i = 0; i < names.length; i += AUDIT_NAMES_PER_SLICE) {
          if (i > 0) await new Promise((resolve) => setImmediate(resolve))
          if (ex.closed) return
          Object.assign(answer, bulkAdvisories(database, new Map(names.slice(i, i + AUDIT_NAMES_PER_SLICE)), deps.isPrivate))
        }
        logger.debug(AUDIT_ANSWERED, { names: request.size, vulnerable: Object.keys(answer).length })
        ex.respondJson(200, answer)
      } catch (error) {
        if (ex.closed) return
        const failure = isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })
        // A body refused before its end (past the drain bound, the gate) is still arriving: answer now and close, never read it all.
        ex.respondError(failure, received || ended() ? {} : { close: true })
      } finally {
        release()
      }
    })()
  }
}

/** The npm 6 endpoints: a clear 501, answered once the body is read and dropped (so npm prints it). */
export function respondLegacyAudit(exchange: Exchange): void {
  respondAfterBody(exchange, new ServiceError('AUDIT_LEGACY_ENDPOINT'), { maxBytes: AUDIT_MAX_BODY_BYTES })
}
