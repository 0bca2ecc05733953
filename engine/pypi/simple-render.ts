/**
 * Writes a (merged, gated) project page as PEP 691 JSON v1 or PEP 503 HTML
 * v1, every file URL rewritten under the proxy (file-url.ts).
 *
 * API version claimed (PEP 629 `api-version`, the same for both formats):
 * `1.4` only when every file served carries both PEP 700 `size` and
 * `upload-time` (1.1 makes `size` mandatory; `upload-time` is what pip's
 * `--uploaded-prior-to` and uv's `exclude-newer` need, so a page that lacks
 * it for some file does not advertise PEP 700 support); otherwise `1.0`.
 * Fields the upstream did serve are still written at 1.0: clients ignore
 * keys they do not know. Never written: PEP 708 `tracks` and
 * `alternate-locations` (they name indexes behind the proxy, and the merge
 * is the proxy's answer to dependency confusion), `gpg-sig`, `_last-serial`.
 *
 * JSON: `core-metadata` alone (PEP 714), `true` or the digests: never the
 * old `dist-info-metadata` key, whose object form crashes pip 22.3 to 23.0
 * (Debian 12's pip: `unhashable type: 'dict'`, found by the pip e2e test),
 * the bug PEP 714 renamed the key for. HTML keeps both attributes, which
 * those pips read correctly; `yanked` true or the reason; `versions` (PEP 700)
 * from the page, else from the file names. HTML: one digest in the URL
 * fragment (sha256 when present, PEP 503 allows one), attributes escaped.
 */
import { fileNameVersion } from './file-name-version.js'
import { escapeHtml } from './html-text.js'
import { fileUrl, provenanceUrl } from './file-url.js'
import { normalizeProjectName } from './project-name.js'
import type { Hashes, SimpleFile, SimpleProject } from './simple-model.js'

export const API_VERSION_FULL = '1.4'
export const API_VERSION_BASE = '1.0'

/** The api-version a page of these files may claim (module comment). */
export function claimableApiVersion(files: readonly SimpleFile[]): string {
  return files.every((f) => f.size !== undefined && f.uploadTime !== undefined) ? API_VERSION_FULL : API_VERSION_BASE
}

/** Digest preference for the one digest HTML can carry: the integrity floor's sha256 first, then the strongest. */
const PREFERENCE = ['sha256', 'sha512', 'sha384', 'sha3_512', 'sha3_384', 'sha3_256', 'blake2b', 'sha224', 'sha1', 'md5']

function oneDigest(hashes: Hashes): [string, string] | undefined {
  for (const name of PREFERENCE) {
    const value = hashes[name]
    if (value !== undefined) return [name, value]
  }
  const first = Object.entries(hashes)[0]
  return first
}

/** PEP 700 `versions`: the page's, else the distinct versions of the file names, in order of appearance. */
export function pageVersions(project: SimpleProject): readonly string[] {
  if (project.versions !== undefined) return project.versions
  const seen = new Set<string>()
  for (const f of project.files) {
    const v = fileNameVersion(f.filename, project.name)
    if (v !== undefined) seen.add(v.version)
  }
  return [...seen]
}

export interface RenderOptions {
  /** `{base_url}`: the proxy's externally reachable base address. */
  readonly baseUrl: string
}

export function renderSimpleJson(project: SimpleProject, options: RenderOptions): string {
  const normal = normalizeProjectName(project.name)
  const files = project.files.map((f) => {
    const out: Record<string, unknown> = {
      filename: f.filename,
      url: fileUrl(options.baseUrl, normal, f.url, f.filename),
      hashes: f.hashes,
    }
    if (f.requiresPython !== undefined) out['requires-python'] = f.requiresPython
    if (f.yanked !== undefined) out.yanked = f.yanked
    if (f.size !== undefined) out.size = f.size
    if (f.uploadTime !== undefined) out['upload-time'] = f.uploadTime
    if (f.coreMetadata !== undefined) {
      const value = Object.keys(f.coreMetadata).length === 0 ? true : f.coreMetadata
      out['core-metadata'] = value
    }
    if (f.provenance !== undefined) out.provenance = provenanceUrl(options.baseUrl, normal, f.provenance, f.filename)
    return out
  })
  const doc: Record<string, unknown> = {
    meta: { 'api-version': claimableApiVersion(project.files) },
    name: normal,
    versions: pageVersions(project),
    files,
  }
  if (project.projectStatus !== undefined) doc['project-status'] = project.projectStatus
  return JSON.stringify(doc)
}

export function renderSimpleHtml(project: SimpleProject, options: RenderOptions): string {
  const normal = normalizeProjectName(project.name)
  const title = escapeHtml(project.name)
  const parts: string[] = [
    '<!DOCTYPE html>\n<html>\n<head>\n',
    `<meta name="pypi:repository-version" content="${claimableApiVersion(project.files)}">\n`,
  ]
  if (project.projectStatus !== undefined) {
    parts.push(`<meta name="pypi:project-status" content="${escapeHtml(project.projectStatus.status)}">\n`)
    if (project.projectStatus.reason !== undefined) {
      parts.push(`<meta name="pypi:project-status-reason" content="${escapeHtml(project.projectStatus.reason)}">\n`)
    }
  }
  parts.push(`<title>Links for ${title}</title>\n</head>\n<body>\n<h1>Links for ${title}</h1>\n`)
  for (const f of project.files) {
    const digest = oneDigest(f.hashes)
    let href = fileUrl(options.baseUrl, normal, f.url, f.filename)
    if (digest !== undefined) href += `#${digest[0]}=${digest[1]}`
    let a = `<a href="${escapeHtml(href)}"`
    if (f.requiresPython !== undefined) a += ` data-requires-python="${escapeHtml(f.requiresPython)}"`
    if (f.yanked !== undefined) a += f.yanked === true ? ' data-yanked=""' : ` data-yanked="${escapeHtml(f.yanked)}"`
    if (f.coreMetadata !== undefined) {
      const md = oneDigest(f.coreMetadata)
      const value = md === undefined ? 'true' : `${md[0]}=${md[1]}`
      a += ` data-core-metadata="${value}" data-dist-info-metadata="${value}"`
    }
    if (f.provenance !== undefined) a += ` data-provenance="${escapeHtml(provenanceUrl(options.baseUrl, normal, f.provenance, f.filename))}"`
    parts.push(`${a}>${escapeHtml(f.filename)}</a><br>\n`)
  }
  parts.push('</body>\n</html>\n')
  return parts.join('')
}
