/**
 * Reads a PEP 503 HTML project page (what pypiserver and older indexes
 * serve, and `application/vnd.pypi.simple.v1+html`) into the model.
 *
 * Not a general HTML parser: a scanner for the three elements the Simple
 * API uses. `<a href>` is a file (its text the file name, PEP 503; the URL's
 * last path segment when the text is empty), `<meta name="pypi:...">` the
 * page's API version (PEP 629) and PEP 708/792 data, `<base href>` the base
 * for relative URLs. Comments, scripts and styles are skipped. Attributes:
 * the URL fragment `#<alg>=<hex>` is the digest; `data-requires-python`
 * (entity-decoded); `data-yanked` (present: yanked, its value the reason,
 * PEP 592); `data-core-metadata`, else `data-dist-info-metadata` (PEP
 * 658/714: "true" or `<alg>=<hex>`); `data-provenance` (PEP 740).
 * HTML carries no size or upload time (PEP 700 is JSON only).
 */
import { decodeHtmlText } from './html-text.js'
import { checkApiVersion, checkFileCount, checkSize, cleanHashes, decodeUtf8, resolveUrl, usableFilename } from './simple-read-common.js'
import { DEFAULT_READ_LIMITS, type Hashes, type ProjectStatus, type ReadLimits, type ReadResult, type SimpleFile } from './simple-model.js'

type Attributes = Map<string, string>

/** name, then optionally `=` and a double-quoted, single-quoted or unquoted value. */
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g

function parseAttributes(source: string): Attributes {
  const out: Attributes = new Map()
  for (const m of source.matchAll(ATTRIBUTE)) {
    const name = (m[1] as string).toLowerCase()
    if (out.has(name)) continue // the first one wins, as in the HTML parser
    out.set(name, decodeHtmlText(m[2] ?? m[3] ?? m[4] ?? ''))
  }
  return out
}

function digestFromFragment(href: string): Hashes {
  const hash = href.indexOf('#')
  if (hash < 0) return Object.freeze({})
  const fragment = href.slice(hash + 1)
  const eq = fragment.indexOf('=')
  return eq < 0 ? Object.freeze({}) : cleanHashes([[fragment.slice(0, eq), fragment.slice(eq + 1)]])
}

function metadataAttribute(value: string | undefined): Hashes | undefined {
  if (value === undefined) return undefined
  const v = value.trim()
  if (v.toLowerCase() === 'true') return Object.freeze({})
  const eq = v.indexOf('=')
  if (eq < 0) return undefined // "false" or malformed: not offered
  return cleanHashes([[v.slice(0, eq), v.slice(eq + 1)]])
}

function lastSegment(url: string): string {
  const path = new URL(url).pathname
  try {
    return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1))
  } catch {
    return ''
  }
}

interface Anchor { readonly attributes: Attributes; readonly text: string }

/** Elements whose content is not markup: skipped whole. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title'])
const RAW_TEXT_CLOSE: Readonly<Record<string, RegExp>> = Object.fromEntries([...RAW_TEXT].map((n) => [n, new RegExp(`</${n}`, 'gi')]))
const TAG_NAME = /^<\/?([a-zA-Z][a-zA-Z0-9-]*)/

/**
 * Reads `body` as the HTML page of `project` fetched from `pageUrl`.
 */
export function readSimpleHtml(body: Uint8Array, project: string, pageUrl: string, limits: ReadLimits = DEFAULT_READ_LIMITS): ReadResult {
  checkSize(body.byteLength, limits, project)
  const html = decodeUtf8(body, project)
  const anchors: Anchor[] = []
  const metas: Attributes[] = []
  let base = pageUrl
  let i = 0
  let open: Attributes | undefined
  let textStart = 0
  while (i < html.length) {
    const lt = html.indexOf('<', i)
    if (lt < 0) break
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4)
      i = end < 0 ? html.length : end + 3
      continue
    }
    const tag = TAG_NAME.exec(html.slice(lt, lt + 40))
    if (tag === null) {
      i = lt + 1
      continue
    }
    const gt = findTagEnd(html, lt)
    if (gt < 0) break
    const name = (tag[1] as string).toLowerCase()
    const closing = html[lt + 1] === '/'
    if (!closing && RAW_TEXT.has(name)) {
      // Searched in place: lower-casing the page per element would be quadratic on a hostile page.
      const close = RAW_TEXT_CLOSE[name] as RegExp
      close.lastIndex = gt
      const end = close.exec(html)
      i = end === null ? html.length : end.index
      continue
    }
    if (name === 'a') {
      if (open !== undefined) {
        // `</a>`, or a new `<a>` that implicitly closes the open one.
        anchors.push({ attributes: open, text: html.slice(textStart, lt) })
        checkFileCount(anchors.length, limits, project)
        open = undefined
      }
      if (!closing) {
        open = parseAttributes(html.slice(lt + tag[0].length, gt))
        textStart = gt + 1
      }
    } else if (!closing && name === 'meta') {
      metas.push(parseAttributes(html.slice(lt + tag[0].length, gt)))
    } else if (!closing && name === 'base') {
      const href = parseAttributes(html.slice(lt + tag[0].length, gt)).get('href')
      const resolved = href === undefined ? undefined : resolveUrl(href, pageUrl)
      if (resolved !== undefined) base = resolved
    }
    i = gt + 1
  }
  if (open !== undefined) anchors.push({ attributes: open, text: html.slice(textStart) })
  checkFileCount(anchors.length, limits, project)

  const metaValues = (key: string): string[] =>
    metas.filter((m) => m.get('name')?.toLowerCase() === key).map((m) => m.get('content') ?? '')
  const apiVersion = checkApiVersion(metaValues('pypi:repository-version')[0], project)

  const files: SimpleFile[] = []
  for (const anchor of anchors) {
    const file = readAnchor(anchor, base)
    if (file !== undefined) files.push(file)
  }
  const result: {
    name: string; files: readonly SimpleFile[]; apiVersion: string
    projectStatus?: ProjectStatus; tracks?: readonly string[]; alternateLocations?: readonly string[]
  } = { name: project, files: Object.freeze(files), apiVersion }
  const status = metaValues('pypi:project-status')[0]
  if (status !== undefined && status.trim() !== '') {
    const reason = metaValues('pypi:project-status-reason')[0]
    result.projectStatus = reason === undefined ? { status: status.trim() } : { status: status.trim(), reason }
  }
  const urls = (key: string): string[] => metaValues(key).map((v) => resolveUrl(v, base)).filter((v): v is string => v !== undefined)
  if (metaValues('pypi:tracks').length > 0) result.tracks = urls('pypi:tracks')
  if (metaValues('pypi:alternate-locations').length > 0) result.alternateLocations = urls('pypi:alternate-locations')
  return { project: Object.freeze(result), droppedFiles: anchors.length - files.length }
}

/** The `>` closing the tag at `lt`, skipping `>` inside quoted attribute values. */
function findTagEnd(html: string, lt: number): number {
  let quote = ''
  for (let j = lt + 1; j < html.length; j++) {
    const c = html[j]
    if (quote !== '') {
      if (c === quote) quote = ''
    } else if (c === '"' || c === "'") {
      quote = c
    } else if (c === '>') {
      return j
    }
  }
  return -1
}

const INNER_TAGS = /<[^>]*>/g

function readAnchor(anchor: Anchor, base: string): SimpleFile | undefined {
  const href = anchor.attributes.get('href')
  if (href === undefined) return undefined
  const url = resolveUrl(href, base)
  if (url === undefined) return undefined
  const text = decodeHtmlText(anchor.text.replace(INNER_TAGS, '')).trim()
  const filename = text === '' ? lastSegment(url) : text
  if (!usableFilename(filename)) return undefined
  const file: { -readonly [K in keyof SimpleFile]: SimpleFile[K] } = { filename, url, hashes: digestFromFragment(href) }
  const rp = anchor.attributes.get('data-requires-python')
  if (rp !== undefined && rp.trim() !== '') file.requiresPython = rp
  const yanked = anchor.attributes.get('data-yanked')
  if (yanked !== undefined) file.yanked = yanked === '' ? true : yanked
  const metadata = metadataAttribute(anchor.attributes.get('data-core-metadata') ?? anchor.attributes.get('data-dist-info-metadata'))
  if (metadata !== undefined) file.coreMetadata = metadata
  const provenance = anchor.attributes.get('data-provenance')
  if (provenance !== undefined) {
    const resolved = resolveUrl(provenance, base)
    if (resolved !== undefined) file.provenance = resolved
  }
  return Object.freeze(file)
}
