/**
 * How long ago Pilot last refreshed each source (issue 31 item 4): the OSV
 * export (a compile that read it and published) and the EPSS feed (a compile
 * that read it: `epss_status=available`), per ecosystem, exported as
 * `service.pilot.refresh.age.seconds{source,ecosystem}`. A malware record
 * reaches the proxies no sooner than the next OSV refresh, so this age is
 * what an operator alarms on (docs/observability.md gives the threshold).
 * Counted from this Pilot's start: nothing is exported for a source it has
 * not refreshed yet (the SPEC.md 6.2 alarm covers an artifact never published).
 */
import type { Clock } from '../../clock.js'
import type { Ecosystem } from '../artifact/database.js'
import type { CompileSummary } from './compile.js'

export type RefreshSource = 'osv' | 'epss'

export class RefreshAges {
  readonly #clock: Clock
  readonly #at: Record<RefreshSource, Partial<Record<Ecosystem, number>>> = { osv: {}, epss: {} }

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** One published compile: the OSV export was read, and the EPSS feed when the compile says it was available. */
  published(summary: CompileSummary): void {
    const at = this.#clock.now()
    this.#at.osv[summary.ecosystem] = at
    if (summary.epssStatus === 'available') this.#at.epss[summary.ecosystem] = at
  }

  /** Seconds since each refresh, by source and ecosystem; absent before the first. */
  ages(): Record<RefreshSource, Partial<Record<Ecosystem, number>>> {
    const now = this.#clock.now()
    const of = (source: RefreshSource): Partial<Record<Ecosystem, number>> =>
      Object.fromEntries(Object.entries(this.#at[source]).map(([ecosystem, at]) => [ecosystem, Math.max(0, Math.floor((now - (at as number)) / 1000))]))
    return { osv: of('osv'), epss: of('epss') }
  }
}
