/**
 * What a retained listing answer is worth at `now`, read from its
 * freshness record (metadata-cache.ts `Freshness`), one rule for the js
 * packument service and the py project service:
 * - `reload`: its re-gate instant has come (engine/listing/regate-at.ts: a
 *   quarantine ended, a waiver or the advisory push expired), or it is past
 *   its freshness and cannot be revalidated: rendered again from full reads;
 * - `fresh`: served as is (an answer without a freshness record is left to
 *   its store's time to live);
 * - `stale`: past its freshness but within `maxStaleMs`: served while one
 *   revalidation runs behind it;
 * - `revalidate`: a request waits for a revalidation.
 */
import type { AssembledResponse } from './metadata-cache.js'

export type AnswerState = 'fresh' | 'stale' | 'revalidate' | 'reload'

/** `maxStaleMs` undefined: the service does not serve stale answers (no revalidation behind them). */
export function answerState(held: AssembledResponse, now: number, maxStaleMs: number | undefined): AnswerState {
  const freshness = held.freshness
  if (freshness === undefined) return 'fresh'
  if (freshness.regateAt !== undefined && now >= freshness.regateAt) return 'reload'
  if (now < freshness.freshUntil) return 'fresh'
  if (freshness.sources === undefined) return 'reload'
  if (maxStaleMs !== undefined && now < freshness.freshUntil + maxStaleMs) return 'stale'
  return 'revalidate'
}
