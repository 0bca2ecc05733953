/**
 * The HTTP/1.1 response head of an artifact exchange: found in the reads as
 * they come (a head may span several), bounded in size, then parsed into a
 * status and headers. Apart from the body framing because a head is parsed
 * once per response and may allocate; the body path must not.
 */

/** A response head larger than this is refused (undici's default too). */
const MAX_HEAD_BYTES = 64 * 1024
const CRLF2 = Buffer.from('\r\n\r\n')
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/
/** RFC 9110's token: a valid header name, in responses and in the requests we write. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

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

/** Parses a head's text; a string is the reason it is malformed. */
export function parseResponseHead(text: string): ResponseHead | 'malformed status line' | 'malformed header' {
  const lines = text.split('\r\n')
  const status = STATUS_LINE.exec(lines[0] ?? '')
  if (status === null) return 'malformed status line'
  const headers: Record<string, string> = {}
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    const colon = line.indexOf(':')
    const name = colon <= 0 ? '' : line.slice(0, colon).toLowerCase()
    if (!HEADER_NAME.test(name)) return 'malformed header'
    const value = line.slice(colon + 1).trim()
    const prior = headers[name]
    headers[name] = prior === undefined ? value : `${prior}, ${value}`
  }
  return { minor: status[1] as string, statusCode: Number(status[2]), headers }
}
