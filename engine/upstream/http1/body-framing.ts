/**
 * Where an HTTP/1.1 response body ends (RFC 9112 section 6): none (HEAD, 204,
 * 304), content-length or chunked; a body that runs until the server
 * closes is refused (see `start`). The chunked framing is read as strictly
 * as RFC 9112 section 7.1 writes it, and at least as strictly as llhttp
 * (test/upstream/http1/differential.test.ts): a relay that ends a body
 * where another parser would not is a cut passed as whole, or a desync on a
 * kept-alive connection. Apart from the
 * exchange so the framing rules read as one state machine; it finds body
 * bytes as views of the read buffer and allocates nothing per chunk.
 */

import { CONTENT_LENGTH } from '../http-field-syntax.js'
import { MAX_HEAD_BYTES, parseFieldLine, type ResponseHead } from './head-parser.js'

export type BodyState = 'length' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailers' | 'done'

export type FramingRefusal = 'unsupported transfer-encoding' | 'transfer-encoding in HTTP/1.0' | 'malformed content-length' | 'body delimited by close'

// A repeated Content-Length arrives joined with ', ' and so fails CONTENT_LENGTH.

/** A chunk-size line (extensions included) longer than this is refused; llhttp allows 16 KiB of extensions, we need none. */
const MAX_LINE_BYTES = 4 * 1024

/** RFC 9110's token, as a pattern to compose. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
/** RFC 9110 section 5.6.4: quoted-string, without obs-text's controls. */
const QUOTED = String.raw`"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"`
/**
 * RFC 9112 section 7.1: chunk-size [ chunk-ext ], the CRLF already gone.
 * No whitespace anywhere: the grammar's BWS is what a sender MUST NOT
 * generate, and llhttp refuses it. Leading zeros are allowed; the size is
 * checked after them.
 */
const CHUNK_LINE = new RegExp(`^0*([0-9A-Fa-f]{1,12})(?:;${TOKEN}(?:=(?:${TOKEN}|${QUOTED}))?)*$`)

/** The framing of one response body, fed the bytes after its head in order. */
export class BodyFraming {
  #state: BodyState = 'done'
  #remaining = 0
  #line = ''
  #crlf = 0
  /** Bytes of the trailer section so far, bounded like a head. */
  #trailerBytes = 0
  /** Where the last `step` stopped parsing. */
  pos = 0

  get state(): BodyState { return this.#state }

  /** A content-length body with nothing left to read: it ends here. */
  get lengthReached(): boolean { return this.#state === 'length' && this.#remaining === 0 }

  /**
   * Picks the framing from the head; a string is the reason the head is
   * refused. A Content-Length is checked on every answer, bodiless ones
   * included: a HEAD or 304 reports it to the client, so a malformed one
   * (negative, not a number, repeated, past 15 digits) is refused, never
   * turned into a length (RFC 9112 section 6.3 items 3 and 5).
   */
  start(method: string, head: Pick<ResponseHead, 'minor' | 'statusCode' | 'headers'>): FramingRefusal | undefined {
    const { statusCode, headers } = head
    const coding = headers['transfer-encoding']
    const length = headers['content-length']
    if (length !== undefined && !CONTENT_LENGTH.test(length)) return 'malformed content-length'
    if (coding !== undefined && length !== undefined) return 'unsupported transfer-encoding'
    // RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as faulty framing.
    if (coding !== undefined && head.minor === '0') return 'transfer-encoding in HTTP/1.0'
    // chunked alone, whatever the status: any other coding would reach the client re-framed but still
    // encoded, and on an answer without a body llhttp 9.4 (Node 22 and 24) refuses malformed lists
    // (an empty element, a parameter) that Node 20's 9.3 let through on a 304 (the differential fuzz on Node 24).
    if (coding !== undefined && !/^chunked$/i.test(coding)) return 'unsupported transfer-encoding'
    if (method === 'HEAD' || statusCode === 204 || statusCode === 304) {
      this.#state = 'done'
    } else if (coding !== undefined) {
      this.#state = 'chunk-size'
    } else if (length !== undefined) {
      this.#state = 'length'
      this.#remaining = Number(length)
    } else {
      // RFC 9112 section 6.3 item 8: the body would end when the connection
      // closes. A cut cannot be told from that end: Node reports a TLS
      // close_notify and a bare TCP FIN alike (both are 'end'; its TLS layer
      // exposes no shutdown state), and plain http has no close_notify at
      // all; so a truncated body would pass as whole and be mirrored.
      // Refused before the first byte, on both legs (a private one falls through).
      return 'body delimited by close'
    }
    return undefined
  }

  /** The body ended (or is bodiless): nothing more is parsed. */
  finish(): void {
    this.#state = 'done'
  }

  /**
   * Parses one step of `buf[p, end)` (p < end, state not 'done') and sets
   * `pos`. Returns body bytes (a view of `buf`), 'more' when it only moved
   * through framing, 'end' when the body ended at `pos`, or 'malformed'.
   */
  step(buf: Buffer, p: number, end: number): Buffer | 'more' | 'end' | 'malformed' {
    const state = this.#state
    switch (state) {
      case 'length':
      case 'chunk-data': {
        const take = Math.min(this.#remaining, end - p)
        this.#remaining -= take
        this.pos = p + take
        if (state === 'chunk-data' && this.#remaining === 0) this.#state = 'chunk-crlf'
        return buf.subarray(p, p + take)
      }
      case 'chunk-crlf': {
        const expected = this.#crlf === 0 ? 0x0d : 0x0a
        if (buf[p] !== expected) return 'malformed'
        this.pos = p + 1
        if (++this.#crlf === 2) { this.#crlf = 0; this.#state = 'chunk-size' }
        return 'more'
      }
      case 'chunk-size':
      case 'trailers': {
        const nl = buf.indexOf(0x0a, p)
        const stop = nl === -1 || nl >= end ? end : nl
        this.#line += buf.toString('latin1', p, stop)
        this.pos = stop
        if (state === 'trailers') this.#trailerBytes += stop - p
        if (this.#line.length > MAX_LINE_BYTES && state === 'chunk-size') return 'malformed'
        if (this.#trailerBytes >= MAX_HEAD_BYTES) return 'malformed'
        if (stop === end) return 'more'
        this.pos = stop + 1 // the newline
        // RFC 9112 section 7.1: every line of the chunked framing ends with CRLF; a bare LF is refused, as llhttp does.
        if (!this.#line.endsWith('\r')) return 'malformed'
        const line = this.#line.slice(0, -1)
        this.#line = ''
        if (state === 'trailers') {
          if (line === '') return 'end'
          // A trailer is a field line like any in a head; it is not relayed, but
          // it is framing: a malformed one is refused, and so is one that names
          // the framing itself, which a trailer can never carry (RFC 9110
          // section 6.5.1; llhttp refuses a Content-Length there).
          const field = parseFieldLine(line)
          return field === undefined || field[0] === 'content-length' || field[0] === 'transfer-encoding' ? 'malformed' : 'more'
        }
        const size = CHUNK_LINE.exec(line)
        if (size === null) return 'malformed'
        const n = parseInt(size[1] as string, 16)
        if (n === 0) this.#state = 'trailers'
        else { this.#remaining = n; this.#state = 'chunk-data' }
        return 'more'
      }
      case 'done':
        return 'end'
    }
  }
}
