/**
 * What the artifact relay gets back from an upstream (SPEC.md 4.4), and the
 * HTTP/1.1 connections that fetch it: the status, the safe subset of response
 * headers, and the body, bytes verbatim (no decoding).
 *
 * Why not undici here (it still fetches metadata): a relay moves every byte
 * through the process, and node hands each socket read to JavaScript in a
 * freshly allocated 64 KiB buffer. At relay rates that is hundreds of MB/s
 * of short-lived ArrayBuffers, which keep V8 in major collections (profiled
 * in bench/scenarios/artifact-relay.ts: the GC threads used as much CPU as the
 * relay itself). These connections read with node's `onread` option into
 * one reusable buffer per connection, 256 KiB at a time (nginx's relay
 * buffer size), and hand the relay views of it, so relaying allocates
 * nothing per chunk.
 *
 * MUST hold (STYLE.md rule 3, SPEC.md 8):
 * - A view handed to a sink stays valid until the sink asks for more
 *   (`ArtifactBody.proceed`); until then the connection does not read, so
 *   the kernel buffers fill and TCP holds the upstream. Memory is one buffer
 *   per connection, however slow the client.
 * - Destroying the body aborts the request and closes its socket; only a
 *   body read to its exact end, with nothing after it, returns its
 *   connection to the keep-alive pool.
 * - Timeouts: connect, response head, a silent body while reading, and a
 *   body left paused or unread past its cap.
 * - No redirect is followed: any status comes back as it is.
 */
import { Readable } from 'node:stream'
import { connect as netConnect, isIP, type Socket } from 'node:net'
import { connect as tlsConnect, rootCertificates, type ConnectionOptions } from 'node:tls'
import { ServiceError } from '../errors.js'
import { transportFailure } from './transport-failure.js'
import type { LookupCallback } from './egress-guard.js'

/**
 * Response headers relayed to the client. `content-encoding` is kept beside
 * the caching and length headers because the bytes are relayed verbatim: an
 * encoded body without its header would reach the client corrupted.
 */
export const SAFE_ARTIFACT_HEADERS = [
  'content-length', 'content-type', 'content-encoding', 'etag', 'last-modified', 'cache-control', 'expires', 'age', 'accept-ranges',
] as const
export type SafeArtifactHeader = (typeof SAFE_ARTIFACT_HEADERS)[number]

export interface ArtifactResponse {
  readonly statusCode: number
  readonly headers: Readonly<Partial<Record<SafeArtifactHeader, string>>>
  /**
   * The body for every answer that has one (a non-success too: the serve
   * path decides), null for HEAD, 204 and 304. The caller MUST consume or
   * destroy it.
   */
  readonly body: ArtifactBody | null
}

export function pickSafeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Partial<Record<SafeArtifactHeader, string>> {
  const out: Partial<Record<SafeArtifactHeader, string>> = {}
  for (const name of SAFE_ARTIFACT_HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    out[name] = Array.isArray(value) ? value.join(', ') : value
  }
  return out
}

/**
 * A consumer that takes body bytes synchronously (the relay). `data` gets a
 * view of the connection's read buffer: return true when done with it, false
 * to keep it (backpressure) and call `ArtifactBody.proceed()` once done.
 */
export interface ArtifactSink {
  data(chunk: Uint8Array): boolean
  /** The body ended at its exact length. */
  end(): void
  /** The body failed; the connection is already closed. */
  error(error: ServiceError): void
}

/** 256 KiB: nginx's relay buffer size (PEERS.md), and 4 loopback segments per read. */
export const READ_BUFFER_BYTES = 256 * 1024
/** A response head larger than this is refused (undici's default too). */
const MAX_HEAD_BYTES = 64 * 1024
const MAX_LINE_BYTES = 4 * 1024
const CRLF2 = Buffer.from('\r\n\r\n')
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const CONTROL = /[\r\n\0]/

export interface ArtifactTimeouts {
  readonly connectMs: number
  readonly headersMs: number
  readonly bodyIdleMs: number
  readonly pausedReadMs: number
}

export interface ArtifactConnectionsOptions {
  readonly timeouts: ArtifactTimeouts
  /** How long an idle keep-alive connection is kept; default 4 s (undici's). */
  readonly keepAliveMs?: number
  /** Connections per origin; unbounded when unset. */
  readonly connections?: number
  /** Extra trust anchor (PEM) added to the default roots. */
  readonly ca?: string
  /** A resolver for net/tls.connect (the egress guard's on the public side). */
  readonly lookup?: (hostname: string, options: object, callback: LookupCallback) => void
  /** Judges a literal address, which never reaches `lookup`. */
  readonly checkAddress?: (address: string) => void
}

export interface ArtifactRequest {
  readonly method: 'GET' | 'HEAD'
  /** Header names lowercase; values are checked for control characters. */
  readonly headers: Readonly<Record<string, string>>
  readonly signal?: AbortSignal
}

type BodyState = 'length' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailers' | 'until-close' | 'done'

const badResponse = (upstream: string, reason: string): ServiceError =>
  new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream, reason } })

/** Signals that a reused keep-alive connection died before any answer: safe to retry once (GET and HEAD are idempotent). */
class StaleConnection extends Error {}

/**
 * One response on one connection: head parsing, body framing (length,
 * chunked, until close), timers, and delivery to a sink or to the Readable.
 */
class UpstreamExchange {
  readonly #conn: Connection
  readonly #method: string
  readonly #upstream: string
  readonly #timeouts: ArtifactTimeouts
  readonly #settleHead: (response: ArtifactResponse | Error) => void
  #head: Buffer | undefined
  #headDone = false
  #received = false
  #keepAlive = false
  #keepAliveHintMs: number | undefined
  #state: BodyState = 'done'
  #remaining = 0
  #line = ''
  #crlf = 0
  #body: ArtifactBody | undefined
  #sink: ArtifactSink | undefined
  /** The consumer kept a view (or the Readable is full): no parsing until it proceeds. */
  #blocked = false
  /** The Readable wants data (it called _read). */
  #wanted = false
  #finished = false
  #timer: NodeJS.Timeout | undefined
  #timerKind: 'headers' | 'idle' | 'paused' | undefined

  constructor(conn: Connection, method: string, upstream: string, timeouts: ArtifactTimeouts, settleHead: (r: ArtifactResponse | Error) => void) {
    this.#conn = conn
    this.#method = method
    this.#upstream = upstream
    this.#timeouts = timeouts
    this.#settleHead = settleHead
    this.#arm('headers')
  }

  get finished(): boolean { return this.#finished }

  #arm(kind: 'headers' | 'idle' | 'paused'): void {
    if (this.#timerKind === kind && this.#timer !== undefined) {
      this.#timer.refresh()
      return
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    const ms = kind === 'headers' ? this.#timeouts.headersMs : kind === 'idle' ? this.#timeouts.bodyIdleMs : this.#timeouts.pausedReadMs
    const reason = kind === 'headers' ? 'no response head in time' : kind === 'idle' ? 'body silent too long' : 'paused read past its cap'
    this.#timerKind = kind
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.fail(new ServiceError('UPSTREAM_TIMEOUT', { data: { upstream: this.#upstream, reason } }))
    }, ms)
    this.#timer.unref()
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerKind = undefined
  }

  /** True while body bytes may be parsed and handed on. */
  #flowing(): boolean {
    return !this.#blocked && (this.#sink !== undefined || this.#wanted)
  }

  /** Bytes arrived in `buf[pos, end)`; returns false to stop the socket reading. */
  received(buf: Buffer, pos: number, end: number): boolean {
    this.#received = true
    return this.pump(buf, pos, end)
  }

  /** Parses what is unparsed; returns false when the consumer holds the buffer. */
  pump(buf: Buffer, pos: number, end: number): boolean {
    let p = pos
    for (;;) {
      if (this.#finished) { this.#conn.consumed(p); return true }
      if (!this.#headDone) {
        if (p >= end) { this.#conn.consumed(p); return true }
        p = this.#parseHead(buf, p, end)
        continue
      }
      if (this.#state === 'done') {
        // A bodiless answer: done at its head; bytes after it spoil the connection.
        this.#complete(p, end)
        continue
      }
      if (!this.#flowing()) {
        this.#conn.consumed(p)
        this.#arm('paused')
        return false
      }
      const state = this.#state as Exclude<BodyState, 'done'>
      if (state === 'length' && this.#remaining === 0) { this.#complete(p, end); continue }
      if (p >= end) {
        this.#conn.consumed(p)
        this.#arm('idle')
        return true
      }
      switch (state) {
        case 'length':
        case 'chunk-data': {
          const take = Math.min(this.#remaining, end - p)
          this.#remaining -= take
          const view = buf.subarray(p, p + take)
          p += take
          if (state === 'chunk-data' && this.#remaining === 0) this.#state = 'chunk-crlf'
          this.#deliver(view)
          break
        }
        case 'until-close': {
          const view = buf.subarray(p, end)
          p = end
          this.#deliver(view)
          break
        }
        case 'chunk-crlf': {
          const expected = this.#crlf === 0 ? 0x0d : 0x0a
          if (buf[p] !== expected) { this.fail(badResponse(this.#upstream, 'malformed chunked body')); return false }
          p++
          if (++this.#crlf === 2) { this.#crlf = 0; this.#state = 'chunk-size' }
          break
        }
        case 'chunk-size':
        case 'trailers': {
          const nl = buf.indexOf(0x0a, p)
          const stop = nl === -1 || nl >= end ? end : nl
          this.#line += buf.toString('latin1', p, stop)
          p = stop
          if (this.#line.length > MAX_LINE_BYTES) { this.fail(badResponse(this.#upstream, 'malformed chunked body')); return false }
          if (stop === end) break
          p++ // the newline
          const line = this.#line.endsWith('\r') ? this.#line.slice(0, -1) : this.#line
          this.#line = ''
          if (state === 'trailers') {
            if (line === '') this.#complete(p, end)
            break
          }
          const hex = (line.split(';', 1)[0] ?? '').trim()
          if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) { this.fail(badResponse(this.#upstream, 'malformed chunked body')); return false }
          const size = parseInt(hex, 16)
          if (size === 0) this.#state = 'trailers'
          else { this.#remaining = size; this.#state = 'chunk-data' }
          break
        }
      }
    }
  }

  #deliver(view: Buffer): void {
    const body = this.#body as ArtifactBody
    if (this.#sink !== undefined) {
      if (!this.#sink.data(view)) this.#blocked = true
    } else if (!body.push(Buffer.from(view))) {
      // The Readable took a copy; it is full until it calls _read.
      this.#wanted = false
    }
  }

  /** Reads the response head from `buf[p, end)`; returns the new position. */
  #parseHead(buf: Buffer, p: number, end: number): number {
    let head: Buffer
    let rest: number
    if (this.#head === undefined) {
      const at = buf.indexOf(CRLF2, p)
      if (at !== -1 && at < end) {
        head = buf.subarray(p, at)
        rest = at + 4
      } else {
        this.#head = Buffer.from(buf.subarray(p, end))
        return this.#checkHeadSize(end)
      }
    } else {
      const before = this.#head.byteLength
      const joined = Buffer.concat([this.#head, buf.subarray(p, end)])
      const at = joined.indexOf(CRLF2, Math.max(0, before - 3))
      if (at === -1) {
        this.#head = joined
        return this.#checkHeadSize(end)
      }
      head = joined.subarray(0, at)
      // The head ends in this read, so whatever follows it is in `buf`.
      rest = end - (joined.byteLength - (at + 4))
    }
    this.#head = undefined
    this.#onHead(head.toString('latin1'))
    return rest
  }

  #checkHeadSize(end: number): number {
    if ((this.#head?.byteLength ?? 0) > MAX_HEAD_BYTES) this.fail(badResponse(this.#upstream, 'response head too large'))
    return end
  }

  #onHead(text: string): void {
    const lines = text.split('\r\n')
    const status = STATUS_LINE.exec(lines[0] ?? '')
    if (status === null) { this.fail(badResponse(this.#upstream, 'malformed status line')); return }
    const code = Number(status[2])
    const headers: Record<string, string> = {}
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string
      const colon = line.indexOf(':')
      const name = colon <= 0 ? '' : line.slice(0, colon).toLowerCase()
      if (!HEADER_NAME.test(name)) { this.fail(badResponse(this.#upstream, 'malformed header')); return }
      const value = line.slice(colon + 1).trim()
      const prior = headers[name]
      headers[name] = prior === undefined ? value : `${prior}, ${value}`
    }
    if (code < 200) return // 1xx: informational; the real head follows

    this.#headDone = true
    const connection = (headers['connection'] ?? '').toLowerCase()
    this.#keepAlive = status[1] === '1' && !/(^|,)\s*close\s*(,|$)/.test(connection)
    const hint = /timeout=(\d+)/.exec(headers['keep-alive'] ?? '')
    if (hint !== null) this.#keepAliveHintMs = Number(hint[1]) * 1000
    const coding = headers['transfer-encoding']
    const length = headers['content-length']
    const bodiless = this.#method === 'HEAD' || code === 204 || code === 304
    if (bodiless) {
      this.#state = 'done'
    } else if (coding !== undefined) {
      if (length !== undefined || !/(^|,)\s*chunked\s*$/i.test(coding)) {
        this.fail(badResponse(this.#upstream, 'unsupported transfer-encoding'))
        return
      }
      this.#state = 'chunk-size'
    } else if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) { this.fail(badResponse(this.#upstream, 'malformed content-length')); return }
      this.#state = 'length'
      this.#remaining = Number(length)
    } else {
      this.#state = 'until-close'
      this.#keepAlive = false
    }
    if (bodiless) {
      this.#disarm()
      this.#settleHead({ statusCode: code, headers: pickSafeHeaders(headers), body: null })
      return
    }
    this.#body = new ArtifactBody(this)
    this.#arm('paused') // unread until a consumer starts
    this.#settleHead({ statusCode: code, headers: pickSafeHeaders(headers), body: this.#body })
  }

  /** The body ended at `p`; anything after it in this read spoils the connection. */
  #complete(p: number, end: number): void {
    if (this.#finished) return
    if (p < end) this.#keepAlive = false
    this.#state = 'done'
    const sink = this.#sink
    const body = this.#body
    this.#finish()
    if (sink !== undefined) sink.end()
    else body?.push(null)
  }

  #finish(): void {
    this.#finished = true
    this.#disarm()
    this.#conn.release(this.#keepAlive, this.#keepAliveHintMs)
  }

  /** The socket ended (EOF) or closed. */
  closed(eof: boolean, error: Error | undefined): void {
    if (this.#finished) return
    if (eof && this.#headDone && this.#state === 'until-close') {
      this.#complete(0, 0)
      return
    }
    if (!this.#received && this.#conn.reused) {
      this.fail(new StaleConnection('the kept-alive connection closed before answering'))
      return
    }
    this.fail(error ?? badResponse(this.#upstream, this.#headDone ? 'body closed early' : 'connection closed before a response'))
  }

  /** Fails the exchange once: the socket is destroyed, the head promise or the body fails. */
  fail(error: Error): void {
    if (this.#finished) return
    this.#finished = true
    this.#disarm()
    this.#conn.destroy()
    if (!this.#headDone) {
      this.#settleHead(error)
      return
    }
    const failure = error instanceof ServiceError ? error : transportFailure(error, this.#upstream).error
    const sink = this.#sink
    this.#sink = undefined
    sink?.error(failure)
    this.#body?.destroy(failure)
  }

  // ---- called by ArtifactBody ----

  attach(sink: ArtifactSink): void {
    this.#sink = sink
    this.#wanted = true
    this.#resume()
  }

  proceed(): void {
    this.#blocked = false
    this.#resume()
  }

  want(): void {
    this.#wanted = true
    this.#resume()
  }

  #resume(): void {
    if (this.#finished) return
    this.#arm('idle')
    if (this.#conn.pump(this)) this.#conn.read()
  }

  /** The consumer destroyed the body: abort unless it already ended. */
  abort(): void {
    if (this.#finished) return
    this.#finished = true
    this.#sink = undefined
    this.#disarm()
    this.#conn.destroy()
  }

}

/**
 * The body of one artifact response. A Readable for any consumer (bytes are
 * copied out of the connection's buffer); the relay uses `attach` instead,
 * which hands it views of the buffer and allocates nothing.
 */
export class ArtifactBody extends Readable {
  readonly #exchange: UpstreamExchange
  #attached = false

  constructor(exchange: UpstreamExchange) {
    super({ highWaterMark: 64 * 1024 })
    this.#exchange = exchange
    // A failure nobody observes (a destroy after the consumer detached) must not end the process.
    this.on('error', () => {})
  }

  /** Starts the zero-copy flow into `sink`. The Readable side then stays unused. */
  attach(sink: ArtifactSink): void {
    if (this.#attached || this.readableFlowing !== null) throw new ServiceError('INTERNAL', { message: 'an artifact body has one consumer' })
    this.#attached = true
    if (this.destroyed) {
      // It failed (or was destroyed) before anyone read it: the sink still hears of it.
      const reason = this.errored
      sink.error(reason instanceof ServiceError ? reason : new ServiceError('UPSTREAM_UNAVAILABLE', { cause: reason ?? undefined, data: { reason: 'body closed before it was read' } }))
      return
    }
    this.#exchange.attach(sink)
  }

  /** The sink is done with the view it kept: parsing and reading continue. */
  proceed(): void {
    this.#exchange.proceed()
  }

  override _read(): void {
    if (!this.#attached) this.#exchange.want()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#exchange.abort()
    callback(error)
  }
}

/** A read the connection has not parsed yet: `buf[0, end)`. */
interface Backlog { readonly buf: Buffer, readonly end: number }

/** The buffer a read lands in while the current one is still held: small, since it is rare. */
const SPARE_BUFFER_BYTES = 64 * 1024

/**
 * One keep-alive connection with its reusable read buffers. node calls
 * `onread.buffer()` after each read for the buffer of the next one; a plain
 * socket reads nothing once the callback returned false, but a TLS socket
 * may still hand over records it already decrypted. So the next buffer is
 * never one still held: the main buffer when it is free, else a spare, else
 * (TLS only) a fresh one, queued in order behind the held read.
 */
class Connection {
  readonly key: string
  readonly socket: Socket
  readonly #pool: ArtifactConnections
  readonly #buf: Buffer
  #spare: Buffer | undefined
  #exchange: UpstreamExchange | undefined
  /** Unparsed bytes of the current read: `#cur[#pos, #end)`. */
  #cur: Buffer
  #pos = 0
  #end = 0
  readonly #backlog: Backlog[] = []
  /** The last read callback returned false (or reads came in since): the current read is held. */
  #paused = false
  #dead = false
  /** The socket ended or closed while reads were still held: told once they are parsed. */
  #closing: { eof: boolean } | undefined
  #idleTimer: NodeJS.Timeout | undefined
  #error: Error | undefined
  reused = false

  constructor(pool: ArtifactConnections, key: string, open: (onread: { buffer: () => Buffer, callback: (n: number, b: Buffer) => boolean }) => Socket) {
    this.#pool = pool
    this.key = key
    this.#buf = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES)
    this.#cur = this.#buf
    this.socket = open({ buffer: () => this.#nextBuffer(), callback: (n, b) => this.#onRead(n, b) })
    this.socket.setNoDelay(true)
    this.socket.on('error', (error) => { this.#error ??= error })
    this.socket.on('end', () => this.#onClose(true))
    this.socket.on('close', () => this.#onClose(false))
  }

  #held(buf: Buffer): boolean {
    return (this.#paused && this.#cur === buf) || this.#backlog.some((b) => b.buf === buf)
  }

  #nextBuffer(): Buffer {
    if (!this.#held(this.#buf)) return this.#buf
    this.#spare ??= Buffer.allocUnsafeSlow(SPARE_BUFFER_BYTES)
    if (!this.#held(this.#spare)) return this.#spare
    return Buffer.allocUnsafe(SPARE_BUFFER_BYTES)
  }

  #onRead(n: number, buf: Buffer): boolean {
    const exchange = this.#exchange
    if (exchange === undefined) {
      // Bytes on an idle connection: nothing asked for them.
      this.destroy()
      return false
    }
    if (this.#paused) {
      this.#backlog.push({ buf, end: n })
      return false
    }
    this.#cur = buf
    this.#pos = 0
    this.#end = n
    const more = exchange.received(buf, 0, n)
    this.#paused = !more
    return more
  }

  #onClose(eof: boolean): void {
    const exchange = this.#exchange
    this.#dead = true
    this.#clearIdle()
    this.#pool.forget(this)
    if (exchange !== undefined && this.#paused && !exchange.finished) {
      // Bytes already read come first: the close is told once they are parsed.
      this.#closing = { eof: eof || (this.#closing?.eof ?? false) }
      return
    }
    if (exchange !== undefined) exchange.closed(eof, this.#error)
    if (!this.socket.destroyed) this.socket.destroy()
  }

  get dead(): boolean { return this.#dead || this.socket.destroyed }

  /** Where parsing stopped in the current read. */
  consumed(pos: number): void {
    this.#pos = pos
  }

  /** Parses held reads in order; true once all are parsed (the socket may read again). */
  pump(exchange: UpstreamExchange): boolean {
    for (;;) {
      if (!exchange.pump(this.#cur, this.#pos, this.#end)) return false
      const next = this.#backlog.shift()
      if (next === undefined) break
      this.#cur = next.buf
      this.#pos = 0
      this.#end = next.end
    }
    this.#paused = false
    const closing = this.#closing
    if (closing !== undefined && this.#exchange === exchange) {
      this.#closing = undefined
      exchange.closed(closing.eof, this.#error)
      if (!this.socket.destroyed) this.socket.destroy()
      return false
    }
    return true
  }

  read(): void {
    this.#paused = false
    // A read callback that returned false stopped the handle; resume() starts it again.
    if (!this.#dead) this.socket.resume()
  }

  begin(exchange: UpstreamExchange, request: string): void {
    this.#clearIdle()
    this.#exchange = exchange
    this.#pos = 0
    this.#end = 0
    this.socket.write(request, 'latin1')
    this.read()
  }

  /** The exchange ended: keep the connection for the next one, or close it. */
  release(keepAlive: boolean, hintMs: number | undefined): void {
    this.#exchange = undefined
    if (!keepAlive || this.#dead) { this.destroy(); return }
    this.reused = true
    this.#pos = 0
    this.#end = 0
    this.read() // an idle connection reads, to notice the server closing it
    this.#pool.park(this, hintMs)
  }

  setIdle(ms: number, onExpire: () => void): void {
    this.#clearIdle()
    this.#idleTimer = setTimeout(onExpire, ms)
    this.#idleTimer.unref()
  }

  #clearIdle(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
  }

  destroy(): void {
    this.#dead = true
    this.#clearIdle()
    this.#pool.forget(this)
    this.socket.destroy()
  }
}

/**
 * The keep-alive pool of artifact connections of one upstream client, per
 * origin (`http(s)://host:port`). Constructed and owned by UpstreamClient.
 */
export class ArtifactConnections {
  readonly #options: ArtifactConnectionsOptions
  readonly #idle = new Map<string, Connection[]>()
  readonly #all = new Set<Connection>()
  readonly #count = new Map<string, number>()
  readonly #waiters = new Map<string, (() => void)[]>()
  #closing = false
  #drained: (() => void) | undefined

  constructor(options: ArtifactConnectionsOptions) {
    this.#options = options
  }

  /**
   * Sends one request and resolves with the response head; the body (when
   * there is one) streams from the connection. Rejects with what failed
   * (a ServiceError, or a socket error for transportFailure), or with the
   * signal's reason when it aborts first.
   */
  async request(url: URL, request: ArtifactRequest, upstream: string): Promise<ArtifactResponse> {
    const lines = [`${request.method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`]
    for (const [name, value] of Object.entries(request.headers)) {
      if (!HEADER_NAME.test(name) || CONTROL.test(value)) throw badResponse(upstream, 'invalid request header')
      lines.push(`${name}: ${value}`)
    }
    const text = `${lines.join('\r\n')}\r\n\r\n`
    for (let attempt = 0; ; attempt++) {
      // A retry after a stale keep-alive connection takes a fresh one.
      const idle = attempt === 0 ? this.#takeIdle(url.origin) : undefined
      try {
        const conn = idle ?? await this.#connect(url, request.signal)
        return await this.#exchange(conn, text, request, upstream)
      } catch (err) {
        if (err instanceof StaleConnection && attempt === 0 && request.signal?.aborted !== true) continue
        if (err instanceof StaleConnection) throw badResponse(upstream, 'connection closed before a response')
        throw err
      }
    }
  }

  #exchange(conn: Connection, text: string, request: ArtifactRequest, upstream: string): Promise<ArtifactResponse> {
    const signal = request.signal
    return new Promise<ArtifactResponse>((resolve, reject) => {
      let onAbort: (() => void) | undefined
      let exchange: UpstreamExchange | undefined
      const settleHead = (result: ArtifactResponse | Error): void => {
        if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort)
        if (result instanceof Error) { reject(result); return }
        // After the head, an abort still tears the body down (as undici's request does).
        if (signal !== undefined && result.body !== null) {
          const body = result.body
          const stop = (): void => { body.destroy(signal.reason instanceof Error ? signal.reason : undefined) }
          signal.addEventListener('abort', stop, { once: true })
          body.once('close', () => signal.removeEventListener('abort', stop))
        }
        resolve(result)
      }
      exchange = new UpstreamExchange(conn, request.method, upstream, this.#options.timeouts, settleHead)
      if (signal !== undefined) {
        if (signal.aborted) { exchange.abort(); reject(signal.reason); return }
        onAbort = () => { exchange?.abort(); reject(signal.reason) }
        signal.addEventListener('abort', onAbort, { once: true })
      }
      conn.begin(exchange, text)
    })
  }

  #takeIdle(key: string): Connection | undefined {
    const list = this.#idle.get(key)
    while (list !== undefined && list.length > 0) {
      const conn = list.pop() as Connection
      if (!conn.dead) return conn
    }
    return undefined
  }

  async #connect(url: URL, signal: AbortSignal | undefined): Promise<Connection> {
    if (this.#closing) throw badResponse(url.host, 'the client is closing')
    const key = url.origin
    const limit = this.#options.connections
    while (limit !== undefined && (this.#count.get(key) ?? 0) >= limit) {
      await new Promise<void>((resolve, reject) => {
        const list = this.#waiters.get(key) ?? []
        this.#waiters.set(key, list)
        const wake = (): void => { signal?.removeEventListener('abort', onAbort); resolve() }
        const onAbort = (): void => {
          const i = list.indexOf(wake)
          if (i !== -1) list.splice(i, 1)
          reject(signal?.reason)
        }
        list.push(wake)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
      const idle = this.#takeIdle(key)
      if (idle !== undefined) return idle
    }
    const host = url.hostname.replace(/^\[|\]$/g, '')
    if (isIP(host) !== 0) this.#options.checkAddress?.(host)
    const port = Number(url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : url.port)
    const { ca, lookup, timeouts } = this.#options
    const conn = new Connection(this, key, (onread) => url.protocol === 'https:'
      // node's TLSSocket takes `onread` (when it makes its own socket); its typings omit it.
      ? tlsConnect({
        host, port, onread, ...(lookup === undefined ? {} : { lookup }),
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(ca === undefined ? {} : { ca: [...rootCertificates, ca] }),
      } as ConnectionOptions)
      : netConnect({ host, port, onread, ...(lookup === undefined ? {} : { lookup }) }))
    this.#all.add(conn)
    this.#count.set(key, (this.#count.get(key) ?? 0) + 1)
    const socket = conn.socket
    const ready = url.protocol === 'https:' ? 'secureConnect' : 'connect'
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new ServiceError('UPSTREAM_TIMEOUT', { data: { upstream: url.host, reason: 'connect timeout' } })), timeouts.connectMs)
      timer.unref()
      const onAbort = (): void => done(signal?.reason ?? new Error('aborted'))
      const done = (err?: unknown): void => {
        clearTimeout(timer)
        socket.off(ready, onReady)
        socket.off('error', onError)
        signal?.removeEventListener('abort', onAbort)
        if (err === undefined) { resolve(); return }
        conn.destroy()
        reject(err)
      }
      const onReady = (): void => done()
      const onError = (err: Error): void => done(err)
      socket.once(ready, onReady)
      socket.once('error', onError)
      if (signal?.aborted === true) onAbort()
      else signal?.addEventListener('abort', onAbort, { once: true })
    })
    return conn
  }

  /** Keeps a connection idle for reuse. */
  park(conn: Connection, hintMs: number | undefined): void {
    if (this.#closing) { conn.destroy(); return }
    const base = this.#options.keepAliveMs ?? 4_000
    // A server's own keep-alive hint, less a second of margin, as undici does.
    const ms = hintMs === undefined ? base : Math.min(base, Math.max(0, hintMs - 1_000))
    if (ms === 0) { conn.destroy(); return }
    const list = this.#idle.get(conn.key) ?? []
    this.#idle.set(conn.key, list)
    list.push(conn)
    conn.setIdle(ms, () => conn.destroy())
    this.#wake(conn.key)
  }

  /** A connection closed: drop it from the books. */
  forget(conn: Connection): void {
    if (!this.#all.delete(conn)) return
    const list = this.#idle.get(conn.key)
    const i = list?.indexOf(conn) ?? -1
    if (i !== -1) list?.splice(i, 1)
    this.#count.set(conn.key, (this.#count.get(conn.key) ?? 1) - 1)
    this.#wake(conn.key)
    if (this.#closing && this.#all.size === 0) this.#drained?.()
  }

  #wake(key: string): void {
    this.#waiters.get(key)?.shift()?.()
  }

  /** Closes idle connections now and the others as their exchanges end. */
  async close(): Promise<void> {
    this.#closing = true
    for (const list of this.#idle.values()) for (const conn of [...list]) conn.destroy()
    if (this.#all.size === 0) return
    await new Promise<void>((resolve) => { this.#drained = resolve })
  }

  /** Closes every connection at once, in-flight ones too. */
  destroy(): void {
    this.#closing = true
    for (const conn of [...this.#all]) conn.destroy()
  }
}
