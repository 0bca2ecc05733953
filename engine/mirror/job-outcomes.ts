/**
 * What a mirror job ends in (SPEC.md 3.7, 6.2): the outcome the consumer
 * settles the delivery by, and the ones every target reports the same way,
 * with their log lines: a transient failure that is retried, an artifact
 * over `limits.maxArtifactBytes`, and a target that did not answer a lookup
 * or refused it.
 */
import { ServiceError, toServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { MirrorResult } from './mirror-counters.js'

/** What the consumer does with the delivery. */
export type Disposition = 'delete' | 'release' | 'leave'

export interface MirrorOutcome {
  readonly result: MirrorResult
  readonly disposition: Disposition
  /** Why, for the discard log line when the budget is reached. */
  readonly reason?: string
}

/** warn: the job cannot succeed; left for the redrive policy. */
export const MIRROR_JOB_REFUSED = 'mirror job cannot succeed'
/** error: the mirror target refused the publication or the lookup. */
export const MIRROR_PUBLISH_REFUSED = 'mirror publication refused'
/** warn: a transient failure; the job comes back (at once, or after its window). */
export const MIRROR_JOB_RETRIED = 'mirror job failed transiently; retried'

/** The transport facts of a failure worth a log field: status, reason and the transport's own code. */
export function detailOf(error: ServiceError): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['status', 'reason', 'code'] as const) {
    const value = error.data?.[key]
    if (value !== undefined) out[key === 'code' ? 'transport' : key] = value
  }
  return out
}

/**
 * Failures that pass: an upstream or target briefly failing, a document that
 * did not decode (a cut body), and the memory gate of a proxy that embeds the
 * worker shedding or pausing too long.
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_TIMEOUT', 'UPSTREAM_DECODE', 'GATE_SHED', 'GATE_PAUSE_TIMEOUT'])

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
    if (TRANSIENT_CODES.has(failure.code)) return this.retried(where, failure.code, 'leave', failure)
    this.#o.logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'upstream_refused', code: failure.code, ...detailOf(failure) })
    return { result: 'upstream_refused', disposition: 'leave', reason: failure.code }
  }

  /** A lookup at the target failed: unavailable is transient (waits out its window); anything else cannot succeed. */
  targetFailure(where: Record<string, string>, error: unknown, signal: AbortSignal | undefined): MirrorOutcome {
    if (signal?.aborted === true) throw signal.reason
    const failure = toServiceError(error)
    if (failure.code === 'UPSTREAM_UNAVAILABLE') return this.retried(where, 'mirror target unavailable', 'leave', failure)
    this.#o.logger.error(MIRROR_PUBLISH_REFUSED, { ...where, code: failure.code, target: this.#o.targetAuthority, ...detailOf(failure) })
    return { result: 'publish_refused', disposition: 'leave', reason: `the mirror target refused the lookup (${failure.code})` }
  }

  tooLarge(where: Record<string, string>, bytes: number): MirrorOutcome {
    this.#o.logger.warn(MIRROR_JOB_REFUSED, { ...where, result: 'too_large', bytes, limit: this.#o.maxArtifactBytes })
    return { result: 'too_large', disposition: 'leave', reason: `the artifact exceeds ${this.#o.maxArtifactBytes} bytes` }
  }

  retried(where: Record<string, string>, reason: string, disposition: Disposition, error?: ServiceError): MirrorOutcome {
    this.#o.logger.warn(MIRROR_JOB_RETRIED, { ...where, reason, ...(error === undefined ? {} : { code: error.code, ...detailOf(error) }) })
    return { result: 'retried', disposition, reason }
  }
}
