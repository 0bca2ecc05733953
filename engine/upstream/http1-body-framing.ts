/**
 * Where an HTTP/1.1 response body ends (RFC 9112 section 6): none (HEAD, 204,
 * 304), content-length or chunked; a body that runs until the server
 * closes is refused (see `start`). Apart from the
 * exchange so the framing rules read as one state machine; it finds body
 * bytes as views of the read buffer and allocates nothing per chunk.
 */

import { CONTENT_LENGTH } from './http-field-syntax.js'

export type BodyState = 'length' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailers' | 'done'

export type FramingRefusal = 'unsupported transfer-encoding' | 'malformed content-length' | 'body delimited by close'

// A repeated Content-Length arrives joined with ', ' and so fails CONTENT_LENGTH.

/** A chunk-size or trailer line longer than this is refused. */
const MAX_LINE_BYTES = 4 * 1024

/** The framing of one response body, fed the bytes after its head in order. */
export class BodyFraming {
  #state: BodyState = 'done'
  #remaining = 0
  #line = ''
  #crlf = 0
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
  start(method: string, statusCode: number, headers: Readonly<Record<string, string>>): FramingRefusal | undefined {
    const coding = headers['transfer-encoding']
    const length = headers['content-length']
    if (length !== undefined && !CONTENT_LENGTH.test(length)) return 'malformed content-length'
    if (coding !== undefined && length !== undefined) return 'unsupported transfer-encoding'
    if (method === 'HEAD' || statusCode === 204 || statusCode === 304) {
      this.#state = 'done'
    } else if (coding !== undefined) {
      // chunked alone: any other coding would reach the client re-framed but still encoded.
      if (!/^chunked$/i.test(coding)) return 'unsupported transfer-encoding'
      this.#state = 'chunk-size'
    } else if (length !== undefined) {
      this.#state = 'length'
      this.#remaining = Number(length)
    } else {
      // RFC 9112 section 6.3 item 8: the body would end when the connection
      // closes. A cut cannot be told from that end: Node reports a TLS
      // close_notify and a bare TCP FIN alike (both are 'end'), so a
      // truncated body would pass as whole and be mirrored. Refused.
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
        if (this.#line.length > MAX_LINE_BYTES) return 'malformed'
        if (stop === end) return 'more'
        this.pos = stop + 1 // the newline
        const line = this.#line.endsWith('\r') ? this.#line.slice(0, -1) : this.#line
        this.#line = ''
        if (state === 'trailers') return line === '' ? 'end' : 'more'
        const hex = (line.split(';', 1)[0] ?? '').trim()
        if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) return 'malformed'
        const size = parseInt(hex, 16)
        if (size === 0) this.#state = 'trailers'
        else { this.#remaining = size; this.#state = 'chunk-data' }
        return 'more'
      }
      case 'done':
        return 'end'
    }
  }
}
