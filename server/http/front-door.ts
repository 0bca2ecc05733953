/**
 * The uWebSockets.js listener every role serves its probes (and the proxy its
 * routes) on, `SERVICE_SERVER__PORT` (SPEC.md 1.6, 4.5).
 *
 * It owns the in-flight count that the graceful drain waits on: each request
 * becomes an Exchange, counted until it settles (completed, aborted or cut).
 * A handler that throws, or whose promise rejects, answers 500 in the
 * envelope, never a hung response or a crashed process.
 *
 * With `compatPort` the same routes are also served on node:http at that
 * port, for the clients the uWS port cannot answer (HTTP/1.0, many header
 * lines, pipelining behind a pending answer): see compat-listener.ts.
 */
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js'
import { ServiceError, toServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { ServerRequestRecorder } from '../../engine/telemetry/instruments.js'
import type { ServerSpans } from '../../engine/telemetry/server-spans.js'
import { CompatListener, CompatRoutes } from './compat-listener.js'
import { Exchange } from './exchange.js'
import { requestFramingRefusal } from './request-framing.js'
import { loadUws } from './uws-loader.js'
import type { Method } from './route-method.js'

export type Handler = (exchange: Exchange) => void | Promise<void>

export type { Method } from './route-method.js'

export interface FrontDoorOptions {
  readonly host: string
  readonly port: number
  readonly logger: Logger
  /** Also serve every route on node:http at this port (0: any free port); unset: no such listener. */
  readonly compatPort?: number
}

export class FrontDoor {
  readonly #app: TemplatedApp
  readonly #options: FrontDoorOptions
  readonly #logger: Logger
  #socket: us_listen_socket | undefined
  #port = 0
  readonly #compatRoutes = new CompatRoutes()
  readonly #compat: CompatListener | undefined
  #draining = false
  #inFlight = 0
  #idleWaiters: (() => void)[] = []
  /** `http.server.request.duration` (engine/telemetry); undefined with telemetry off, when nothing is timed. */
  #requests: ServerRequestRecorder | undefined
  /** A server span per request (engine/telemetry); undefined with traces off. */
  #spans: ServerSpans | undefined

  constructor(options: FrontDoorOptions) {
    this.#options = options
    this.#logger = options.logger
    this.#app = loadUws().App()
    this.#compat = options.compatPort === undefined
      ? undefined
      : new CompatListener(this.#compatRoutes, (res, req, route) => this.#dispatch(res, req, route.handler as Handler, route.pattern))
  }

  get port(): number { return this.#port }
  /** The node:http listener's port; 0 when there is none or before listen. */
  get compatPort(): number { return this.#compat?.port ?? 0 }
  get inFlight(): number { return this.#inFlight }
  get draining(): boolean { return this.#draining }

  /** Records each settled request's duration under its route template (telemetry on). */
  observeRequests(recorder: ServerRequestRecorder | undefined, spans?: ServerSpans): void {
    this.#requests = recorder
    this.#spans = spans
  }

  route(method: Method, pattern: string, handler: Handler): this {
    this.#app[method](pattern, (res: HttpResponse, req: HttpRequest) => this.#dispatch(res, req, handler, pattern))
    this.#compatRoutes.add(method, pattern, handler)
    return this
  }

  async listen(): Promise<number> {
    const port = await this.#listenUws()
    const { host, compatPort } = this.#options
    if (this.#compat !== undefined && compatPort !== undefined) {
      try {
        await this.#compat.listen(host, compatPort)
      } catch (error) {
        this.stopAccepting()
        throw new ServiceError('BOOT_UNBUILDABLE', { message: `cannot listen on ${host}:${compatPort}`, cause: error })
      }
    }
    return port
  }

  #listenUws(): Promise<number> {
    const { host, port } = this.#options
    return new Promise((resolve, reject) => {
      this.#app.listen(host, port, (socket) => {
        if (socket === false) {
          reject(new ServiceError('BOOT_UNBUILDABLE', { message: `cannot listen on ${host}:${port}` }))
          return
        }
        this.#socket = socket
        this.#port = loadUws().us_socket_local_port(socket as unknown as us_socket)
        resolve(this.#port)
      })
    })
  }

  /**
   * The lame-duck period of the drain (SPEC.md 3.1; server/lifecycle/shutdown.ts): every response from now on
   * carries `Connection: close`, on both listeners, while they still accept. A keep-alive client is told to
   * reconnect on its next answer, and its new connection goes wherever the load balancer now sends it; a
   * connection that arrives before the balancer has taken this process out of rotation is still answered.
   */
  startLameDuck(): void {
    this.#draining = true
  }

  /** Draining without a lame-duck period: responses carry `Connection: close` and the listen socket stops accepting. */
  startDraining(): void {
    this.startLameDuck()
    this.stopAccepting()
  }

  /** Closes the listen sockets; connections already open are still answered (with `Connection: close` while draining). */
  stopAccepting(): void {
    if (this.#socket !== undefined) {
      loadUws().us_listen_socket_close(this.#socket)
      this.#socket = undefined
    }
    this.#compat?.stopAccepting()
  }

  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  #dispatch(res: HttpResponse, req: HttpRequest, handler: Handler, route: string): void {
    this.#inFlight++
    const requests = this.#requests
    const started = requests === undefined ? 0 : performance.now()
    const spans = this.#spans
    let span: ReturnType<ServerSpans> | undefined
    const exchange = new Exchange(res, req, {
      draining: () => this.#draining,
      settled: (ended) => {
        this.#inFlight--
        if (this.#inFlight === 0) for (const wake of this.#idleWaiters.splice(0)) wake()
        // The route template, never the raw path: the series stay bounded whatever clients ask for.
        const template = ended.routeTemplate ?? route
        requests?.({ method: ended.method, route: template, status: ended.status, reason: ended.closeReason ?? 'completed', seconds: (performance.now() - started) / 1000 })
        span?.end(ended.status, ended.closeReason ?? 'completed', template)
      },
    })
    const refusal = requestFramingRefusal(exchange.header('content-length'), exchange.header('transfer-encoding'))
    if (refusal !== undefined) {
      // Closing is part of the answer: what follows on this connection cannot
      // be framed. The answer leaves on the next turn, not from this handler:
      // uWS goes on parsing bytes already read behind this request, and would
      // answer a pipelined one before the close; with this response still
      // pending it closes the connection instead, answering neither.
      exchange.leaveHandler()
      setImmediate(() => exchange.respondError(refusal, { head: exchange.method === 'HEAD', close: true }))
      return
    }
    span = spans?.(exchange.method, route, exchange.headers)
    try {
      const result = span === undefined ? handler(exchange) : span.run(() => handler(exchange))
      if (result !== undefined) result.catch((error: unknown) => this.#fail(exchange, error))
    } catch (error) {
      this.#fail(exchange, error)
    } finally {
      exchange.leaveHandler()
    }
  }

  #fail(exchange: Exchange, error: unknown): void {
    const failure = toServiceError(error)
    if (failure.code === 'INTERNAL') {
      this.#logger.error('request failed', { method: exchange.method, path: exchange.path, error: String((error as Error)?.stack ?? error) })
    }
    if (exchange.closed) return
    if (exchange.headersSent) exchange.cut()
    else exchange.respondError(failure, { head: exchange.method === 'HEAD' })
  }
}
