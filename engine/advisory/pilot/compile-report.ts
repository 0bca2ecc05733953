/**
 * Pilot's report of data ages after each compile (SPEC.md 6.2 "Other logged
 * facts"): one info line with the age of the newest advisory record and of
 * the EPSS score date; for each of them past its quiet time
 * (`advisories.quietTime.<ecosystem>`, `advisories.epssQuietTime`, SPEC.md
 * 2.11, 604800 s by default) the line repeats at error naming the ecosystem,
 * the credential-free source URL, the age in seconds and the threshold in
 * seconds. A compile with `epss_status=unavailable` logs no EPSS age. The
 * alarm only logs; it never refuses a version.
 *
 * SPEC.md does not fix the message text; it is this constant. A date never
 * recorded reads `<unrecorded>` (SPEC.md 2.9) and, having no measurable age,
 * counts as past its quiet time.
 */
import type { Logger } from '../../log/logger.js'
import type { CompileSummary } from './compile.js'
import { UNRECORDED } from '../artifact/database.js'

export const ADVISORY_DATA_AGES = 'advisory data ages'
export { UNRECORDED }

/** Seconds by default for both quiet times (SPEC.md 2.11, 8). */
export const DEFAULT_QUIET_TIME_SECONDS = 604800

export interface CompileAgeThresholds {
  /** Seconds after which the newest advisory record counts as quiet, for this summary's ecosystem. */
  readonly quietTime: number
  /** Seconds after which the EPSS score date counts as quiet. */
  readonly epssQuietTime: number
  /** Milliseconds since the epoch (a Clock reading) or a Date. */
  readonly now: number | Date
}

type CompileAgeSummary = Pick<CompileSummary,
  'ecosystem' | 'osvSourceUrl' | 'newestAdvisoryAt' | 'epssStatus' | 'epssScoreDate' | 'epssSourceUrl'>

function ageSeconds(date: Date | undefined, now: number): number | undefined {
  return date === undefined ? undefined : Math.floor((now - date.getTime()) / 1000)
}

export function reportCompileAges(summary: CompileAgeSummary, thresholds: CompileAgeThresholds, logger: Logger): void {
  const now = typeof thresholds.now === 'number' ? thresholds.now : thresholds.now.getTime()
  const advisoryAge = ageSeconds(summary.newestAdvisoryAt, now)
  const withEpss = summary.epssStatus === 'available'
  const epssAge = withEpss ? ageSeconds(summary.epssScoreDate, now) : undefined

  const info: Record<string, unknown> = {
    ecosystem: summary.ecosystem,
    sourceUrl: summary.osvSourceUrl,
    newestAdvisoryAt: summary.newestAdvisoryAt?.toISOString() ?? UNRECORDED,
    newestAdvisoryAgeSeconds: advisoryAge ?? UNRECORDED,
    quietTimeSeconds: thresholds.quietTime,
  }
  if (withEpss) {
    info.epssScoreDate = summary.epssScoreDate?.toISOString() ?? UNRECORDED
    info.epssAgeSeconds = epssAge ?? UNRECORDED
    info.epssQuietTimeSeconds = thresholds.epssQuietTime
  }
  logger.info(ADVISORY_DATA_AGES, info)

  if (advisoryAge === undefined || advisoryAge > thresholds.quietTime) {
    logger.error(ADVISORY_DATA_AGES, {
      ecosystem: summary.ecosystem,
      source: 'osv',
      sourceUrl: summary.osvSourceUrl,
      ageSeconds: advisoryAge ?? UNRECORDED,
      thresholdSeconds: thresholds.quietTime,
    })
  }
  if (withEpss && (epssAge === undefined || epssAge > thresholds.epssQuietTime)) {
    logger.error(ADVISORY_DATA_AGES, {
      ecosystem: summary.ecosystem,
      source: 'epss',
      sourceUrl: summary.epssSourceUrl ?? UNRECORDED,
      ageSeconds: epssAge ?? UNRECORDED,
      thresholdSeconds: thresholds.epssQuietTime,
    })
  }
}
