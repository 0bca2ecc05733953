/**
 * A round-robin TCP load balancer that takes a backend out of rotation while
 * its `/readyz` fails, for rolling-restart tests: what a Kubernetes Service
 * does (kube-proxy forwards connections, layer 4, and never retries another
 * pod; the endpoints follow readiness) and what a cloud balancer's health
 * check does. Why not nginx (Debian's, as bench/ uses): the open-source
 * build has no active health check, only passive `max_fails`, and it retries
 * a refused connection on the next upstream, which hides exactly the
 * refusals a rolling-restart test is there to count.
 *
 * Each client connection goes whole to one backend in rotation, so a client
 * that follows `Connection: close` reaches another backend on its next
 * connection. A backend that refuses the connection is counted and the
 * client's connection reset, as a refused SYN would reach the client
 * through kube-proxy. A backend joins the rotation on its first 200 from
 * `/readyz` and leaves it after `failureThreshold` failed probes in a row
 * (a non-200, a refused connection or a probe timeout), like a readiness
 * probe with `successThreshold: 1`.
 */
import { get } from 'node:http'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

export interface BalancerOptions {
  /** Time between two probes of one backend. */
  readonly probeIntervalMs: number
  /** Failed probes in a row that take a backend out of rotation. */
  readonly failureThreshold: number
  /** A probe without an answer by then has failed. */
  readonly probeTimeoutMs: number
}

interface Backend {
  readonly port: number
  inRotation: boolean
  failures: number
  probing: boolean
  readonly timer: NodeJS.Timeout
  /** Each change of rotation, for the test's report: `+` joined, `-` left, with the time since the balancer started. */
  readonly changes: string[]
}

export interface BalancerCounts {
  /** Client connections forwarded to a backend that accepted them. */
  readonly forwarded: number
  /** Client connections whose backend refused them (ECONNREFUSED): the failures a rolling update must not cause. */
  readonly refused: number
  /** Client connections that found no backend in rotation. */
  readonly noBackend: number
  /** Other failures connecting to a backend, by error code. */
  readonly otherErrors: Readonly<Record<string, number>>
}

export class ReadinessBalancer {
  readonly #options: BalancerOptions
  readonly #server: Server
  readonly #backends = new Map<number, Backend>()
  readonly #sockets = new Set<Socket>()
  readonly #started = performance.now()
  #next = 0
  #forwarded = 0
  #refused = 0
  #noBackend = 0
  readonly #otherErrors: Record<string, number> = {}

  constructor(options: BalancerOptions) {
    this.#options = options
    this.#server = createServer((client) => this.#forward(client))
  }

  /** Listens on 127.0.0.1, a free port; resolves with it. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen(0, '127.0.0.1', () => resolve((this.#server.address() as AddressInfo).port))
    })
  }

  /** Starts probing `port`; it joins the rotation on its first ready answer. */
  add(port: number): void {
    const backend: Backend = {
      port,
      inRotation: false,
      failures: 0,
      probing: false,
      timer: setInterval(() => this.#probe(backend), this.#options.probeIntervalMs),
      changes: [],
    }
    this.#backends.set(port, backend)
    this.#probe(backend)
  }

  /** Forgets `port` (its process is gone): no more probes, out of rotation. */
  remove(port: number): void {
    const backend = this.#backends.get(port)
    if (backend === undefined) return
    clearInterval(backend.timer)
    this.#backends.delete(port)
  }

  inRotation(port: number): boolean {
    return this.#backends.get(port)?.inRotation === true
  }

  /** Resolves once `port` is in rotation; rejects after `timeoutMs`. */
  async waitInRotation(port: number, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (!this.inRotation(port)) {
      if (performance.now() > deadline) throw new Error(`backend ${port} not in rotation after ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  get counts(): BalancerCounts {
    return { forwarded: this.#forwarded, refused: this.#refused, noBackend: this.#noBackend, otherErrors: { ...this.#otherErrors } }
  }

  /** Rotation changes per backend port, for a failure's report. */
  get history(): Readonly<Record<number, readonly string[]>> {
    return Object.fromEntries([...this.#backends].map(([port, b]) => [port, b.changes]))
  }

  /** Stops probing, closes the listener and every forwarded connection. */
  async close(): Promise<void> {
    for (const port of [...this.#backends.keys()]) this.remove(port)
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #forward(client: Socket): void {
    this.#sockets.add(client)
    client.on('close', () => this.#sockets.delete(client))
    const backends = [...this.#backends.values()].filter((b) => b.inRotation)
    if (backends.length === 0) {
      this.#noBackend++
      client.resetAndDestroy()
      return
    }
    const backend = backends[this.#next++ % backends.length] as Backend
    const upstream = connect(backend.port, '127.0.0.1')
    this.#sockets.add(upstream)
    let connected = false
    upstream.once('connect', () => {
      connected = true
      this.#forwarded++
    })
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (!connected) {
        if (error.code === 'ECONNREFUSED') this.#refused++
        else this.#otherErrors[error.code ?? 'unknown'] = (this.#otherErrors[error.code ?? 'unknown'] ?? 0) + 1
        // What a client behind kube-proxy sees when the pod refuses: its connection reset.
        client.resetAndDestroy()
      } else {
        client.destroy()
      }
    })
    upstream.on('close', () => {
      this.#sockets.delete(upstream)
      // The backend closed after its answer (Connection: close): the client's connection ends with it.
      if (!client.destroyed) client.end()
    })
    client.on('error', () => upstream.destroy())
    client.on('close', () => upstream.destroy())
    // Writes before the backend's connect are held by the socket until it connects.
    client.pipe(upstream)
    upstream.pipe(client)
  }

  #probe(backend: Backend): void {
    if (backend.probing) return
    backend.probing = true
    let settled = false
    const done = (ready: boolean): void => {
      if (settled) return
      settled = true
      backend.probing = false
      if (!this.#backends.has(backend.port)) return
      if (ready) {
        backend.failures = 0
        if (!backend.inRotation) this.#change(backend, true)
      } else if (++backend.failures >= this.#options.failureThreshold && backend.inRotation) {
        this.#change(backend, false)
      }
    }
    // A new connection per probe, as a kubelet or a cloud health check makes.
    const req = get({ host: '127.0.0.1', port: backend.port, path: '/readyz', agent: false, timeout: this.#options.probeTimeoutMs }, (res) => {
      res.resume()
      done(res.statusCode === 200)
    })
    req.on('timeout', () => { req.destroy(); done(false) })
    req.on('error', () => done(false))
  }

  #change(backend: Backend, inRotation: boolean): void {
    backend.inRotation = inRotation
    backend.changes.push(`${inRotation ? '+' : '-'}${Math.round(performance.now() - this.#started)}ms`)
  }
}
