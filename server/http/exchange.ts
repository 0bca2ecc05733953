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
import { CONTENT_LENGTH } from '../../engine/upstream/http-field-syntax.js'
import { responseField } from './response-fields.js'
import { statusLine } from './status-text.js'

export type CloseReason = 'completed' | 'aborted' | 'cut'

export interface ExchangeHooks {
  /** True while the process drains: every response then carries `Connection: close` (SPEC.md 3.1). */
  readonly draining: () => boolean
  /** Called once when the exchange ends, for in-flight accounting. */
  readonly settled: (exchange: Exchange) => void
}

/** Throttles a request body being read (backpressure on the client's upload). */
export interface BodyFlow {
  pause(): void
  resume(): void
}

export interface RespondOptions {
  /** Answer as to a HEAD: no body, the length it would have. Implied on a HEAD request. */
  readonly head?: boolean
  /** Close the connection after this answer (a request whose framing cannot be trusted). */
  readonly close?: boolean
}

const JSON_TYPE = 'application/json'

export class Exchange {
  readonly method: string
  /** Raw path, percent-encoding preserved (`/js/@scope%2fname`). */
  readonly path: string
  readonly query: string
  readonly headers: ReadonlyMap<string, string>

  readonly #res: HttpResponse
  readonly #hooks: ExchangeHooks
  #remoteAddress: string | undefined
  #closed = false
  #reason: CloseReason | undefined
  #inHandler = true
  #headersSent = false
  #status = 0
  /** A streamed response's status and headers, held until its first write so they leave corked with the first chunk. */
  #head: { status: number; headers: Readonly<Record<string, string>> } | undefined
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
  }

  /**
   * The peer's address as text, read on first use: uWS asks the kernel
   * (getpeername) each time, a syscall per request that no route needs on
   * its hot path (bench/scenarios/artifact-relay.ts). The response is valid
   * until it ends, not only in the synchronous handler; after the end `res`
   * MUST NOT be touched, so an address never read by then is ''.
   */
  get remoteAddress(): string {
    if (this.#remoteAddress === undefined && !this.#closed) this.#remoteAddress = Buffer.from(this.#res.getRemoteAddressAsText()).toString()
    return this.#remoteAddress ?? ''
  }

  /** Marks the end of the synchronous handler; later writes are corked. */
  leaveHandler(): void {
    this.#inHandler = false
  }

  get closed(): boolean { return this.#closed }
  get aborted(): boolean { return this.#reason === 'aborted' }
  get headersSent(): boolean { return this.#headersSent }
  /** The status written, 0 before any (telemetry: `http.response.status_code`). */
  get status(): number { return this.#status }
  /** How the exchange ended; undefined while it runs. */
  get closeReason(): CloseReason | undefined { return this.#reason }
  /**
   * The route template a mount matched (`/js/{package}`), for telemetry's
   * `http.route`; undefined leaves the front door's own pattern. Always a
   * template from a fixed table, never the raw path: series stay bounded.
   */
  routeTemplate: string | undefined

  header(name: string): string | undefined {
    return this.headers.get(name)
  }

  /** Runs once when the exchange ends, however it ends. Runs at once if it already ended. */
  onClose(fn: (reason: CloseReason) => void): void {
    if (this.#reason !== undefined) fn(this.#reason)
    else this.#onClose.push(fn)
  }

  /**
   * A complete response in one corked write. On a HEAD request (or with
   * `head`) no body is sent, whatever the caller passes: the status and
   * headers are GET's, with the length of the body GET would carry (RFC 9110
   * section 9.3.2), from `content-length` or else from `body`. With
   * `close` (or while draining) the connection closes after it.
   */
  respond(status: number, headers: Readonly<Record<string, string>>, body?: Uint8Array | string, options: RespondOptions = {}): void {
    if (this.#closed) return
    this.#head = undefined
    const close = this.#hooks.draining() || options.close === true
    const head = options.head === true || this.method === 'HEAD'
    this.#write(() => {
      if (!head) {
        // With closeConnection, uWS writes `Connection: close` itself: writing it too would send it twice.
        this.#writeHead(status, headers, false)
        this.#res.end(body ?? '', close)
      } else if (options.close === true) {
        // A connection that must close (its framing cannot be trusted): uWS closes
        // only after an endWithoutBody with a length, and the one that completes
        // the response is 0. The length of a refusal is not worth the connection.
        this.#writeHead(status, headers, false)
        this.#res.endWithoutBody(0, true)
      } else {
        // MUST NOT pass a length to endWithoutBody: this uWS build then leaves the
        // response pending, and the next request on the connection closes it. The
        // length is our own header instead, checked digits; uWS adds none.
        // A 304 or 204 carries no length: RFC 9110 section 8.6 allows one on a 304,
        // but clients built on undici (Node's fetch) then fail it as a short body.
        const length = status === 304 || status === 204 ? undefined : headLength(headers['content-length'], body)
        this.#writeHead(status, headers, close, length)
        this.#res.endWithoutBody()
      }
    })
    this.#settle('completed')
  }

  respondJson(status: number, value: unknown, options: RespondOptions & { headers?: Readonly<Record<string, string>> } = {}): void {
    // The body is passed on a HEAD too: respond sends only its length.
    this.respond(status, { 'content-type': JSON_TYPE, ...options.headers }, JSON.stringify(value), options)
  }

  /** The SPEC.md 2.4 envelope with the status of the error's code and its `Retry-After`. */
  respondError(error: ServiceError, options: RespondOptions = {}): void {
    const headers: Record<string, string> = error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) }
    this.respondJson(error.status, { error: error.message }, { ...options, headers })
  }

  /**
   * Starts a streamed response: use `write`/`tryEnd` for the body, then
   * `end`. The status and headers leave with the first write, in the same
   * cork as the first chunk (STYLE.md rule 2).
   */
  writeHead(status: number, headers: Readonly<Record<string, string>>): void {
    if (this.#closed || this.#headersSent) return
    this.#head = { status, headers }
    this.#headersSent = true
  }

  /**
   * Writes a chunk of a body of unknown length. Returns false under
   * backpressure: pause the source and resume from `onWritable`.
   */
  write(chunk: Uint8Array): boolean {
    if (this.#closed) return false
    let ok = false
    this.#write(() => {
      this.#flushHead()
      ok = this.#res.write(chunk)
    })
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
    this.#write(() => {
      this.#flushHead()
      result = this.#res.tryEnd(chunk, totalSize)
    })
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
    if (options.head === true || this.method === 'HEAD') {
      this.respond(status, { ...headers, 'content-length': String(body.byteLength) }, undefined, { head: true })
    }
    return new Promise((resolve) => {
      this.onClose(resolve)
      if (this.#closed) return
      this.writeHead(status, headers)
      const total = body.byteLength
      // The offset uWS reports is into this body: what it has not taken yet is the rest.
      const send = (offset: number): boolean => this.tryEnd(body.subarray(offset), total).ok
      if (!send(0) && !this.#closed) this.onWritable(send)
    })
  }

  /**
   * Reads the request body: `onChunk` gets each chunk, a copy it may keep
   * (uWS neuters its buffer when the callback returns), and whether it is
   * the last; a request without a body gets one empty last chunk. MUST be
   * called from the synchronous handler, before any await: uWS hands body
   * data only to a handler registered there, and drops what arrives before.
   * `pause` stops reading the socket (TCP then holds the client) until
   * `resume`; both do nothing once the exchange has ended.
   */
  readBody(onChunk: (chunk: Uint8Array, last: boolean) => void): BodyFlow {
    this.#res.onData((chunk, last) => {
      if (this.#closed) return
      onChunk(new Uint8Array(chunk.slice(0)), last)
    })
    return {
      pause: () => { if (!this.#closed) this.#res.pause() },
      resume: () => { if (!this.#closed) this.#res.resume() },
    }
  }

  /** Ends a streamed body of unknown length. */
  end(): void {
    if (this.#closed) return
    const draining = this.#hooks.draining()
    this.#write(() => {
      this.#flushHead()
      this.#res.end(undefined, draining)
    })
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

  /** The held status and headers of a streamed response, inside the cork of its first write. */
  #flushHead(): void {
    if (this.#head === undefined) return
    const { status, headers } = this.#head
    this.#head = undefined
    this.#writeHead(status, headers, this.#hooks.draining())
  }

  /**
   * The one place headers leave, so every field is checked here whatever
   * route built it (defence in depth behind the upstream parser and the
   * relay's allowlist): uWS writes bytes as given, and a CR or LF in a value
   * would split the response or forge Set-Cookie and Location. A field that
   * is not valid RFC 9110 syntax, or that frames the message (uWS writes
   * Content-Length and Transfer-Encoding itself, and Connection below), is
   * dropped, never written.
   *
   * `closeHeader`: write `Connection: close` (streamed responses and
   * bodiless ones, whose headers leave before uWS could add it). `length`:
   * the Content-Length of a bodiless answer, the one uWS does not write.
   */
  #writeHead(status: number, headers: Readonly<Record<string, string>>, closeHeader: boolean, length?: number): void {
    this.#res.writeStatus(statusLine(status))
    this.#status = status
    for (const name in headers) {
      const field = responseField(name, headers[name])
      if (field !== undefined) this.#res.writeHeader(field[0], field[1])
    }
    if (length !== undefined) this.#res.writeHeader('content-length', String(length))
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

/** The body length a bodiless answer reports: a well-formed `content-length`, else the body's own. */
function headLength(declared: string | undefined, body: Uint8Array | string | undefined): number | undefined {
  if (declared !== undefined) {
    // A malformed one is never passed on: no length is better than a false one.
    return CONTENT_LENGTH.test(declared) ? Number(declared) : undefined
  }
  if (body === undefined) return undefined
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
}
