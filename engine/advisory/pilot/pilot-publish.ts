/**
 * One Pilot run for one ecosystem (SPEC.md 1.6, 2.9, 6.2): compile the OSV
 * export and the EPSS feed (compile.ts), report the data ages
 * (compile-report.ts), and publish the artifact to the object store under
 * advisoryObjectKey with its metadata. The put happens after every
 * successful compile, even when the bytes did not change, because the
 * object's publication time is the push time the proxy ages (SPEC.md 2.9,
 * 3.5).
 */
import type { Dispatcher } from 'undici'
import type { Clock } from '../../clock.js'
import type { Logger } from '../../log/logger.js'
import type { ObjectStore } from '../../store/object-store.js'
import { advisoryObjectKey } from '../artifact/advisory-object-key.js'
import { compileEcosystem, type CompileSummary } from './compile.js'
import { reportCompileAges } from './compile-report.js'
import type { Ecosystem } from '../artifact/database.js'

/** info: the artifact is in the store. */
export const ADVISORY_PUBLISHED = 'advisory artifact published'

export interface PublishEcosystemOptions {
  readonly ecosystem: Ecosystem
  readonly osvExportBaseUrl: string
  readonly epssFeedUrl: string | undefined
  readonly store: ObjectStore
  /** Seconds after which the newest advisory counts as quiet (`advisories.quietTime.<ecosystem>`). */
  readonly quietTime: number
  /** Seconds after which the EPSS score date counts as quiet (`advisories.epssQuietTime`). */
  readonly epssQuietTime: number
  readonly tmpDir: string
  readonly clock: Clock
  readonly logger: Logger
  readonly dispatcher?: Dispatcher
}

export interface PublishedArtifact {
  readonly ecosystem: Ecosystem
  readonly key: string
  readonly etag: string
  readonly publishedAt: Date | undefined
  readonly summary: CompileSummary
}

export async function compileAndPublish(options: PublishEcosystemOptions): Promise<PublishedArtifact> {
  const { ecosystem, store, clock, logger } = options
  const compiled = await compileEcosystem({
    ecosystem,
    osvExportBaseUrl: options.osvExportBaseUrl,
    epssFeedUrl: options.epssFeedUrl,
    tmpDir: options.tmpDir,
    clock,
    logger,
    ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
  })
  reportCompileAges(compiled.summary, { quietTime: options.quietTime, epssQuietTime: options.epssQuietTime, now: clock.now() }, logger)
  const key = advisoryObjectKey(ecosystem)
  const put = await store.put(key, compiled.bytes, compiled.metadata)
  logger.info(ADVISORY_PUBLISHED, {
    ecosystem, key, etag: put.etag, publishedAt: put.publishedAt?.toISOString(), bytes: compiled.bytes.byteLength,
    epssStatus: compiled.summary.epssStatus,
  })
  return { ecosystem, key, etag: put.etag, publishedAt: put.publishedAt, summary: compiled.summary }
}
