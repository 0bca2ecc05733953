/**
 * One request's response on one artifact connection: the head, the body
 * framing, the timers, and delivery to a sink or to the Readable. Apart from
 * the connection because a connection outlives its exchanges (keep-alive),
 * and this is where the per-response rules of artifact-connection-pool.ts's
 * header (views valid until `proceed`, exact end before reuse, timeouts) are
 * kept.
 */
import { ServiceError } from '../../errors.js'
import { transportFailure } from './transport-failure.js'
import { pickSafeHeaders, type ArtifactResponse } from './artifact-response.js'
import { ArtifactBody, type ArtifactBodySource, type ArtifactSink } from './artifact-body.js'
import { ResponseHeadReader, parseResponseHead } from './head-parser.js'
import { BodyFraming } from './body-framing.js'
import type { ExchangeConnection, ResponseReader } from './exchange-contract.js'
import type { ArtifactClientRequest } from '../../telemetry/artifact-client-channel.js'

export interface ArtifactTimeouts {
  readonly connectMs: number
  readonly headersMs: number
  readonly bodyIdleMs: number
  readonly pausedReadMs: number
}

export const badResponse = (upstream: string, reason: string): ServiceError =>
  new ServiceError('UPSTREAM_UNAVAILABLE', { data: { upstream, reason } })

/** Signals that a reused keep-alive connection died before any answer: safe to retry once (GET and HEAD are idempotent). */
export class StaleConnection extends Error {}

/**
 * One response on one connection: head parsing, body framing (length,
 * chunked, until close), timers, and delivery to a sink or to the Readable.
 */
export class ArtifactExchange implements ArtifactBodySource, ResponseReader {
  readonly #conn: ExchangeConnection
  readonly #method: string
  readonly #upstream: string
  readonly #timeouts: ArtifactTimeouts
  /**
   * Called once, with the response or the reason there is none. It MUST NOT
   * call back into this exchange (attach, destroy) synchronously: it runs in
   * the middle of a parse. The pool settles a promise with it, so callers
   * continue later.
   */
  readonly #settleHead: (response: ArtifactResponse | Error) => void
  /** The request as telemetry sees it; undefined with telemetry off. */
  readonly #traced: ArtifactClientRequest | undefined
  readonly #headReader = new ResponseHeadReader()
  readonly #framing = new BodyFraming()
  #headDone = false
  #received = false
  #keepAlive = false
  #keepAliveHintMs: number | undefined
  #body: ArtifactBody | undefined
  #sink: ArtifactSink | undefined
  /** The consumer kept a view (or the Readable is full): no parsing until it proceeds. */
  #blocked = false
  /** The Readable wants data (it called _read). */
  #wanted = false
  /** A consumer attached or asked for data at least once. */
  #consumerSeen = false
  #finished = false
  #timer: NodeJS.Timeout | undefined
  #timerKind: 'headers' | 'idle' | 'paused' | undefined

  constructor(conn: ExchangeConnection, method: string, upstream: string, timeouts: ArtifactTimeouts, settleHead: (r: ArtifactResponse | Error) => void, traced?: ArtifactClientRequest) {
    this.#conn = conn
    this.#traced = traced
    this.#method = method
    this.#upstream = upstream
    this.#timeouts = timeouts
    this.#settleHead = settleHead
    this.#arm('headers')
  }

  get finished(): boolean { return this.#finished }

  get awaitingConsumer(): boolean {
    return this.#headDone && !this.#finished && !this.#consumerSeen
  }

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
    const framing = this.#framing
    let p = pos
    for (;;) {
      if (this.#finished) { this.#conn.consumed(p); return true }
      if (!this.#headDone) {
        if (p >= end) { this.#conn.consumed(p); return true }
        p = this.#readHead(buf, p, end)
        continue
      }
      if (framing.state === 'done') {
        // A bodiless answer: done at its head; bytes after it spoil the connection.
        this.#complete(p, end)
        continue
      }
      if (!this.#flowing()) {
        this.#conn.consumed(p)
        this.#arm('paused')
        return false
      }
      if (framing.lengthReached) { this.#complete(p, end); continue }
      if (p >= end) {
        this.#conn.consumed(p)
        this.#arm('idle')
        return true
      }
      const step = framing.step(buf, p, end)
      p = framing.pos
      if (step === 'more') continue
      if (step === 'end') { this.#complete(p, end); continue }
      if (step === 'malformed') { this.fail(badResponse(this.#upstream, 'malformed chunked body')); return false }
      this.#deliver(step)
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
  #readHead(buf: Buffer, p: number, end: number): number {
    const found = this.#headReader.scan(buf, p, end)
    if (found === 'incomplete') return end
    if (found === 'too-large' || found === 'bare-lf') {
      this.fail(badResponse(this.#upstream, found === 'too-large' ? 'response head too large' : 'bare LF in the response head'))
      return end
    }
    this.#onHead(found.text)
    return found.rest
  }

  #onHead(text: string): void {
    const head = parseResponseHead(text)
    if (typeof head === 'string') { this.fail(badResponse(this.#upstream, head)); return }
    const { statusCode: code, headers } = head
    // RFC 9110 section 15.2.2: a server MUST NOT switch protocols the request did not ask for (ours never ask).
    if (code === 101) { this.fail(badResponse(this.#upstream, 'unrequested protocol switch')); return }
    if (code < 200) return // 1xx: informational; the real head follows

    // The head is done only once its framing is accepted: a refusal before
    // that settles the head promise with the error (fail() below), so the
    // caller always gets an answer (a private leg falls through).
    const refused = this.#framing.start(this.#method, head)
    if (refused !== undefined) { this.fail(badResponse(this.#upstream, refused)); return }
    this.#headDone = true
    const connection = (headers['connection'] ?? '').toLowerCase()
    this.#keepAlive = head.minor === '1' && !/(^|,)\s*close\s*(,|$)/.test(connection)
    const hint = /timeout=(\d+)/.exec(headers['keep-alive'] ?? '')
    if (hint !== null) this.#keepAliveHintMs = Number(hint[1]) * 1000
    this.#traced?.response(code)
    if (this.#framing.state === 'done') {
      // Bodiless: HEAD, 204 or 304.
      this.#disarm()
      this.#traced?.end()
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
    this.#framing.finish()
    const sink = this.#sink
    const body = this.#body
    this.#finish()
    this.#traced?.end()
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
    this.#traced?.fail(failure)
    const sink = this.#sink
    this.#sink = undefined
    sink?.error(failure)
    this.#body?.destroy(failure)
  }

  // ---- called by ArtifactBody ----

  attach(sink: ArtifactSink): void {
    this.#sink = sink
    this.#consumerSeen = true
    this.#wanted = true
    this.#resume()
  }

  proceed(): void {
    this.#blocked = false
    this.#resume()
  }

  want(): void {
    this.#consumerSeen = true
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
    this.#traced?.fail()
    this.#sink = undefined
    this.#disarm()
    this.#conn.destroy()
  }
}
