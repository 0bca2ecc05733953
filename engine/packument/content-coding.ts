/**
 * Content codings of JSON answers (issue 17 item 1; RFC 9110 12.5.3 and
 * 8.4): which coding a request's `Accept-Encoding` takes, how the coded
 * representation's ETag differs from the identity one, and the compression
 * itself (run in the worker pool, never on the event loop).
 *
 * Choices (README, "Compressed answers"):
 * - Offered: `br` and `gzip`, preferred in that order at equal q-values
 *   (br is about 15% smaller on packuments and as fast at the quality used).
 * - An answer under COMPRESS_MIN_BYTES goes as identity: coding a small
 *   envelope costs more than the bytes it saves.
 * - A request that refuses every coding, identity included
 *   (`identity;q=0, *;q=0`), gets identity anyway: RFC 9110 12.5.3 lets the
 *   server disregard the field rather than answer 406, and a registry client
 *   that cannot read identity does not exist.
 * - Each coding has its own strong ETag: the identity tag with `-br` or
 *   `-gzip` inside the quotes, so a cache never confuses representations.
 */
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

export type ContentCoding = 'br' | 'gzip' | 'identity'

export const OFFERED_CODINGS: readonly ContentCoding[] = ['br', 'gzip']

/** Smallest body worth coding. */
export const COMPRESS_MIN_BYTES = 1024

/** Brotli quality 4 and gzip level 6: typescript's 10.5 MB packument codes in about 40 ms either way. */
export const BROTLI_QUALITY = 4
export const GZIP_LEVEL = 6

/** Below the smallest q-value a client can write (0.001). */
const UNLISTED_IDENTITY_Q = 0.0005

interface Preference { readonly coding: string, readonly q: number }

function parse(header: string): Preference[] {
  const out: Preference[] = []
  for (const element of header.split(',')) {
    const [name, ...params] = element.split(';')
    const coding = (name ?? '').trim().toLowerCase()
    if (coding === '') continue
    let q = 1
    for (const param of params) {
      const [key, value] = param.split('=')
      if ((key ?? '').trim().toLowerCase() !== 'q') continue
      const parsed = Number((value ?? '').trim())
      // A malformed weight reads as 0 (not acceptable), never as a preference.
      q = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test((value ?? '').trim()) ? parsed : 0
    }
    out.push({ coding, q })
  }
  return out
}

/** The coding to answer with, per RFC 9110 12.5.3. No header means identity. */
export function negotiateCoding(acceptEncoding: string | undefined, offered: readonly ContentCoding[] = OFFERED_CODINGS): ContentCoding {
  if (acceptEncoding === undefined || acceptEncoding.trim() === '') return 'identity'
  const preferences = parse(acceptEncoding)
  const weight = (coding: string): number | undefined => {
    const exact = preferences.find((p) => p.coding === coding || (coding === 'gzip' && p.coding === 'x-gzip'))
    if (exact !== undefined) return exact.q
    return coding === '*' || coding === 'identity' ? undefined : preferences.find((p) => p.coding === '*')?.q
  }
  // Identity is acceptable unless excluded (`identity;q=0`, or `*;q=0` with no identity entry); unlisted, it is the
  // least preferred choice, below any coding the client accepts.
  const listed = preferences.find((p) => p.coding === 'identity')
  const identityQ = listed !== undefined ? listed.q : (weight('*') === 0 ? 0 : UNLISTED_IDENTITY_Q)
  let best: ContentCoding = 'identity'
  let bestQ = identityQ
  for (const coding of offered) {
    const q = weight(coding) ?? 0
    // Ties go to the coding (over identity) and to the earlier offered coding (br before gzip).
    if (q > 0 && (q > bestQ || (q === bestQ && best === 'identity'))) {
      best = coding
      bestQ = q
    }
  }
  return best
}

/** The coded representation's ETag: the identity tag with the coding inside its quotes, weakness kept. */
export function codedEtag(etag: string, coding: ContentCoding): string {
  if (coding === 'identity') return etag
  const weak = etag.startsWith('W/')
  const opaque = weak ? etag.slice(2) : etag
  const inner = opaque.startsWith('"') && opaque.endsWith('"') && opaque.length >= 2 ? opaque.slice(1, -1) : opaque
  return `${weak ? 'W/' : ''}"${inner}-${coding}"`
}

/** Codes `body` (synchronously: call it off the event loop, in a pool thread). */
export function compressBody(body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>): Buffer {
  if (coding === 'gzip') return gzipSync(body, { level: GZIP_LEVEL })
  return brotliCompressSync(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength,
    },
  })
}
