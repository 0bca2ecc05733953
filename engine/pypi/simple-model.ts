/**
 * One model of a Simple Repository API project page (PEP 503 HTML and PEP
 * 691 JSON read into the same shape), what merge, gate and the renderers
 * work on. Field names follow the JSON form; every optional field is absent
 * when the upstream did not state it, so a renderer can never claim data
 * the upstream did not serve (PEP 700 `size` and `upload-time` in particular
 * are carried verbatim from the upstream that served the file).
 */

/** Digests by lower-case algorithm name, values lower-case hex (PEP 691 `hashes`). */
export type Hashes = Readonly<Record<string, string>>

export interface SimpleFile {
  readonly filename: string
  /** The absolute upstream URL (fragment removed), resolved against the page: kept only for the upstream fetch. */
  readonly url: string
  readonly hashes: Hashes
  /** PEP 345 `Requires-Python` specifier text, entity-decoded; absent when the upstream gave none or an empty one. */
  readonly requiresPython?: string
  /** PEP 592: absent or false when not yanked; true, or the reason text, when yanked. */
  readonly yanked?: true | string
  /** PEP 700 size in bytes. */
  readonly size?: number
  /** PEP 700 upload time, the upstream's text unchanged (ISO 8601, UTC). */
  readonly uploadTime?: string
  /** `uploadTime` in milliseconds since the epoch. */
  readonly uploadMs?: number
  /**
   * PEP 658/714: the core metadata file (`{url}.metadata`) is offered, with
   * its digests (possibly none). Absent when not offered.
   */
  readonly coreMetadata?: Hashes
  /** PEP 740 provenance URL (absolute), absent when none. */
  readonly provenance?: string
}

export interface ProjectStatus {
  /** PEP 792: active, archived, quarantined or deprecated (unknown values are kept as read). */
  readonly status: string
  readonly reason?: string
}

export interface SimpleProject {
  /** The project's name as the page states it (JSON `name`), else the requested one. */
  readonly name: string
  readonly files: readonly SimpleFile[]
  /** PEP 700 `versions`, when the upstream served them. */
  readonly versions?: readonly string[]
  /** The upstream's `api-version` (PEP 629), `major.minor`. */
  readonly apiVersion: string
  readonly projectStatus?: ProjectStatus
  /** PEP 708 `tracks` and `alternate-locations`, kept for the caller; never rendered (they name other indexes). */
  readonly tracks?: readonly string[]
  readonly alternateLocations?: readonly string[]
}

/** What a reader made of a page. */
export interface ReadResult {
  readonly project: SimpleProject
  /** File entries dropped as unusable (no name, no http(s) URL, a name with a path in it). */
  readonly droppedFiles: number
}

export interface ReadLimits {
  /** Largest page accepted, in bytes (the metadata ingest ceiling). */
  readonly maxBytes: number
  /** Most file entries accepted on one page. */
  readonly maxFiles: number
}

/** A page of a project with tens of thousands of files stays under these; a hostile one does not. */
export const DEFAULT_READ_LIMITS: ReadLimits = Object.freeze({ maxBytes: 64 * 1024 * 1024, maxFiles: 100_000 })

/** The two media types of PEP 691 version 1, plus the legacy PEP 503 one. */
export const SIMPLE_JSON_V1 = 'application/vnd.pypi.simple.v1+json'
export const SIMPLE_HTML_V1 = 'application/vnd.pypi.simple.v1+html'
export const TEXT_HTML = 'text/html'

/** PEP 792 status whose project offers no files. */
export const QUARANTINED = 'quarantined'
