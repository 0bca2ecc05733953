/**
 * What `py` project pages reveal about their upstreams, counted every time
 * and logged at warn once per project and kind while the record remembers
 * it (the newest 4096 projects), so a page every install reads cannot flood
 * the log (issue 16):
 * - `unreadable_version`: files dropped because no version can be read from the name;
 * - `no_upload_time`: public files refused because they carry no upload time
 *   (they cannot pass a quarantine rule);
 * - `digest_mismatch`: a private and a public file of the same name with
 *   different digests (the private one is served).
 */
import { LRUCache } from 'lru-cache'
import type { Logger } from '../log/logger.js'
import type { PageCounts } from './project-page.js'
import type { DigestMismatch } from './project-merge.js'

export const PY_FILES_UNREADABLE = 'py files without a readable version dropped'
export const PY_FILES_WITHOUT_UPLOAD_TIME = 'py public files without upload-time cannot pass a quarantine'
export const PY_DIGEST_MISMATCH = 'py private and public file digests differ'

export type PyFileCount = 'unreadable_version' | 'no_upload_time' | 'digest_mismatch'

const REMEMBERED = 4096

export class ProjectPageRecord {
  readonly #logger: Logger
  readonly #logged = new LRUCache<string, true>({ max: REMEMBERED })
  readonly #counts: Record<PyFileCount, number> = { unreadable_version: 0, no_upload_time: 0, digest_mismatch: 0 }

  constructor(logger: Logger) {
    this.#logger = logger
  }

  record(project: string, counts: PageCounts, mismatches: readonly DigestMismatch[]): void {
    this.#note(project, 'unreadable_version', counts.unreadableVersions, PY_FILES_UNREADABLE, { files: counts.unreadableVersions })
    this.#note(project, 'no_upload_time', counts.withoutUploadTime, PY_FILES_WITHOUT_UPLOAD_TIME, { files: counts.withoutUploadTime })
    this.#note(project, 'digest_mismatch', mismatches.length, PY_DIGEST_MISMATCH, {
      files: mismatches.slice(0, 20).map((m) => ({ filename: m.filename, algorithms: m.algorithms })),
    })
  }

  #note(project: string, kind: PyFileCount, n: number, message: string, data: Record<string, unknown>): void {
    if (n === 0) return
    this.#counts[kind] += n
    const key = `${project}\u0000${kind}`
    if (this.#logged.has(key)) return
    this.#logged.set(key, true)
    this.#logger.warn(message, { ecosystem: 'py', project, ...data })
  }

  /** `service.pypi.files` by outcome. */
  snapshot(): Readonly<Record<PyFileCount, number>> {
    return { ...this.#counts }
  }
}
