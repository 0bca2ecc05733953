/**
 * A second listener for the front door's routes, on node:http, for the
 * clients the uWS port cannot answer. The uWS build in use
 * (20.30.0-unofficial.0) drops these in its native parser before any
 * JavaScript runs, so no handler can answer them there:
 *
 * - HTTP/1.0 (nginx `proxy_pass` with its default `proxy_http_version 1.0`,
 *   HAProxy `option httpchk`): the request line is not `HTTP/1.1`, the bytes
 *   wait in the parser as an unfinished head, and uWS closes the connection
 *   at its idle timeout (about 10 s) with nothing sent.
 * - 49 or more header lines: the same (48 is the most it answers).
 * - A request pipelined behind one whose answer is still pending: uWS closes
 *   the connection at once, answering neither.
 *
 * Putting a parser in front of the uWS port would fix these there, but every
 * relayed byte would cross it: measured, the server's CPU per relayed byte
 * rose four- to fivefold. So these clients get their own port instead, and
 * the uWS port keeps the artifact path to itself.
 *
 * Node's parser (llhttp) answers HTTP/1.0 without chunked encoding and
 * closes unless keep-alive was asked, answers pipelined requests in order,
 * refuses ambiguous framing itself (400, RFC 9112 section 6.3), and answers
 * 431 to a head over its size limit (16 KiB); more than MAX_HEADER_LINES
 * header lines are answered 431 here. Each request reaches the same handler,
 * through the same Exchange and the same in-flight count, as on the uWS
 * port: the adapters below give the Exchange the part of the uWS response
 * and request interfaces it uses (`ResponsePart`, `RequestPart`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { Method } from './route-method.js'

/** What the Exchange calls on a uWS response; the adapter implements exactly this. */
export type ResponsePart = Pick<HttpResponse,
  'onAborted' | 'getRemoteAddressAsText' | 'writeStatus' | 'writeHeader' | 'end' | 'endWithoutBody'
  | 'write' | 'tryEnd' | 'getWriteOffset' | 'onWritable' | 'close' | 'cork' | 'onData' | 'pause' | 'resume'>

/** What the Exchange calls on a uWS request. */
export type RequestPart = Pick<HttpRequest, 'getMethod' | 'getUrl' | 'getQuery' | 'forEach'>

/** Header lines a request may carry; more is answered 431 and the connection closed (RFC 6585 section 5). */
export const MAX_HEADER_LINES = 100

export type CompatDispatch = (res: HttpResponse, req: HttpRequest, route: RouteMatch) => void

export interface RouteMatch {
  readonly method: Method
  readonly pattern: string
  readonly handler: unknown
}

/** A node:http response behind the uWS response methods the Exchange uses. */
export class NodeResponse implements ResponsePart {
  readonly #res: ServerResponse
  #onAborted: (() => void) | undefined
  #onWritable: ((offset: number) => boolean) | undefined
  /** Body bytes taken so far (uWS's write offset). node:http takes every chunk whole, buffering under backpressure. */
  #offset = 0
  #ended = false

  constructor(res: ServerResponse) {
    this.#res = res
    // 'close' also follows a completed response: only an unfinished one is an abort, as in uWS.
    res.once('close', () => {
      if (!this.#ended) {
        this.#ended = true
        this.#onAborted?.()
      }
    })
    res.on('drain', () => { if (!this.#ended) this.#onWritable?.(this.#offset) })
  }

  onAborted(handler: () => void): HttpResponse {
    this.#onAborted = handler
    return this as unknown as HttpResponse
  }

  getRemoteAddressAsText(): ArrayBuffer {
    const bytes = Buffer.from(this.#res.socket?.remoteAddress ?? '')
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
  }

  writeStatus(status: string | ArrayBuffer | ArrayBufferView): HttpResponse {
    const line = text(status)
    const space = line.indexOf(' ')
    this.#res.statusCode = Number(space === -1 ? line : line.slice(0, space))
    if (space !== -1) this.#res.statusMessage = line.slice(space + 1)
    return this as unknown as HttpResponse
  }

  writeHeader(key: string | ArrayBuffer | ArrayBufferView, value: string | ArrayBuffer | ArrayBufferView): HttpResponse {
    this.#res.appendHeader(text(key), text(value))
    return this as unknown as HttpResponse
  }

  end(body?: string | ArrayBuffer | ArrayBufferView, closeConnection?: boolean): HttpResponse {
    if (this.#ended) return this as unknown as HttpResponse
    this.#ended = true
    const data = bytes(body)
    // uWS writes the length of a body given to end(); node:http would not for an HTTP/1.0
    // request and would close to delimit it, losing a keep-alive the client asked for.
    if (!this.#res.headersSent && !this.#res.hasHeader('content-length')) this.#res.setHeader('content-length', String(byteLength(data)))
    // node:http closes the connection after a response that says `Connection: close`.
    if (closeConnection === true) this.#res.setHeader('connection', 'close')
    this.#res.end(data)
    return this as unknown as HttpResponse
  }

  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): HttpResponse {
    if (this.#ended) return this as unknown as HttpResponse
    this.#ended = true
    if (reportedContentLength !== undefined && !this.#res.hasHeader('content-length')) this.#res.setHeader('content-length', String(reportedContentLength))
    if (closeConnection === true) this.#res.setHeader('connection', 'close')
    // A HEAD answer: node:http sends no body for HEAD whatever the length says.
    this.#res.end()
    return this as unknown as HttpResponse
  }

  write(chunk: string | ArrayBuffer | ArrayBufferView): boolean {
    if (this.#ended) return false
    const data = bytes(chunk)
    this.#offset += byteLength(data)
    return this.#res.write(data)
  }

  tryEnd(chunk: string | ArrayBuffer | ArrayBufferView, totalSize: number): [boolean, boolean] {
    if (this.#ended) return [false, false]
    if (!this.#res.headersSent) this.#res.setHeader('content-length', String(totalSize))
    const data = bytes(chunk)
    this.#offset += byteLength(data)
    if (this.#offset >= totalSize) {
      this.#ended = true
      this.#res.end(data)
      return [true, true]
    }
    return [this.#res.write(data), false]
  }

  getWriteOffset(): number {
    return this.#offset
  }

  onWritable(handler: (offset: number) => boolean): HttpResponse {
    this.#onWritable = handler
    return this as unknown as HttpResponse
  }

  /** The request body as uWS gives it: chunks, then an empty last one at the end (node:http has read the framing). */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): HttpResponse {
    const req = this.#res.req
    req.on('data', (chunk: Buffer) => {
      handler(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer, false)
    })
    req.once('end', () => handler(new ArrayBuffer(0), true))
    return this as unknown as HttpResponse
  }

  pause(): void {
    this.#res.req.pause()
  }

  resume(): void {
    this.#res.req.resume()
  }

  close(): HttpResponse {
    this.#res.destroy()
    return this as unknown as HttpResponse
  }

  cork(cb: () => void): HttpResponse {
    this.#res.cork()
    try { cb() } finally { this.#res.uncork() }
    return this as unknown as HttpResponse
  }
}

/** A node:http request behind the uWS request methods the Exchange uses (keys lower-cased, as uWS gives them). */
export class NodeRequest implements RequestPart {
  readonly #req: IncomingMessage
  readonly #path: string
  readonly #query: string | undefined

  constructor(req: IncomingMessage) {
    this.#req = req
    const target = req.url ?? '/'
    const mark = target.indexOf('?')
    this.#path = mark === -1 ? target : target.slice(0, mark)
    this.#query = mark === -1 ? undefined : target.slice(mark + 1)
  }

  getMethod(): string { return (this.#req.method ?? '').toLowerCase() }
  getUrl(): string { return this.#path }
  // uWS's typing says string; it gives undefined for no query, which the Exchange expects.
  getQuery(): string { return this.#query as string }

  forEach(cb: (key: string, value: string) => void): void {
    const raw = this.#req.rawHeaders
    for (let i = 0; i + 1 < raw.length; i += 2) cb((raw[i] as string).toLowerCase(), raw[i + 1] as string)
  }
}

interface CompiledRoute extends RouteMatch {
  readonly segments: readonly string[]
  readonly order: number
}

/**
 * The route table in uWS's order of preference, so a path reaches the same
 * handler on both ports: segment by segment a static segment beats a
 * `:parameter`, which beats a trailing `*`; then a route for the method
 * beats `any`; then the earlier registration.
 */
export class CompatRoutes {
  readonly #routes: CompiledRoute[] = []

  add(method: Method, pattern: string, handler: unknown): void {
    this.#routes.push({ method, pattern, handler, segments: pattern.split('/').slice(1), order: this.#routes.length })
  }

  match(method: string, path: string): RouteMatch | undefined {
    const wanted = uwsMethod(method)
    const segments = path.split('/').slice(1)
    let best: { route: CompiledRoute; rank: number[] } | undefined
    for (const route of this.#routes) {
      if (route.method !== 'any' && route.method !== wanted) continue
      const rank = rankOf(route.segments, segments)
      if (rank === undefined) continue
      rank.push(route.method === 'any' ? 1 : 0, route.order)
      if (best === undefined || compareRanks(rank, best.rank) < 0) best = { route, rank }
    }
    return best?.route
  }
}

/** Per segment 0 static, 1 parameter, 2 wildcard (lower is preferred); undefined when the pattern does not match. */
function rankOf(pattern: readonly string[], path: readonly string[]): number[] | undefined {
  const rank: number[] = []
  for (let i = 0; i < pattern.length; i++) {
    const part = pattern[i] as string
    if (part === '*' && i === pattern.length - 1) {
      rank.push(2)
      return path.length >= pattern.length ? rank : undefined
    }
    if (i >= path.length) return undefined
    if (part.startsWith(':')) {
      if (path[i] === '') return undefined
      rank.push(1)
    } else if (part === path[i]) {
      rank.push(0)
    } else {
      return undefined
    }
  }
  return path.length === pattern.length ? rank : undefined
}

function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number)
  }
  return a.length - b.length
}

function uwsMethod(method: string): string {
  const lower = method.toLowerCase()
  return lower === 'delete' ? 'del' : lower
}

/** Listens on `host:port` and hands each request with its route to `dispatch`; 404 in the envelope when nothing matches. */
export class CompatListener {
  readonly #server: Server
  #port = 0

  constructor(routes: CompatRoutes, dispatch: CompatDispatch) {
    this.#server = createServer((req, res) => {
      if (req.rawHeaders.length / 2 > MAX_HEADER_LINES) {
        res.writeHead(431, { 'content-type': 'application/json', connection: 'close' }).end('{"error":"too many header lines"}')
        return
      }
      const request = new NodeRequest(req)
      const route = routes.match(req.method ?? '', request.getUrl())
      if (route === undefined) {
        // The uWS port closes the connection when no route matches; every role registers a catch-all, so this is a safety net.
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
        return
      }
      dispatch(new NodeResponse(res) as unknown as HttpResponse, request as unknown as HttpRequest, route)
    })
    // One more than the limit, so a request over it is seen as such (node:http drops lines past maxHeadersCount).
    this.#server.maxHeadersCount = MAX_HEADER_LINES + 1
  }

  get port(): number { return this.#port }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => reject(error)
      this.#server.once('error', onError)
      this.#server.listen(port, host, () => {
        this.#server.off('error', onError)
        this.#port = (this.#server.address() as AddressInfo).port
        resolve(this.#port)
      })
    })
  }

  /** Stops accepting; connections in use finish their requests, idle keep-alive ones close now. */
  stopAccepting(): void {
    if (!this.#server.listening) return
    this.#server.close()
    this.#server.closeIdleConnections()
  }
}

function text(value: string | ArrayBuffer | ArrayBufferView): string {
  return typeof value === 'string' ? value : Buffer.from(bytes(value)).toString('latin1')
}

function byteLength(value: Uint8Array | string): number {
  return typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength
}

function bytes(value: string | ArrayBuffer | ArrayBufferView | undefined): Uint8Array | string {
  if (value === undefined) return ''
  if (typeof value === 'string') return value
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
}
