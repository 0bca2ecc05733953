/**
 * The HTTP/1.1 keep-alive connections that fetch artifacts for the relay
 * (SPEC.md 4.4): per origin, with a cap, idle reuse, one retry on a stale
 * kept-alive connection, and connect timeouts.
 *
 * Why not undici here (it still fetches metadata): a relay moves every byte
 * through the process, and node hands each socket read to JavaScript in a
 * freshly allocated 64 KiB buffer. At relay rates that is hundreds of MB/s
 * of short-lived ArrayBuffers, which keep V8 in major collections (profiled
 * in bench/scenarios/artifact-relay.ts: the GC threads used as much CPU as the
 * relay itself). These connections read with node's `onread` option into
 * one reusable buffer per connection, 256 KiB at a time (nginx's relay
 * buffer size; 512 KiB for a few connections whose reads fill it), and hand
 * the relay views of it, so relaying allocates nothing per chunk. The parts, all in this folder: artifact-connection.ts
 * (one socket and its buffers), artifact-exchange.ts (one response on it),
 * exchange-contract.ts (what those two ask of each other), head-parser.ts
 * and body-framing.ts (the wire format, strict per RFC 9112),
 * artifact-body.ts and artifact-response.ts (what the caller holds).
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
import { connect as netConnect, isIP, type Socket } from 'node:net'
import { connect as tlsConnect, rootCertificates, type ConnectionOptions } from 'node:tls'
import { ServiceError } from '../../errors.js'
import type { LookupCallback } from '../egress-guard.js'
import type { ArtifactResponse } from './artifact-response.js'
import type { ArtifactBody } from './artifact-body.js'
import { ArtifactExchange, StaleConnection, badResponse, type ArtifactTimeouts } from './artifact-exchange.js'
import { ArtifactConnection, LargeReadBuffers, readByEvents, type ArtifactConnectionOwner } from './artifact-connection.js'
import { openTunnel, tunnelTarget, type ForwardProxy, type ProxyRoute } from '../forward-proxy.js'
import { HEADER_NAME } from './head-parser.js'
import type { RequestAbort } from './request-abort.js'
import { artifactRequest, type ArtifactClientRequest } from '../../telemetry/artifact-client-channel.js'

const CONTROL = /[\r\n\0]/

export interface ArtifactConnectionsOptions {
  readonly timeouts: ArtifactTimeouts
  /** How long an idle keep-alive connection is kept; default 4 s (undici's). */
  readonly keepAliveMs?: number
  /** Connections per origin; unbounded when unset. */
  readonly connections?: number
  /** Extra trust anchor (PEM) added to the default roots. */
  readonly ca?: string
  /** The large read buffers connections borrow (shared process-wide by the proxy); a pool of its own by default. */
  readonly largeReadBuffers?: LargeReadBuffers
  /** A resolver for net/tls.connect (the egress guard's on the public side). */
  readonly lookup?: (hostname: string, options: object, callback: LookupCallback) => void
  /** Judges a literal address, which never reaches `lookup`. */
  readonly checkAddress?: (address: string) => void
  /** The forward proxy connections leave through (../forward-proxy.ts); direct when unset. */
  readonly forwardProxy?: ForwardProxy
}

export interface ArtifactRequest {
  readonly method: 'GET' | 'HEAD'
  /** Header names lowercase; values are checked for control characters. */
  readonly headers: Readonly<Record<string, string>>
  /** Calls the request off (request-abort.ts: an AbortSignal costs every request more than it is worth). */
  readonly abort?: RequestAbort
}

/**
 * The keep-alive pool of artifact connections of one upstream client, per
 * origin (`http(s)://host:port`). Constructed and owned by UpstreamClient.
 */
export class ArtifactConnections implements ArtifactConnectionOwner {
  readonly #options: ArtifactConnectionsOptions
  readonly #idle = new Map<string, ArtifactConnection[]>()
  readonly #all = new Set<ArtifactConnection>()
  readonly #count = new Map<string, number>()
  readonly #waiters = new Map<string, (() => void)[]>()
  readonly #largeBuffers: LargeReadBuffers
  #closing = false
  #drained: (() => void) | undefined

  constructor(options: ArtifactConnectionsOptions) {
    this.#options = options
    this.#largeBuffers = options.largeReadBuffers ?? new LargeReadBuffers()
  }

  /**
   * Sends one request and resolves with the response head; the body (when
   * there is one) streams from the connection. Rejects with what failed
   * (a ServiceError, or a socket error for transportFailure), or with the
   * abort's reason when the request is called off first.
   */
  async request(url: URL, request: ArtifactRequest, upstream: string): Promise<ArtifactResponse> {
    // One string built by appending (no entries array, no lines array): this runs per artifact request.
    let text = `${request.method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`
    const headers = request.headers
    for (const name in headers) {
      const value = headers[name] as string
      if (!HEADER_NAME.test(name) || CONTROL.test(value)) throw badResponse(upstream, 'invalid request header')
      text += `${name}: ${value}\r\n`
    }
    // Telemetry (engine/telemetry/artifact-client-channel.ts): undefined, and nothing allocated, when off.
    const traced = artifactRequest(url.origin, request.method)
    if (traced?.added !== undefined) for (const line of traced.added) text += `${line}\r\n`
    text += '\r\n'
    for (let attempt = 0; ; attempt++) {
      // A retry after a stale keep-alive connection takes a fresh one.
      const idle = attempt === 0 ? this.#takeIdle(url.origin) : undefined
      try {
        const conn = idle ?? await this.#connect(url, request.abort)
        return await this.#exchange(conn, text, request, upstream, traced)
      } catch (err) {
        if (err instanceof StaleConnection && attempt === 0 && request.abort?.aborted !== true) continue
        const failure = err instanceof StaleConnection ? badResponse(upstream, 'connection closed before a response') : err
        traced?.fail(failure)
        throw failure
      }
    }
  }

  #exchange(conn: ArtifactConnection, text: string, request: ArtifactRequest, upstream: string, traced: ArtifactClientRequest | undefined): Promise<ArtifactResponse> {
    const abort = request.abort
    return new Promise<ArtifactResponse>((resolve, reject) => {
      /** The body once the head is in (null: bodiless); undefined while the head is awaited. */
      let body: ArtifactBody | null | undefined
      // One listener for the whole exchange (not one per phase): before the
      // head an abort ends the request; after it, it tears the body down (as
      // undici's request does).
      const onAbort = (reason: unknown): void => {
        if (body === undefined) { exchange.abort(); reject(reason) }
        else body?.destroy(reason instanceof Error ? reason : undefined)
      }
      const settleHead = (result: ArtifactResponse | Error): void => {
        if (result instanceof Error || result.body === null) {
          abort?.unlisten(onAbort)
          if (result instanceof Error) reject(result)
          else resolve(result)
          return
        }
        body = result.body
        if (abort !== undefined) body.once('close', () => abort.unlisten(onAbort))
        resolve(result)
      }
      const exchange = new ArtifactExchange(conn, request.method, upstream, this.#options.timeouts, settleHead, traced)
      if (abort !== undefined) {
        if (abort.aborted) { exchange.abort(); reject(abort.reason); return }
        abort.listen(onAbort)
      }
      conn.begin(exchange, text)
    })
  }

  #takeIdle(key: string): ArtifactConnection | undefined {
    const list = this.#idle.get(key)
    while (list !== undefined && list.length > 0) {
      const conn = list.pop() as ArtifactConnection
      if (!conn.dead) return conn
    }
    return undefined
  }

  async #connect(url: URL, abort: RequestAbort | undefined): Promise<ArtifactConnection> {
    if (this.#closing) throw badResponse(url.host, 'the client is closing')
    const key = url.origin
    const limit = this.#options.connections
    while (limit !== undefined && (this.#count.get(key) ?? 0) >= limit) {
      await new Promise<void>((resolve, reject) => {
        const list = this.#waiters.get(key) ?? []
        this.#waiters.set(key, list)
        const wake = (): void => { abort?.unlisten(onAbort); resolve() }
        const onAbort = (reason: unknown): void => {
          const i = list.indexOf(wake)
          if (i !== -1) list.splice(i, 1)
          reject(reason)
        }
        list.push(wake)
        // Called off before it waited: it never joins the queue.
        if (abort?.aborted === true) { onAbort(abort.reason); return }
        abort?.listen(onAbort)
      })
      const idle = this.#takeIdle(key)
      if (idle !== undefined) return idle
    }
    const host = url.hostname.replace(/^\[|\]$/g, '')
    if (isIP(host) !== 0) this.#options.checkAddress?.(host)
    const port = Number(url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : url.port)
    const route = this.#options.forwardProxy?.routeFor(url.protocol, host, port)
    // The slot is taken before the (asynchronous) tunnel, so the cap holds while tunnels open.
    this.#count.set(key, (this.#count.get(key) ?? 0) + 1)
    let conn: ArtifactConnection
    try {
      conn = route === undefined ? this.#direct(url, host, port) : await this.#tunnelled(url, host, port, route, abort)
    } catch (err) {
      this.#count.set(key, (this.#count.get(key) ?? 1) - 1)
      this.#wake(key)
      throw err
    }
    this.#all.add(conn)
    const socket = conn.socket
    // A plain tunnel is connected already; TLS (direct or tunnelled) and a direct socket are awaited.
    const ready = url.protocol === 'https:' ? 'secureConnect' : route === undefined ? 'connect' : undefined
    if (ready === undefined) return conn
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new ServiceError('UPSTREAM_TIMEOUT', { data: { upstream: url.host, reason: 'connect timeout' } })), this.#options.timeouts.connectMs)
      timer.unref()
      const onAbort = (reason: unknown): void => done(reason ?? new Error('aborted'))
      const done = (err?: unknown): void => {
        clearTimeout(timer)
        socket.off(ready, onReady)
        socket.off('error', onError)
        abort?.unlisten(onAbort)
        if (err === undefined) { resolve(); return }
        conn.destroy()
        reject(err)
      }
      const onReady = (): void => done()
      const onError = (err: Error): void => done(err)
      socket.once(ready, onReady)
      socket.once('error', onError)
      if (abort?.aborted === true) onAbort(abort.reason)
      else abort?.listen(onAbort)
    })
    return conn
  }

  /** A connection straight to the origin, read with `onread` into the connection's own buffers. */
  #direct(url: URL, host: string, port: number): ArtifactConnection {
    const { ca, lookup } = this.#options
    return new ArtifactConnection(this, url.origin, (onread) => url.protocol === 'https:'
      // node's TLSSocket takes `onread` (when it makes its own socket); its typings omit it.
      ? tlsConnect({
        host, port, onread, ...(lookup === undefined ? {} : { lookup }),
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(ca === undefined ? {} : { ca: [...rootCertificates, ca] }),
      } as ConnectionOptions)
      : netConnect({ host, port, onread, ...(lookup === undefined ? {} : { lookup }) }), this.#largeBuffers)
  }

  /**
   * A connection through the forward proxy's CONNECT tunnel to the judged
   * target (../forward-proxy.ts), TLS over it for https with the target's
   * name as server name. Read by events (readByEvents says why).
   */
  async #tunnelled(url: URL, host: string, port: number, route: ProxyRoute, abort: RequestAbort | undefined): Promise<ArtifactConnection> {
    const { ca, lookup, timeouts } = this.#options
    const target = await tunnelTarget(host, port, lookup)
    const tunnel = await openTunnel(route, target, { timeoutMs: timeouts.connectMs, upstream: url.host, abort })
    return new ArtifactConnection(this, url.origin, (onread) => {
      const socket: Socket = url.protocol === 'https:'
        ? tlsConnect({
          socket: tunnel,
          ...(isIP(host) === 0 ? { servername: host } : {}),
          ...(ca === undefined ? {} : { ca: [...rootCertificates, ca] }),
        })
        : tunnel
      return readByEvents(socket, onread)
    }, this.#largeBuffers)
  }

  /** Keeps a connection idle for reuse. */
  park(conn: ArtifactConnection, hintMs: number | undefined): void {
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
  forget(conn: ArtifactConnection): void {
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
