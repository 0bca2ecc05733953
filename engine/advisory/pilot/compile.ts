/**
 * Pilot's compile of one ecosystem (SPEC.md 1.6, 2.9): fetch the OSV export
 * `{osvExportBaseUrl}/{npm|PyPI}/all.zip`, fetch the EPSS feed, and compile
 * one binary artifact (artifact-format.ts) with its provenance metadata.
 *
 * An EPSS outage does not fail the compile: the artifact is written with
 * `epss_status=unavailable` and no EPSS values (SPEC.md 2.9, 3.1). An OSV
 * failure does fail it: there is nothing to publish.
 *
 * Fetches are plain undici requests; the caller supplies a dispatcher (for a
 * CA, an egress policy or a proxy) when it needs one.
 */
import type { Dispatcher } from 'undici'
import type { Clock } from '../../clock.js'
import { toServiceError } from '../../errors.js'
import type { Logger } from '../../log/logger.js'
import { OSV_ECOSYSTEM, type AdvisoryMetadata, type Ecosystem } from '../artifact/database.js'
import { ArtifactBuilder } from './artifact-writer.js'
import { fetchEpssFeed, type EpssFeed } from './epss-feed.js'
import { downloadArchive, readArchiveRecords } from './osv-archive.js'
import { credentialFreeUrl, osvExportUrl, sourceHostPort } from './source-url.js'

/** info: one line per finished compile. */
export const ADVISORY_COMPILED = 'advisory database compiled'
/** warn: the EPSS feed could not be used; the artifact is written with epss_status=unavailable. */
export const EPSS_FEED_UNAVAILABLE = 'epss feed unavailable; compiled without EPSS scores'

/** Store object metadata keys (SPEC.md 2.9); `epss_status` is the marker readiness reads (SPEC.md 3.1). */
export const METADATA_KEYS = Object.freeze({
  ecosystem: 'ecosystem',
  osvSource: 'osv_source',
  osvSourceUrl: 'osv_source_url',
  compiledAt: 'compiled_at',
  newestAdvisoryAt: 'newest_advisory_at',
  epssScoreDate: 'epss_score_date',
  epssStatus: 'epss_status',
  rowCount: 'row_count',
})

export interface CompileEcosystemOptions {
  readonly ecosystem: Ecosystem
  readonly osvExportBaseUrl: string | URL
  /** undefined: no feed configured; compiled as an EPSS outage. */
  readonly epssFeedUrl: string | URL | undefined
  readonly dispatcher?: Dispatcher
  /** Folder for the downloaded archive; a subfolder is made and removed. */
  readonly tmpDir: string
  readonly clock: Clock
  readonly logger: Logger
}

export interface CompileSummary {
  readonly ecosystem: Ecosystem
  readonly osvSource: string
  readonly osvSourceUrl: string
  readonly compiledAt: Date
  readonly newestAdvisoryAt: Date | undefined
  readonly epssStatus: 'available' | 'unavailable'
  readonly epssScoreDate: Date | undefined
  readonly rowCount: number
  readonly packages: number
  readonly recordsSeen: number
  readonly withdrawn: number
  readonly unparseableRanges: number
  readonly archiveBytes: number
  readonly artifactBytes: number
  /** Rows of the EPSS feed read; 0 when unavailable. */
  readonly epssRows: number
  /** The EPSS feed URL without userinfo, query and fragment; undefined when none is configured. */
  readonly epssSourceUrl: string | undefined
}

export interface CompiledEcosystem {
  readonly bytes: Uint8Array
  /** Object metadata for the store (METADATA_KEYS); unrecorded values are left out. */
  readonly metadata: Record<string, string>
  readonly summary: CompileSummary
}

/** The store object metadata for an artifact's recorded metadata. */
export function artifactObjectMetadata(m: AdvisoryMetadata): Record<string, string> {
  const out: Record<string, string> = {
    [METADATA_KEYS.ecosystem]: m.ecosystem,
    [METADATA_KEYS.osvSource]: m.osvSource,
    [METADATA_KEYS.osvSourceUrl]: m.osvSourceUrl,
    [METADATA_KEYS.compiledAt]: m.compiledAt.toISOString(),
    [METADATA_KEYS.rowCount]: String(m.rowCount),
  }
  if (m.newestAdvisoryAt !== undefined) out[METADATA_KEYS.newestAdvisoryAt] = m.newestAdvisoryAt.toISOString()
  if (m.epssScoreDate !== undefined) out[METADATA_KEYS.epssScoreDate] = m.epssScoreDate.toISOString()
  if (m.epssStatus !== undefined) out[METADATA_KEYS.epssStatus] = m.epssStatus
  return out
}

export async function compileEcosystem(options: CompileEcosystemOptions): Promise<CompiledEcosystem> {
  const { ecosystem, logger } = options
  const url = osvExportUrl(options.osvExportBaseUrl, OSV_ECOSYSTEM[ecosystem])
  const osvSource = sourceHostPort(url)
  const osvSourceUrl = credentialFreeUrl(url)

  const builder = new ArtifactBuilder(ecosystem)
  const archive = await downloadArchive(url, options.tmpDir, options.dispatcher)
  try {
    for await (const record of readArchiveRecords(archive.path)) builder.add(record)
  } finally {
    await archive.dispose()
  }

  let feed: EpssFeed | undefined
  let epssSourceUrl: string | undefined
  if (options.epssFeedUrl === undefined) {
    logger.warn(EPSS_FEED_UNAVAILABLE, { ecosystem, reason: 'no EPSS feed is configured' })
  } else {
    const epssUrl = new URL(typeof options.epssFeedUrl === 'string' ? options.epssFeedUrl : options.epssFeedUrl.href)
    epssSourceUrl = credentialFreeUrl(epssUrl)
    try {
      feed = await fetchEpssFeed(epssUrl, { dispatcher: options.dispatcher, wanted: builder.cves() })
    } catch (err) {
      const e = toServiceError(err, 'UPSTREAM_UNAVAILABLE')
      const cause = e.cause instanceof Error ? e.cause.message : undefined
      logger.warn(EPSS_FEED_UNAVAILABLE, { ecosystem, source: epssSourceUrl, code: e.code, reason: e.message, ...(cause === undefined ? {} : { cause }) })
    }
  }

  const compiledAt = new Date(options.clock.now())
  const epssStatus = feed === undefined ? 'unavailable' : 'available'
  const bytes = builder.build({
    compiledAt, osvSource, osvSourceUrl, epss: feed?.scores, epssStatus, epssScoreDate: feed?.scoreDate,
  })
  const stats = builder.stats()
  const summary: CompileSummary = {
    ecosystem, osvSource, osvSourceUrl, compiledAt,
    newestAdvisoryAt: stats.newestAdvisoryAt,
    epssStatus,
    epssScoreDate: feed?.scoreDate,
    rowCount: stats.advisories,
    packages: stats.packages,
    recordsSeen: stats.recordsSeen,
    withdrawn: stats.withdrawn,
    unparseableRanges: stats.unparseableRanges,
    archiveBytes: archive.bytes,
    artifactBytes: bytes.byteLength,
    epssRows: feed?.rows ?? 0,
    epssSourceUrl,
  }
  const metadata = artifactObjectMetadata({
    ecosystem, osvSource, osvSourceUrl, compiledAt, newestAdvisoryAt: summary.newestAdvisoryAt,
    epssScoreDate: summary.epssScoreDate, epssStatus, rowCount: summary.rowCount,
  })
  logger.info(ADVISORY_COMPILED, {
    ecosystem, source: osvSource, sourceUrl: osvSourceUrl, rowCount: summary.rowCount, packages: summary.packages,
    withdrawn: summary.withdrawn, unparseableRanges: summary.unparseableRanges, epssStatus,
    artifactBytes: summary.artifactBytes,
  })
  return { bytes, metadata, summary }
}
