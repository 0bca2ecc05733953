/**
 * The proxy's file URLs for the `py` mount. Every file (and its PEP 658
 * metadata, and its PEP 740 provenance) on a served page points under the
 * proxy; the upstream URL travels inside the proxy URL only so that the
 * file route can fetch it, and is never offered to a client as a link.
 *
 *   {baseUrl}/py/files/{project}/{token}/{filename}
 *   {baseUrl}/py/files/{project}/{token}/{filename}.metadata   (PEP 658: the file URL + `.metadata`)
 *   {baseUrl}/py/provenance/{project}/{token}/{filename}        (PEP 740)
 *
 * - `project` is the PEP 503 normal name, so the route can gate the file
 *   against the project page without reading the file name.
 * - `token` is the upstream URL (absolute, no fragment) as unpadded
 *   base64url of its UTF-8 bytes: reversible with no state, and no `/`,
 *   `%` or `.` in it, so no client or intermediary rewrites it.
 * - `filename` comes last because pip and uv take a file's name from the
 *   URL's last path segment; it is percent-encoded as one segment.
 *
 * The decoded parts are untrusted input: the route MUST find
 * (project, filename) on the gated page, check that the page's upstream URL
 * for it equals the decoded one (or simply use the page's), and apply the
 * tarball-host and egress policies before fetching anything.
 */
import { isValidProjectName, isNormalizedProjectName } from './project-name.js'
import { usableFilename } from './simple-read-common.js'

export const FILES_PREFIX = '/py/files/'
export const PROVENANCE_PREFIX = '/py/provenance/'
export const METADATA_SUFFIX = '.metadata'

/** Upstream URLs longer than this are not carried (the token would make path limits bite). */
export const MAX_UPSTREAM_URL_LENGTH = 2048

export function encodeUpstreamToken(upstreamUrl: string): string {
  return Buffer.from(upstreamUrl, 'utf8').toString('base64url')
}

const TOKEN = /^[A-Za-z0-9_-]+$/

export function decodeUpstreamToken(token: string): string | undefined {
  if (!TOKEN.test(token) || token.length > Math.ceil(MAX_UPSTREAM_URL_LENGTH * 4 / 3) + 4) return undefined
  const text = Buffer.from(token, 'base64url').toString('utf8')
  // Canonical form only: one URL has exactly one token.
  if (encodeUpstreamToken(text) !== token) return undefined
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') return undefined
  // WHATWG-serialised, as the readers store page URLs, so the route can compare it with the page's.
  return url.href
}

function trimBase(baseUrl: string): string {
  return baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl
}

/** The proxy URL of a distribution file. */
export function fileUrl(baseUrl: string, project: string, upstreamUrl: string, filename: string): string {
  return `${trimBase(baseUrl)}${FILES_PREFIX}${project}/${encodeUpstreamToken(upstreamUrl)}/${encodeURIComponent(filename)}`
}

/** The proxy URL of a file's PEP 740 provenance. */
export function provenanceUrl(baseUrl: string, project: string, upstreamProvenanceUrl: string, filename: string): string {
  return `${trimBase(baseUrl)}${PROVENANCE_PREFIX}${project}/${encodeUpstreamToken(upstreamProvenanceUrl)}/${encodeURIComponent(filename)}`
}

export type FileRequestKind = 'file' | 'metadata' | 'provenance'

export interface FileRequest {
  readonly kind: FileRequestKind
  readonly project: string
  /** The distribution's file name (without `.metadata`). */
  readonly filename: string
  /** What to fetch upstream: the file, the file's URL + `.metadata`, or the provenance URL. */
  readonly upstreamUrl: string
}

/**
 * Reads a request path (no query) under `/py/files/` or `/py/provenance/`;
 * undefined when it is not one this module wrote.
 */
export function parseFileRequestPath(path: string): FileRequest | undefined {
  const prefix = path.startsWith(FILES_PREFIX) ? FILES_PREFIX : path.startsWith(PROVENANCE_PREFIX) ? PROVENANCE_PREFIX : undefined
  if (prefix === undefined) return undefined
  const parts = path.slice(prefix.length).split('/')
  if (parts.length !== 3) return undefined
  const [project, token, encodedName] = parts as [string, string, string]
  if (!isValidProjectName(project) || !isNormalizedProjectName(project)) return undefined
  const upstream = decodeUpstreamToken(token)
  if (upstream === undefined) return undefined
  let name: string
  try {
    name = decodeURIComponent(encodedName)
  } catch {
    return undefined
  }
  if (!usableFilename(name)) return undefined
  if (prefix === PROVENANCE_PREFIX) return { kind: 'provenance', project, filename: name, upstreamUrl: upstream }
  if (name.endsWith(METADATA_SUFFIX)) {
    const filename = name.slice(0, -METADATA_SUFFIX.length)
    if (!usableFilename(filename)) return undefined
    return { kind: 'metadata', project, filename, upstreamUrl: metadataUrl(upstream) }
  }
  return { kind: 'file', project, filename: name, upstreamUrl: upstream }
}

/** PEP 658: the metadata file is at the distribution's URL with `.metadata` appended to its path. */
export function metadataUrl(upstreamUrl: string): string {
  const url = new URL(upstreamUrl)
  url.pathname += METADATA_SUFFIX
  return url.href
}
