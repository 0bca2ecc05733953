/**
 * The HTTP/1.1 response head of an artifact exchange: found in the reads as
 * they come (a head may span several), bounded in size, then parsed into a
 * status and headers. Apart from the body framing because a head is parsed
 * once per response and may allocate; the body path must not.
 */

/** A response head larger than this is refused (undici's default too). */
const MAX_HEAD_BYTES = 64 * 1024
const CRLF2 = Buffer.from('\r\n\r\n')
import { FIELD_VALUE, HEADER_NAME } from './http-field-syntax.js'

export { HEADER_NAME }

/** A head found in full: its text (without the blank line) and where the bytes after it start. */
export interface HeadFound { readonly text: string, readonly rest: number }

/** Collects one response head at a time across reads. */
export class ResponseHeadReader {
  /** The head so far, copied out of the read buffer, when it spans reads. */
  #partial: Buffer | undefined

  /**
   * Looks for the end of the head in `buf[p, end)`. Incomplete: the bytes
   * are kept (all of them are head). Too large: the head outgrew
   * MAX_HEAD_BYTES. Otherwise the head, and the reader is ready for the next.
   */
  scan(buf: Buffer, p: number, end: number): HeadFound | 'incomplete' | 'too-large' {
    let head: Buffer
    let rest: number
    if (this.#partial === undefined) {
      const at = buf.indexOf(CRLF2, p)
      if (at !== -1 && at < end) {
        head = buf.subarray(p, at)
        rest = at + 4
      } else {
        this.#partial = Buffer.from(buf.subarray(p, end))
        return this.#checkSize()
      }
    } else {
      const before = this.#partial.byteLength
      const joined = Buffer.concat([this.#partial, buf.subarray(p, end)])
      const at = joined.indexOf(CRLF2, Math.max(0, before - 3))
      if (at === -1) {
        this.#partial = joined
        return this.#checkSize()
      }
      head = joined.subarray(0, at)
      // The head ends in this read, so whatever follows it is in `buf`.
      rest = end - (joined.byteLength - (at + 4))
    }
    this.#partial = undefined
    return { text: head.toString('latin1'), rest }
  }

  #checkSize(): 'incomplete' | 'too-large' {
    return (this.#partial?.byteLength ?? 0) > MAX_HEAD_BYTES ? 'too-large' : 'incomplete'
  }
}

export interface ResponseHead {
  /** The minor version: '1' for HTTP/1.1, '0' for HTTP/1.0. */
  readonly minor: string
  readonly statusCode: number
  /** Names lowercase; repeated headers joined with ', '. */
  readonly headers: Record<string, string>
}

export type HeadRefusal = 'malformed status line' | 'malformed header'

/**
 * RFC 9112 section 4: reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ).
 * The phrase is optional here, as llhttp reads it.
 */
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/
/** SP and HTAB only: RFC 9112's OWS, unlike String.prototype.trim's whitespace. */
function trimOws(value: string): string {
  let start = 0
  let end = value.length
  while (start < end && (value.charCodeAt(start) === 0x20 || value.charCodeAt(start) === 0x09)) start++
  while (end > start && (value.charCodeAt(end - 1) === 0x20 || value.charCodeAt(end - 1) === 0x09)) end--
  return value.slice(start, end)
}

/**
 * Parses a head's text (latin1, without its blank line); a string is the
 * reason it is refused. Strict per RFC 9112: a line is ended by CRLF only,
 * so a bare CR or LF anywhere is refused, as is obs-fold (a line starting
 * with SP or HTAB, section 5.2), whitespace between a name and its colon
 * (section 5.1), and a control byte in a value.
 */
export function parseResponseHead(text: string): ResponseHead | HeadRefusal {
  const lines = text.split('\r\n')
  const status = STATUS_LINE.exec(lines[0] ?? '')
  if (status === null) return 'malformed status line'
  const headers: Record<string, string> = {}
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    const colon = line.indexOf(':')
    const name = colon <= 0 ? '' : line.slice(0, colon).toLowerCase()
    if (!HEADER_NAME.test(name)) return 'malformed header'
    const raw = line.slice(colon + 1)
    const value = trimOws(raw)
    if (!FIELD_VALUE.test(value)) return 'malformed header'
    // A length is digits and spaces only, as llhttp reads it: an HTAB there
    // is refused by Node's parser, so a relay between the two must refuse it too.
    if (name === 'content-length' && raw.includes('\t')) return 'malformed header'
    const prior = headers[name]
    headers[name] = prior === undefined ? value : `${prior}, ${value}`
  }
  return { minor: status[1] as string, statusCode: Number(status[2]), headers }
}
