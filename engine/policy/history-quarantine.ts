/**
 * The quarantine of the history rules that withhold a version only while it
 * is young (DenyIfInstallScriptAdded, DenyIfInstallScriptChanged,
 * DenyIfDependencyAdded): measured from the upstream's publish time; a
 * version without one, or with an unreadable one, is never out of it, as
 * AllowIfOlderThan never admits it either.
 */
import type { VersionFacts } from './decision.js'

/** Whether `facts`' version is still inside a quarantine of `quarantineMs` at `now`. */
export function inQuarantine(facts: VersionFacts, now: number, quarantineMs: number): boolean {
  const published = facts.publishedMs ?? facts.publishedAt?.getTime()
  return published === undefined || !(now - published >= quarantineMs)
}
