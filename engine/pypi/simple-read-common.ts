/**
 * Checks shared by the PEP 503 and PEP 691 readers: size and count bounds,
 * the API version (PEP 629), URLs, file names, digests and upload times.
 */
import { ServiceError } from '../errors.js'
import type { Hashes, ReadLimits } from './simple-model.js'

export function checkSize(byteLength: number, limits: ReadLimits, project: string): void {
  if (byteLength > limits.maxBytes) {
    throw new ServiceError('RESPONSE_TOO_LARGE', { data: { project, bytes: byteLength, maxBytes: limits.maxBytes } })
  }
}

export function checkFileCount(count: number, limits: ReadLimits, project: string): void {
  if (count > limits.maxFiles) {
    throw new ServiceError('STRUCTURE_LIMIT', { data: { project, files: count, maxFiles: limits.maxFiles } })
  }
}

export function decodeUtf8(body: Uint8Array, project: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body)
  } catch (cause) {
    throw new ServiceError('UPSTREAM_DECODE', { cause, data: { project, reason: 'not UTF-8' } })
  }
}

const API_VERSION = /^([0-9]+)\.([0-9]+)$/

/**
 * PEP 629: a client MUST refuse a major version it does not know; a higher
 * minor version is read as the newest minor it knows.
 */
export function checkApiVersion(text: string | undefined, project: string): string {
  if (text === undefined) return '1.0'
  const m = API_VERSION.exec(text.trim())
  if (m === null || m[1] !== '1') {
    throw new ServiceError('UPSTREAM_DECODE', { data: { project, reason: 'unsupported api-version', apiVersion: text.slice(0, 32) } })
  }
  return `1.${String(Number(m[2]))}`
}

/** An absolute http(s) URL with the fragment removed, or undefined. */
export function resolveUrl(href: string, base: string): string | undefined {
  let url: URL
  try {
    url = new URL(href, base)
  } catch {
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  url.hash = ''
  return url.href
}

/** A file name is one path segment: no separators, no dot segments, no control characters. */
// eslint-disable-next-line no-control-regex
const BAD_FILENAME = /[/\\\u0000-\u001f\u007f]/

export function usableFilename(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && name.length <= 512 && !BAD_FILENAME.test(name)
}

const HASH_NAME = /^[a-z0-9_]{1,32}$/
const HEX = /^[0-9a-f]{8,256}$/

/** Keeps well-formed entries only: lower-case names and hex values. */
export function cleanHashes(entries: Iterable<readonly [string, unknown]>): Hashes {
  const out: Record<string, string> = {}
  for (const [name, value] of entries) {
    if (typeof value !== 'string') continue
    const n = name.toLowerCase()
    const v = value.toLowerCase()
    if (HASH_NAME.test(n) && HEX.test(v) && !Object.hasOwn(out, n)) out[n] = v
  }
  return Object.freeze(out)
}

/** An ISO 8601 time that names its zone (PEP 700 asks for UTC, `Z`): its ms, else undefined. */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

export function uploadTimeMs(text: string): number | undefined {
  if (!ISO_WITH_ZONE.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isFinite(ms) ? ms : undefined
}
