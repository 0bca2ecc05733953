/**
 * Reads a PEP 691 JSON project page (`application/vnd.pypi.simple.v1+json`)
 * into the model. Structural faults (not JSON, not an object, `files` not an
 * array, an unknown major api-version, a page for another project) are
 * UPSTREAM_DECODE / UPSTREAM_WRONG_PACKAGE; one unusable file entry is
 * dropped and counted, so that one odd file does not take a project down.
 *
 * URLs may be relative to the page (PEP 691).
 */
import { ServiceError } from '../errors.js'
import { normalizeProjectName } from './project-name.js'
import {
  checkApiVersion, checkFileCount, checkSize, cleanHashes, decodeUtf8, resolveUrl, uploadTimeMs, usableFilename,
} from './simple-read-common.js'
import { DEFAULT_READ_LIMITS, type Hashes, type ProjectStatus, type ReadLimits, type ReadResult, type SimpleFile } from './simple-model.js'

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function decodeFault(project: string, reason: string, cause?: unknown): ServiceError {
  return new ServiceError('UPSTREAM_DECODE', { cause, data: { project, reason } })
}

function metadataHashes(value: unknown): Hashes | undefined {
  if (value === true) return Object.freeze({})
  if (isObject(value)) return cleanHashes(Object.entries(value))
  return undefined // false, absent or malformed: not offered
}

function stringList(value: unknown, pageUrl: string): readonly string[] | undefined {
  if (!Array.isArray(value)) return undefined
  return value.filter((v): v is string => typeof v === 'string').map((v) => resolveUrl(v, pageUrl)).filter((v): v is string => v !== undefined)
}

/**
 * PEP 714: `core-metadata` first, then `dist-info-metadata`; last the
 * `data-dist-info-metadata` key PyPI briefly served in JSON (poetry's
 * fixtures still carry it).
 */
function firstPresent(entry: Json, keys: readonly string[]): unknown {
  for (const key of keys) if (Object.hasOwn(entry, key)) return entry[key]
  return undefined
}

function readFile(entry: unknown, pageUrl: string): SimpleFile | undefined {
  if (!isObject(entry)) return undefined
  const { filename, url: href, hashes } = entry
  if (typeof filename !== 'string' || !usableFilename(filename) || typeof href !== 'string') return undefined
  const url = resolveUrl(href, pageUrl)
  if (url === undefined) return undefined
  // PEP 691 requires `hashes`; a page without it is read as offering no digest, which the integrity floor then refuses.
  const file: { -readonly [K in keyof SimpleFile]: SimpleFile[K] } = {
    filename, url, hashes: cleanHashes(isObject(hashes) ? Object.entries(hashes) : []),
  }
  const rp = entry['requires-python']
  if (typeof rp === 'string' && rp.trim() !== '') file.requiresPython = rp
  const yanked = entry.yanked
  if (yanked === true || (typeof yanked === 'string')) file.yanked = yanked === '' ? true : yanked
  const size = entry.size
  if (typeof size === 'number' && Number.isSafeInteger(size) && size >= 0) file.size = size
  const uploadTime = entry['upload-time']
  if (typeof uploadTime === 'string') {
    const ms = uploadTimeMs(uploadTime)
    // An unreadable time is dropped, not kept: a file without one cannot pass a quarantine.
    if (ms !== undefined) {
      file.uploadTime = uploadTime
      file.uploadMs = ms
    }
  }
  const metadata = metadataHashes(firstPresent(entry, ['core-metadata', 'dist-info-metadata', 'data-dist-info-metadata']))
  if (metadata !== undefined) file.coreMetadata = metadata
  const provenance = entry.provenance
  if (typeof provenance === 'string') {
    const resolved = resolveUrl(provenance, pageUrl)
    if (resolved !== undefined) file.provenance = resolved
  }
  return Object.freeze(file)
}

/**
 * Reads `body` as the JSON page of `project` fetched from `pageUrl` (which
 * relative URLs resolve against).
 */
export function readSimpleJson(body: Uint8Array, project: string, pageUrl: string, limits: ReadLimits = DEFAULT_READ_LIMITS): ReadResult {
  checkSize(body.byteLength, limits, project)
  let doc: unknown
  try {
    doc = JSON.parse(decodeUtf8(body, project))
  } catch (cause) {
    if (cause instanceof ServiceError) throw cause
    throw decodeFault(project, 'not JSON', cause)
  }
  if (!isObject(doc)) throw decodeFault(project, 'not a JSON object')
  const meta = doc.meta
  const apiVersion = checkApiVersion(isObject(meta) && typeof meta['api-version'] === 'string' ? meta['api-version'] : undefined, project)
  const name = typeof doc.name === 'string' ? doc.name : project
  if (normalizeProjectName(name) !== normalizeProjectName(project)) {
    throw new ServiceError('UPSTREAM_WRONG_PACKAGE', { data: { project, pageName: name.slice(0, 200) } })
  }
  if (!Array.isArray(doc.files)) throw decodeFault(project, 'files is not an array')
  checkFileCount(doc.files.length, limits, project)
  const files: SimpleFile[] = []
  for (const entry of doc.files) {
    const file = readFile(entry, pageUrl)
    if (file !== undefined) files.push(file)
  }
  const result: {
    name: string; files: readonly SimpleFile[]; apiVersion: string
    versions?: readonly string[]; projectStatus?: ProjectStatus; tracks?: readonly string[]; alternateLocations?: readonly string[]
  } = { name, files: Object.freeze(files), apiVersion }
  if (Array.isArray(doc.versions)) result.versions = Object.freeze(doc.versions.filter((v): v is string => typeof v === 'string'))
  const status = doc['project-status']
  if (isObject(status) && typeof status.status === 'string') {
    result.projectStatus = typeof status.reason === 'string'
      ? { status: status.status, reason: status.reason }
      : { status: status.status }
  }
  // PEP 708 puts `tracks` under `meta` and `alternate-locations` at the top level.
  const tracks = stringList(isObject(meta) ? meta.tracks : undefined, pageUrl) ?? stringList(doc.tracks, pageUrl)
  if (tracks !== undefined) result.tracks = tracks
  const alternates = stringList(doc['alternate-locations'], pageUrl)
  if (alternates !== undefined) result.alternateLocations = alternates
  return { project: Object.freeze(result), droppedFiles: doc.files.length - files.length }
}
