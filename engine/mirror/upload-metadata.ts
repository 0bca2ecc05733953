/**
 * The form fields of a `py` upload (issue 16): what twine 4 sends
 * (`twine/package.py` `metadata_dictionary`, `twine/repository.py`
 * `_upload`), built from what the mirror worker knows without unpacking
 * the distribution.
 *
 * - `:action=file_upload`, `protocol_version=1`.
 * - `name` and `version` from the file name (wheel and sdist name rules,
 *   engine/pypi/file-name-version.ts): the version in its PEP 440 normal
 *   form; the name is the `.metadata` file's `Name` when it is used, else
 *   the file name's, made safe as twine makes it (every run of characters
 *   other than letters, digits and `.` becomes `-`).
 * - `filetype` from the extension: `bdist_wheel` for `.whl`, `sdist` for the
 *   source forms; `pyversion` the wheel's Python tag (`py3`, `cp311.cp312`)
 *   or `source` for an sdist.
 * - `metadata_version` and the other core metadata fields (summary,
 *   requires_python, requires_dist, classifiers...) from the PEP 658
 *   `.metadata` file when the page offers it: its header fields only, read
 *   up to the first blank line and at most MAX_METADATA_HEADER_BYTES (the
 *   long description in the body is not sent). A metadata file naming
 *   another project or version than the file name is not used. Without one,
 *   `metadata_version` is DEFAULT_METADATA_VERSION: the form then states only
 *   name and version, which Metadata 1.0 covers.
 * - `sha256_digest` (the digest the worker verifies before the form is
 *   closed) and `md5_digest` when the page gave one; twine omits a digest it
 *   does not have rather than send an empty one, and so does this.
 */
import { fileNameVersion } from '../pypi/file-name-version.js'
import { normalizeProjectName } from '../pypi/project-name.js'
import type { FormField } from './upload-form.js'

/** `metadata_version` when the page offers no `.metadata` file (or an unusable one). */
export const DEFAULT_METADATA_VERSION = '1.0'
/** Bytes of `.metadata` header read at most; a header block larger than this is not used. */
export const MAX_METADATA_HEADER_BYTES = 256 * 1024

/** Core metadata header (lower-case) to twine's form field; `multi` ones may repeat. */
const FIELDS: Readonly<Record<string, readonly [field: string, multi: boolean]>> = {
  'summary': ['summary', false],
  'home-page': ['home_page', false],
  'author': ['author', false],
  'author-email': ['author_email', false],
  'maintainer': ['maintainer', false],
  'maintainer-email': ['maintainer_email', false],
  'license': ['license', false],
  'description': ['description', false],
  'keywords': ['keywords', false],
  'platform': ['platform', true],
  'classifier': ['classifiers', true],
  'download-url': ['download_url', false],
  'supported-platform': ['supported_platform', true],
  'provides': ['provides', true],
  'requires': ['requires', true],
  'obsoletes': ['obsoletes', true],
  'project-url': ['project_urls', true],
  'provides-dist': ['provides_dist', true],
  'obsoletes-dist': ['obsoletes_dist', true],
  'requires-dist': ['requires_dist', true],
  'requires-external': ['requires_external', true],
  'requires-python': ['requires_python', false],
  'provides-extra': ['provides_extras', true],
  'description-content-type': ['description_content_type', false],
  'dynamic': ['dynamic', true],
}

/** What the file name says of a distribution: undefined when it is no wheel or sdist of `project`. */
export interface DistributionFacts {
  readonly name: string
  readonly version: string
  readonly filetype: 'bdist_wheel' | 'sdist'
  readonly pyversion: string
}

export function distributionFacts(filename: string, project: string): DistributionFacts | undefined {
  const parsed = fileNameVersion(filename, project)
  if (parsed === undefined) return undefined
  if (parsed.kind === 'wheel') {
    const parts = filename.slice(0, -'.whl'.length).split('-')
    return { name: parts[0] ?? project, version: parsed.version, filetype: 'bdist_wheel', pyversion: parts[parts.length - 3] ?? '' }
  }
  const lower = filename.toLowerCase()
  const stemEnd = lower.endsWith('.tar.gz') || lower.endsWith('.tar.bz2') || lower.endsWith('.tar.xz')
    ? filename.lastIndexOf('.tar') : filename.lastIndexOf('.')
  const stem = filename.slice(0, stemEnd)
  return { name: stem.slice(0, stem.length - parsed.raw.length - 1), version: parsed.version, filetype: 'sdist', pyversion: 'source' }
}

/** twine's `safe_name` (pkg_resources): runs of characters other than letters, digits and `.` become one `-`. */
export function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9.]+/g, '-')
}

/** Header fields in order, continuation lines joined with a newline (RFC 822 folding, as the email parser reads them). */
export function parseMetadataHeaders(text: string): [string, string][] {
  const out: [string, string][] = []
  for (const line of text.split(/\r?\n/)) {
    if (line === '') break
    const last = out[out.length - 1]
    if (/^[ \t]/.test(line)) {
      if (last !== undefined) last[1] += `\n${line.trim()}`
      continue
    }
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    out.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()])
  }
  return out
}

/**
 * Reads a `.metadata` stream's header block: stops at the first blank line,
 * or returns undefined past `max` bytes. The rest of the stream is left to
 * the caller to destroy.
 */
export async function readMetadataHeader(body: AsyncIterable<Uint8Array>, max = MAX_METADATA_HEADER_BYTES): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of body) {
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    chunks.push(buffer)
    bytes += buffer.byteLength
    const text = Buffer.concat(chunks).toString('utf8')
    const end = text.search(/\r?\n\r?\n/)
    if (end >= 0) return text.slice(0, end)
    if (bytes > max) return undefined
  }
  return Buffer.concat(chunks).toString('utf8')
}

export interface UploadFieldsInput {
  readonly facts: DistributionFacts
  readonly project: string
  readonly sha256: string
  readonly md5: string | undefined
  /** The `.metadata` header block, when one was read. */
  readonly metadata: string | undefined
}

/** The form fields before `content`, in twine's order; `usedMetadata` says whether the `.metadata` fields went in. */
export function uploadFields(input: UploadFieldsInput): { fields: FormField[], usedMetadata: boolean } {
  const { facts } = input
  const headers = input.metadata === undefined ? [] : parseMetadataHeaders(input.metadata)
  const first = (name: string): string | undefined => headers.find(([h]) => h.toLowerCase() === name)?.[1]
  const metaName = first('name')
  const metaVersion = first('version')
  const metadataVersion = first('metadata-version')
  const usable = metadataVersion !== undefined && metaName !== undefined && normalizeProjectName(metaName) === input.project
    && metaVersion !== undefined && fileNameVersion(`${facts.name}-${metaVersion}.tar.gz`, input.project)?.version === facts.version
  const fields: FormField[] = [
    ['name', safeName(usable ? metaName : facts.name)],
    ['version', facts.version],
    ['filetype', facts.filetype],
    ['pyversion', facts.pyversion],
    ['metadata_version', usable ? metadataVersion : DEFAULT_METADATA_VERSION],
  ]
  if (usable) {
    for (const [header, value] of headers) {
      const mapped = FIELDS[header.toLowerCase()]
      if (mapped === undefined) continue
      const [field, multi] = mapped
      if (!multi && fields.some(([f]) => f === field)) continue
      fields.push([field, value])
    }
  }
  fields.push(['sha256_digest', input.sha256])
  if (input.md5 !== undefined) fields.push(['md5_digest', input.md5])
  fields.push([':action', 'file_upload'], ['protocol_version', '1'])
  return { fields, usedMetadata: usable }
}
