/**
 * One request and its response on the uWS front door.
 *
 * uWS contracts (STYLE.md rule 1, uWebSockets.js docs): the abort handler MUST
 * be registered before the handler returns or awaits, and the request object
 * is gone once the handler returns, so everything needed is copied here,
 * synchronously, in the constructor. After an abort or the end of the
 * response, `res` MUST NOT be touched again: every write goes through this
 * class, which checks `#closed` first. Writes made outside the synchronous
 * handler are corked (status, headers and first chunk in one syscall).
 *
 * `onClose` callbacks run exactly once however the exchange ends (complete,
 * client abort, cut), which is where admission charges return and upstream
 * requests are aborted.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { ServiceError } from '../../engine/errors.js'
import { CONTENT_LENGTH, isValidField } from '../../engine/upstream/http-field-syntax.js'
import { statusLine } from './status-text.js'

export type CloseReason = 'completed' | 'aborted' | 'cut'

export interface ExchangeHooks {
  /** True while the process drains: every response then carries `Connection: close` (SPEC.md 3.1). */
  readonly draining: () => boolean
  /** Called once when the exchange ends, for in-flight accounting. */
  readonly settled: (exchange: Exchange) => void
}

const JSON_TYPE = 'application/json'

export class Exchange {
  readonly method: string
  /** Raw path, percent-encoding preserved (`/js/@scope%2fname`). */
  readonly path: string
  readonly query: string
  readonly headers: ReadonlyMap<string, string>
  readonly remoteAddress: string

  readonly #res: HttpResponse
  readonly #hooks: ExchangeHooks
  #closed = false
  #reason: CloseReason | undefined
  #inHandler = true
  #headersSent = false
  readonly #onClose: ((reason: CloseReason) => void)[] = []
  #onWritable: ((offset: number) => boolean | void) | undefined

  constructor(res: HttpResponse, req: HttpRequest, hooks: ExchangeHooks) {
    this.#res = res
    this.#hooks = hooks
    res.onAborted(() => this.#settle('aborted'))
    this.method = req.getMethod().toUpperCase()
    this.path = req.getUrl()
    this.query = req.getQuery() ?? ''
    const headers = new Map<string, string>()
    // A repeated field is one list (RFC 9110 section 5.3): joined, never last-wins,
    // so a check reads every Via element and sees two Content-Lengths as two.
    req.forEach((key, value) => {
      const prior = headers.get(key)
      headers.set(key, prior === undefined ? value : `${prior}${key === 'cookie' ? '; ' : ', '}${value}`)
    })
    this.headers = headers
    this.remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString()
  }

  /** Marks the end of the synchronous handler; later writes are corked. */
  leaveHandler(): void {
    this.#inHandler = false
  }

  get closed(): boolean { return this.#closed }
  get aborted(): boolean { return this.#reason === 'aborted' }
  get headersSent(): boolean { return this.#headersSent }

  header(name: string): string | undefined {
    return this.headers.get(name)
  }

  /** Runs once when the exchange ends, however it ends. Runs at once if it already ended. */
  onClose(fn: (reason: CloseReason) => void): void {
    if (this.#reason !== undefined) fn(this.#reason)
    else this.#onClose.push(fn)
  }

  /** A complete response in one corked write. */
  /** `close`: end the connection after this response, whatever the client asked. */
  respond(status: number, headers: Readonly<Record<string, string>>, body?: Uint8Array | string, options: { head?: boolean; close?: boolean } = {}): void {
    if (this.#closed) return
    const draining = this.#hooks.draining() || options.close === true
    this.#write(() => {
      // With closeConnection, uWS writes `Connection: close` itself: writing it too would send it twice.
      if (options.head === true) {
        // uWS writes the reported length itself; a second content-length header would be invalid.
        const { 'content-length': length, ...rest } = headers
        if (length === undefined || !CONTENT_LENGTH.test(length)) {
          // uWS refuses an undefined length: without one (a 304), our own header asks the client to close.
          // A malformed one is never passed on: uWS would read '-5' as 2^64 - 5.
          this.#writeHead(status, rest, draining)
          this.#res.endWithoutBody()
        } else {
          this.#writeHead(status, rest, false)
          this.#res.endWithoutBody(Number(length), draining)
        }
      } else {
        this.#writeHead(status, headers, false)
        this.#res.end(body ?? '', draining)
      }
    })
    this.#settle('completed')
  }

  respondJson(status: number, value: unknown, options: { head?: boolean; close?: boolean; headers?: Readonly<Record<string, string>> } = {}): void {
    const body = JSON.stringify(value)
    this.respond(status, { 'content-type': JSON_TYPE, ...options.headers }, options.head === true ? undefined : body, options)
  }

  /** The SPEC.md 2.4 envelope with the status of the error's code and its `Retry-After`. */
  respondError(error: ServiceError, options: { head?: boolean; close?: boolean } = {}): void {
    const headers: Record<string, string> = error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) }
    this.respondJson(error.status, { error: error.message }, { ...options, headers })
  }

  /** Starts a streamed response. Use `write`/`tryEnd` for the body, then `end`. */
  writeHead(status: number, headers: Readonly<Record<string, string>>): void {
    if (this.#closed) return
    const draining = this.#hooks.draining()
    this.#write(() => this.#writeHead(status, headers, draining))
  }

  /**
   * Writes a chunk of a body of unknown length. Returns false under
   * backpressure: pause the source and resume from `onWritable`.
   */
  write(chunk: Uint8Array): boolean {
    if (this.#closed) return false
    let ok = false
    this.#write(() => { ok = this.#res.write(chunk) })
    return ok
  }

  /**
   * Writes a chunk of a body of known total size. Returns `ok` false under
   * backpressure (uWS keeps the unsent rest: resume from `onWritable` with
   * `writeOffset`), and `done` true once the whole body is out.
   */
  tryEnd(chunk: Uint8Array, totalSize: number): { ok: boolean; done: boolean } {
    if (this.#closed) return { ok: false, done: false }
    let result: [boolean, boolean] = [false, false]
    this.#write(() => { result = this.#res.tryEnd(chunk, totalSize) })
    if (result[1]) this.#settle('completed')
    return { ok: result[0], done: result[1] }
  }

  /** Bytes of the body uWS has accepted so far (for resuming after backpressure). */
  writeOffset(): number {
    return this.#closed ? 0 : this.#res.getWriteOffset()
  }

  /**
   * Registers the single drain callback used while paused on backpressure.
   * `fn` gets uWS's write offset and returns false when it is still held
   * back (uWS then calls again on the next drain); nothing runs once closed.
   */
  onWritable(fn: (offset: number) => boolean | void): void {
    if (this.#onWritable === undefined) {
      this.#res.onWritable((offset) => {
        if (this.#closed) return true
        return this.#onWritable?.(offset) !== false
      })
    }
    this.#onWritable = fn
  }

  /**
   * A complete response of known bytes, sent with backpressure: `tryEnd`
   * until uWS has taken the last byte, resuming from `onWritable`, so uWS
   * never holds an unsent copy outside the caller's accounting. Resolves
   * when the exchange ends: the last byte written, or the client gone. A
   * HEAD gets the status and headers (with the length) and no body.
   */
  respondBuffered(status: number, headers: Readonly<Record<string, string>>, body: Uint8Array, options: { head?: boolean } = {}): Promise<CloseReason> {
    if (options.head === true) {
      this.respond(status, { ...headers, 'content-length': String(body.byteLength) }, undefined, { head: true })
    }
    return new Promise((resolve) => {
      this.onClose(resolve)
      if (this.#closed) return
      this.writeHead(status, headers)
      const total = body.byteLength
      const send = (offset: number): boolean => this.tryEnd(body.subarray(offset), total).ok
      if (!send(0) && !this.#closed) this.onWritable(send)
    })
  }

  /** Ends a streamed body of unknown length. */
  end(): void {
    if (this.#closed) return
    const draining = this.#hooks.draining()
    this.#write(() => this.#res.end(undefined, draining))
    this.#settle('completed')
  }

  /**
   * Cuts the connection: the client sees a short body, never a silently
   * truncated success (an upstream failure after the first byte, SPEC.md 4.4).
   */
  cut(): void {
    if (this.#closed) return
    // Settle first: uWS calls onAborted synchronously from close(), which must not rename the reason.
    this.#settle('cut')
    this.#res.close()
  }

  /** `closeHeader`: write `Connection: close` (streamed responses, whose headers leave before uWS could add it). */
  #writeHead(status: number, headers: Readonly<Record<string, string>>, closeHeader: boolean): void {
    this.#res.writeStatus(statusLine(status))
    for (const name in headers) {
      const value = headers[name]
      // uWS writes Content-Length itself (from end, tryEnd or endWithoutBody); a second one is invalid.
      // Every field is checked here, the one place headers leave: uWS writes
      // bytes as given, so a CR or LF in a value would split the response.
      if (value !== undefined && name !== 'content-length' && isValidField(name, value)) this.#res.writeHeader(name, value)
    }
    if (closeHeader) this.#res.writeHeader('connection', 'close')
    this.#headersSent = true
  }

  #write(fn: () => void): void {
    if (this.#inHandler) fn()
    else this.#res.cork(fn)
  }

  #settle(reason: CloseReason): void {
    if (this.#reason !== undefined) return
    this.#closed = true
    this.#reason = reason
    this.#onWritable = undefined
    for (const fn of this.#onClose.splice(0)) {
      try { fn(reason) } catch { /* a close hook must not break the others */ }
    }
    this.#hooks.settled(this)
  }
}
