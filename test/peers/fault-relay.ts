/**
 * A relay on 127.0.0.1 in front of a real peer, for the shared mirror
 * worker suite (test/mirror/mirror-worker.suite.ts): each request goes to
 * the peer as it came (method, path, headers, the body streamed both ways)
 * unless a scripted fault matches it. One relay stands before the public
 * upstream (https, the faults an artifact fetch meets), one before the
 * mirror target (http, what a lookup or a publication meets), so both
 * workers meet the same faults as real HTTP exchanges with real peers.
 *
 * The peer is always asked for `identity` (so `rewrite` can edit bodies);
 * with `rewrite`, the peer's origin in a JSON or HTML body becomes the
 * relay's (Verdaccio writes `dist.tarball` from the Host it is asked with,
 * PEERS.md). Every request is recorded with its Authorization header.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Agent, request, type Dispatcher } from 'undici'

export type RelayFault =
  /** The body is read whole, then this status is the answer (nothing reaches the peer). */
  | { readonly kind: 'status', readonly status: number }
  /** The body is read whole, then the connection is cut without an answer. */
  | { readonly kind: 'cut' }
  /** No answer ever (until the relay stops); `onHeld` runs when the request arrives. */
  | { readonly kind: 'hold', readonly onHeld?: () => void }
  /** The peer's answer, sent without a Content-Length (chunked). */
  | { readonly kind: 'chunked' }
  /** The peer's answer with the first byte of its body changed (same length). */
  | { readonly kind: 'tamper' }

export interface RelayRule {
  readonly method?: string
  /** The request path (no query) exactly, or a pattern it matches. */
  readonly path?: string | RegExp
  /** How many matching requests the fault takes; default every one. */
  readonly times?: number
}

export interface RelayedRequest {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  /** The fault that answered it, if one did. */
  readonly fault: RelayFault['kind'] | undefined
}

export interface FaultRelayOptions {
  /** The peer's origin, `http(s)://127.0.0.1:PORT`. */
  readonly peer: string
  /** For an https peer: a dispatcher that trusts its CA. */
  readonly dispatcher?: Dispatcher
  /** Serve https with this key and certificate (for 127.0.0.1); default http. */
  readonly tls?: { readonly key: string, readonly cert: string }
  /** Replace the peer's origin with the relay's in JSON and HTML bodies. */
  readonly rewrite?: boolean
}

interface Armed { readonly rule: RelayRule, readonly fault: RelayFault, left: number }

const FORWARDED_ANSWER_HEADERS = ['content-type', 'etag', 'last-modified', 'cache-control', 'www-authenticate'] as const
const NOT_FORWARDED = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'accept-encoding', 'upgrade', 'proxy-connection'])

export class FaultRelay {
  readonly #o: FaultRelayOptions
  readonly #server: Server
  readonly #dispatcher: Dispatcher
  readonly #ownsDispatcher: boolean
  readonly #armed: Armed[] = []
  readonly #requests: RelayedRequest[] = []
  #origin = ''

  private constructor(options: FaultRelayOptions) {
    this.#o = options
    this.#ownsDispatcher = options.dispatcher === undefined
    this.#dispatcher = options.dispatcher ?? new Agent()
    const handler = (req: IncomingMessage, res: ServerResponse): void => { void this.#handle(req, res) }
    this.#server = options.tls === undefined ? createHttpServer(handler) : createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler)
  }

  static async start(options: FaultRelayOptions): Promise<FaultRelay> {
    const relay = new FaultRelay(options)
    await new Promise<void>((resolve) => relay.#server.listen(0, '127.0.0.1', resolve))
    const port = (relay.#server.address() as AddressInfo).port
    relay.#origin = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`
    return relay
  }

  /** `http(s)://127.0.0.1:PORT`, no trailing slash. */
  get origin(): string { return this.#origin }

  /** `127.0.0.1:PORT`. */
  get authority(): string { return new URL(this.#origin).host }

  get requests(): readonly RelayedRequest[] { return this.#requests }

  /** Requests matching `rule` so far (its `times` ignored). */
  count(rule: RelayRule): number {
    return this.#requests.filter((r) => matches(rule, r.method, r.path)).length
  }

  /** Arms `fault` for requests matching `rule`; the first armed rule that matches answers. */
  fault(rule: RelayRule, fault: RelayFault): void {
    this.#armed.push({ rule, fault, left: rule.times ?? Number.POSITIVE_INFINITY })
  }

  /** Disarms every fault. */
  clear(): void {
    this.#armed.length = 0
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    if (this.#ownsDispatcher) await this.#dispatcher.close()
  }

  #take(method: string, path: string): RelayFault | undefined {
    const armed = this.#armed.find((a) => a.left > 0 && matches(a.rule, method, path))
    if (armed === undefined) return undefined
    armed.left--
    return armed.fault
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET'
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const fault = this.#take(method, path)
    const auth = req.headers['authorization']
    this.#requests.push({ method, path, authorization: typeof auth === 'string' ? auth : undefined, fault: fault?.kind })
    try {
      if (fault?.kind === 'hold') {
        fault.onHeld?.()
        return
      }
      if (fault?.kind === 'status' || fault?.kind === 'cut') {
        for await (const chunk of req) void chunk
        if (fault.kind === 'cut') {
          res.socket?.destroy()
          return
        }
        const text = `relay fault: ${fault.status}`
        res.writeHead(fault.status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text) })
        res.end(text)
        return
      }
      await this.#forward(req, res, method, fault)
    } catch {
      res.destroy()
    }
  }

  async #forward(req: IncomingMessage, res: ServerResponse, method: string, fault: RelayFault | undefined): Promise<void> {
    const headers: Record<string, string> = { 'accept-encoding': 'identity' }
    for (const [name, value] of Object.entries(req.headers)) {
      if (!NOT_FORWARDED.has(name) && typeof value === 'string') headers[name] = value
    }
    // A client that goes away mid-exchange (an aborted job) cuts the peer's exchange too: the peer sees the body end early.
    const controller = new AbortController()
    res.on('close', () => { if (!res.writableFinished) controller.abort() })
    const hasBody = method !== 'GET' && method !== 'HEAD'
    const answer = await request(`${this.#o.peer}${req.url ?? '/'}`, {
      method: method as Dispatcher.HttpMethod, headers, dispatcher: this.#dispatcher, signal: controller.signal,
      ...(hasBody ? { body: req } : {}),
    })
    const out: Record<string, string> = {}
    for (const name of FORWARDED_ANSWER_HEADERS) {
      const value = answer.headers[name]
      if (typeof value === 'string') out[name] = value
    }
    const type = out['content-type'] ?? ''
    if (this.#o.rewrite === true && /json|html/.test(type)) {
      const text = (await answer.body.text()).replaceAll(this.#o.peer, this.#origin)
      res.writeHead(answer.statusCode, { ...out, 'content-length': String(Buffer.byteLength(text)) })
      res.end(text)
      return
    }
    const length = answer.headers['content-length']
    if (fault?.kind !== 'chunked' && typeof length === 'string') out['content-length'] = length
    res.writeHead(answer.statusCode, out)
    let first = fault?.kind === 'tamper'
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      let piece = chunk
      if (first && chunk.byteLength > 0) {
        piece = Buffer.from(chunk)
        piece[0] = (piece[0] ?? 0) ^ 0xff
        first = false
      }
      if (res.destroyed) break
      if (!res.write(piece)) await new Promise((resolve) => { res.once('drain', resolve); res.once('close', resolve) })
    }
    res.end()
  }
}

function matches(rule: RelayRule, method: string, path: string): boolean {
  if (rule.method !== undefined && rule.method !== method) return false
  if (rule.path === undefined) return true
  return typeof rule.path === 'string' ? rule.path === path : rule.path.test(path)
}
