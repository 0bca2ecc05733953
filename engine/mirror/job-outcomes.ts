/**
 * What a mirror job ends in (SPEC.md 3.7, 6.2): the outcome the consumer
 * settles the delivery by, and the ones every target reports the same way,
 * with their log lines: a transient failure that is retried, an artifact
 * over `limits.maxArtifactBytes`, and a target that refused every try
 * (`refused`, issue 30 item 4).
 */
import { ServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { MirrorResult } from './mirror-counters.js'

/** What the consumer does with the delivery: acknowledge it, or leave it to its window (the redrive policy's). */
export type Disposition = 'delete' | 'leave'

export interface MirrorOutcome {
  readonly result: MirrorResult
  readonly disposition: Disposition
  /** Why, for the discard log line when the budget is reached. */
  readonly reason?: string
}

/** warn: the job cannot succeed; left for the redrive policy. */
export const MIRROR_JOB_REFUSED = 'mirror job cannot succeed'
/** error: the mirror target refused every try of the job (`refused`): left for the dead-letter queue. */
export const MIRROR_PUBLISH_REFUSED = 'mirror publication refused'
/** warn: the mirror target refused a try; the job tries again after a pause. */
export const MIRROR_PUBLICATION_TRIED_AGAIN = 'mirror publication refused; trying again'
/** warn: a transient failure; the job comes back after its window. */
export const MIRROR_JOB_RETRIED = 'mirror job failed transiently; retried'

/** One refusal of the mirror target: which exchange, its status (or the code of an answer that could not be read) and the target's reason. */
export interface TargetRefusal {
  readonly exchange: 'lookup' | 'publication'
  readonly status: number | undefined
  readonly code: string | undefined
  readonly cause: string | undefined
}

/** The transport facts of a failure worth a log field: status, reason and the transport's own code. */
export function detailOf(error: ServiceError): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['status', 'reason', 'code', 'cause'] as const) {
    const value = error.data?.[key]
    if (value !== undefined) out[key === 'code' ? 'transport' : key] = value
  }
  return out
}

/**
 * Failures that pass: an upstream or target briefly failing, a document that
 * did not decode (a cut body), and the memory gate of a proxy that embeds the
 * worker shedding or pausing too long, and the forward proxy down or slow
 * (a proxy refusing the tunnel, a wrong credential say, is not transient).
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'UPSTREAM_UNAVAILABLE', 'UPSTREAM_TIMEOUT', 'UPSTREAM_DECODE', 'GATE_SHED', 'GATE_PAUSE_TIMEOUT',
  'EGRESS_PROXY_UNREACHABLE', 'EGRESS_PROXY_TIMEOUT',
])

export interface JobOutcomesOptions {
  readonly logger: Logger
  /** `limits.maxArtifactBytes` resolved. */
  readonly maxArtifactBytes: number
  /** The mirror target's host:port, for the log lines. */
  readonly targetAuthority: string
}

export class JobOutcomes {
  readonly #o: JobOutcomesOptions

  constructor(options: JobOutcomesOptions) {
    if (!Number.isSafeInteger(options.maxArtifactBytes) || options.maxArtifactBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxArtifactBytes must be a positive integer' })
    }
    this.#o = options
  }

  /**
   * A job's work threw: the signal's reason when the consumer cancelled it;
   * a transient failure is retried once its window passes; anything else
   * cannot succeed and is left for the redrive policy.
   */
  failed(where: Record<string, string>, error: unknown, signal: AbortSignal | undefined): MirrorOutcome {
    if (signal?.aborted === true) throw signal.reason
    const failure = toServiceError(error)
    if (TRANSIENT_CODES.has(failure.code)) return this.retried(where, failure.code, failure)
    this.#o.logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', code: failure.code, ...detailOf(failure) })
    return { result: 'upstream_refused', disposition: 'leave', reason: failure.code }
  }

  /**
   * The target refused every try (SPEC.md 3.7: the job cannot succeed):
   * one error line naming what it answered the last time and its reason,
   * and the job left to its window for the redrive policy.
   */
  refused(where: Record<string, string>, refusals: readonly TargetRefusal[]): MirrorOutcome {
    const last = refusals[refusals.length - 1]
    const answer = last?.status ?? last?.code
    const answers = [...new Set(refusals.map((r) => r.status ?? r.code))]
    this.#o.logger.error(MIRROR_PUBLISH_REFUSED, {
      ...where, result: 'refused', target: this.#o.targetAuthority, exchange: last?.exchange, status: answer,
      ...(last?.cause === undefined ? {} : { cause: last.cause }), tries: refusals.length,
      ...(answers.length > 1 ? { answers } : {}),
    })
    return { result: 'refused', disposition: 'leave', reason: `the mirror target refused ${refusals.length} tries (${String(answer)}${last?.cause === undefined ? '' : `: ${last.cause}`})` }
  }

  /** A refused try with tries left: a warning, and the job tries again after `waitMs`. */
  triedAgain(where: Record<string, string>, refusal: TargetRefusal, tried: number, tries: number, waitMs: number): void {
    this.#o.logger.warn(MIRROR_PUBLICATION_TRIED_AGAIN, {
      ...where, target: this.#o.targetAuthority, exchange: refusal.exchange, status: refusal.status ?? refusal.code,
      ...(refusal.cause === undefined ? {} : { cause: refusal.cause }), try: tried, tries, retryInMs: waitMs,
    })
  }

  tooLarge(where: Record<string, string>, bytes: number): MirrorOutcome {
    this.#o.logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'too_large', bytes, limit: this.#o.maxArtifactBytes })
    return { result: 'too_large', disposition: 'leave', reason: `the artifact exceeds ${this.#o.maxArtifactBytes} bytes` }
  }

  /** A transient failure outside the target (the public upstream, the memory gate): the job comes back after its window. */
  retried(where: Record<string, string>, reason: string, error?: ServiceError): MirrorOutcome {
    this.#o.logger.warn(MIRROR_JOB_RETRIED, { ...where, reason, ...(error === undefined ? {} : { code: error.code, ...detailOf(error) }) })
    return { result: 'retried', disposition: 'leave', reason }
  }
}
