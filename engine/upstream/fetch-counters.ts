/**
 * The counter `service.upstream.fetch.errors` of metadata reads (SPEC.md 6.2
 * "Metadata reads"), by cause. Telemetry reads `snapshot()`; nothing here
 * exports anything itself.
 *
 * Causes: `upstream_status` for an HTTP refusal (any non-success status,
 * 404 and 410 included, 3xx included); `other` for an explicit 401 or 403
 * (SPEC.md keeps them apart); `decode` for a malformed success (corrupt or
 * truncated compression, an unknown content-encoding); `too_large` for a
 * body past the ingest ceiling; `timeout`, `connection` and `egress` for a
 * request that got no HTTP answer.
 */
export const FETCH_ERROR_CAUSES = ['upstream_status', 'decode', 'other', 'too_large', 'timeout', 'connection', 'egress'] as const
export type FetchErrorCause = (typeof FETCH_ERROR_CAUSES)[number]

export class UpstreamFetchCounters {
  readonly #counts = new Map<FetchErrorCause, number>()

  increment(cause: FetchErrorCause, by = 1): void {
    this.#counts.set(cause, (this.#counts.get(cause) ?? 0) + by)
  }

  get(cause: FetchErrorCause): number {
    return this.#counts.get(cause) ?? 0
  }

  /** Every cause with its running total, zeros included; a fresh object each call. */
  snapshot(): Record<FetchErrorCause, number> {
    const out = {} as Record<FetchErrorCause, number>
    for (const cause of FETCH_ERROR_CAUSES) out[cause] = this.#counts.get(cause) ?? 0
    return out
  }
}
