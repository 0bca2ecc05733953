/**
 * SPEC.md 1.2 and 2.3: every kept `dist.tarball` is rewritten so that it
 * resolves back through the proxy, as `{base_url}/js/{package}/-/{filename}`
 * with `{package}` in its URL form (engine/npm/names.ts) and `{filename}` the
 * last path segment of the upstream's tarball URL.
 */
import { encodePackageName } from '../npm/names.js'

/** The mount prefix of the JavaScript registry protocol (SPEC.md conventions). */
export const JS_MOUNT_PREFIX = '/js'

/**
 * Where the last path segment of a tarball URL lies, as written (still
 * percent-encoded), without query or fragment: [from, to) in `url`;
 * undefined when there is none. Render copies the segment's source bytes
 * by this range instead of re-encoding it.
 */
export function tarballSegmentRange(url: string): readonly [number, number] | undefined {
  let end = url.length
  const hash = url.indexOf('#')
  if (hash >= 0) end = hash
  const query = url.lastIndexOf('?', end)
  if (query >= 0) end = query
  const slash = url.lastIndexOf('/', end - 1)
  return end - (slash + 1) <= 0 ? undefined : [slash + 1, end]
}

/**
 * The last path segment of a tarball URL, as written (still percent-encoded),
 * without query or fragment; undefined when there is none.
 */
export function tarballFilenameSegment(url: string): string | undefined {
  const range = tarballSegmentRange(url)
  return range === undefined ? undefined : url.slice(range[0], range[1])
}

/** The decoded file name the artifact route compares against (engine/npm/names.ts validateArtifactFilename). */
export function decodeFilename(segment: string): string {
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Builds the rewritten tarball URLs of one package. */
export class TarballRewriter {
  readonly #prefix: string

  constructor(baseUrl: string, packageName: string) {
    const base = baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl
    this.#prefix = `${base}${JS_MOUNT_PREFIX}/${encodePackageName(packageName)}/-/`
  }

  /** The proxy's URL for a file name segment. */
  url(segment: string): string { return this.#prefix + segment }

  /** Everything of the rewritten URL before the segment. */
  get prefix(): string { return this.#prefix }
}
