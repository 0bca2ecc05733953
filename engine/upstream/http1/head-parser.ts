/**
 * The HTTP/1.1 response head of an artifact exchange: found in the reads as
 * they come (a head may span several), bounded in size, then parsed into a
 * status and headers. Apart from the body framing because a head is parsed
 * once per response and may allocate; the body path must not.
 */

import { FIELD_VALUE, HEADER_NAME } from '../http-field-syntax.js'

export { HEADER_NAME }

/**
 * A response head this large or larger is refused: Node's default
 * `http.maxHeaderSize`, past which llhttp (node:http, and undici on the
 * metadata path) refuses it too. A trailer section has the same bound
 * (body-framing.ts).
 */
export const MAX_HEAD_BYTES = 16 * 1024
const CR = 0x0d
const LF = 0x0a

/** A head found in full: its text (without the blank line) and where the bytes after it start. */
export interface HeadFound { readonly text: string, readonly rest: number }

/**
 * Why a head was refused before it was parsed: larger than MAX_HEAD_BYTES,
 * or a line ended by a bare LF (RFC 9112 section 2.2 lets a recipient accept
 * one; we do not, as llhttp does not: it would otherwise wait for a CRLF
 * CRLF that may never come).
 */
export type HeadScanRefusal = 'too-large' | 'bare-lf'

/** Collects one response head at a time across reads. */
export class ResponseHeadReader {
  /** The head so far, copied out of the read buffer, when it spans reads. */
  #partial: Buffer | undefined

  /**
   * Looks for the end of the head in `buf[p, end)`; never past `end`: the
   * read buffer is reused, and what lies beyond `end` is an older read.
   * Incomplete: the bytes are kept (all of them are head). Otherwise the
   * head or the reason it is refused, and the reader is ready for the next.
   */
  scan(buf: Buffer, p: number, end: number): HeadFound | 'incomplete' | HeadScanRefusal {
    const fresh = buf.subarray(p, end)
    const partial = this.#partial
    const bytes = partial === undefined ? fresh : Buffer.concat([partial, fresh])
    // Every LF is checked once: those in `partial` were checked by an earlier scan.
    for (let i = bytes.indexOf(LF, partial?.byteLength ?? 0); i !== -1; i = bytes.indexOf(LF, i + 1)) {
      if (i === 0 || bytes[i - 1] !== CR) {
        this.#partial = undefined
        return 'bare-lf'
      }
      if (i >= 3 && bytes[i - 2] === LF && bytes[i - 3] === CR) {
        this.#partial = undefined
        const head = bytes.subarray(0, i - 3)
        if (head.byteLength >= MAX_HEAD_BYTES) return 'too-large'
        // The head ends in this read, so whatever follows it is in `buf`.
        return { text: head.toString('latin1'), rest: end - (bytes.byteLength - (i + 1)) }
      }
    }
    // However it ends, a head is at least as long as these bytes less a partial CR LF CR.
    if (bytes.byteLength - 3 >= MAX_HEAD_BYTES) {
      this.#partial = undefined
      return 'too-large'
    }
    this.#partial = partial === undefined ? Buffer.from(fresh) : bytes
    return 'incomplete'
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
    const field = parseFieldLine(lines[i] as string)
    if (field === undefined) return 'malformed header'
    const [name, value] = field
    const prior = headers[name]
    headers[name] = prior === undefined ? value : `${prior}, ${value}`
  }
  return { minor: status[1] as string, statusCode: Number(status[2]), headers }
}

/**
 * One field line without its CRLF (RFC 9112 section 5): a token, a colon
 * with nothing before it, then the value between optional SP or HTAB. The
 * name lowercase and the value trimmed; undefined when the line breaks the
 * grammar: a name with a space or control byte (so obs-fold, a line starting
 * with whitespace, is refused), a value with CR, LF, NUL or another control.
 * Trailer lines (body-framing.ts) are read with it too.
 */
export function parseFieldLine(line: string): readonly [name: string, value: string] | undefined {
  const colon = line.indexOf(':')
  const name = colon <= 0 ? '' : line.slice(0, colon).toLowerCase()
  if (!HEADER_NAME.test(name)) return undefined
  const raw = line.slice(colon + 1)
  const value = trimOws(raw)
  if (!FIELD_VALUE.test(value)) return undefined
  // The framing fields take SP only around their value, as llhttp reads
  // them: it refuses an HTAB in a length, and does not read `chunked<HTAB>`
  // as chunked. Parsers that disagree on framing are what response
  // smuggling is made of, so a relay between two must refuse it outright.
  if ((name === 'content-length' || name === 'transfer-encoding') && raw.includes('\t')) return undefined
  return [name, value]
}
