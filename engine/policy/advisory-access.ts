/**
 * Whether the advisory rules may read the database right now (SPEC.md 3.3,
 * 3.5): before the first sync there is none (the absent-database case,
 * following `onUnavailable`); a push at or past the mount's maximum age, or
 * one with no publication time, is expired, which `onUnavailable: skip` does
 * not waive and an open breaker does not skip past.
 */
import type { AdvisoryDatabase } from '../advisory/artifact/database.js'
import type { AdvisoryAccess } from './rule.js'

export interface AdvisoryAccessInput {
  readonly database: AdvisoryDatabase | undefined
  readonly now: number
  readonly maxAgeSeconds: number
  readonly breakerOpen: boolean
}

/** Whole seconds since the push; a push stamped in the future counts as age zero. */
export function pushAgeSeconds(publishedAt: Date, now: number): number {
  return Math.max(0, Math.floor((now - publishedAt.getTime()) / 1000))
}

export function advisoryAccess(input: AdvisoryAccessInput): AdvisoryAccess {
  const { database, now, maxAgeSeconds } = input
  if (database === undefined) {
    return { state: 'unavailable', cause: 'no_database', detail: 'no advisory database is loaded' }
  }
  const publishedAt = database.publishedAt
  if (publishedAt === undefined || Number.isNaN(publishedAt.getTime())) {
    return { state: 'expired', detail: 'the advisory push has no publication time', ageSeconds: undefined, maxAgeSeconds }
  }
  if (now - publishedAt.getTime() >= maxAgeSeconds * 1000) {
    const ageSeconds = pushAgeSeconds(publishedAt, now)
    return { state: 'expired', detail: `the advisory push is ${ageSeconds} s old, the maximum is ${maxAgeSeconds} s`, ageSeconds, maxAgeSeconds }
  }
  if (input.breakerOpen) {
    return { state: 'unavailable', cause: 'breaker_open', detail: 'the advisory circuit breaker is open' }
  }
  return { state: 'ready', database }
}
