/**
 * A scriptable upstream that misbehaves on purpose, for fault tests: on
 * 127.0.0.1, port 0, over http or over https with a test CA. Each path is
 * scripted with one behaviour, or a list used in order (the last repeats),
 * e.g. a reset and then a good answer. An unscripted path answers 404.
 * Every request is recorded so a test can assert what the proxy sent.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { gzipSync } from 'node:zlib'
import { Agent, type Dispatcher } from 'undici'
import type { TestCa } from '../../bench/peers/tls.js'

type Body = string | Uint8Array
type Headers = Readonly<Record<string, string>>

export interface PackumentLike {
  readonly name: string
  readonly versions?: Readonly<Record<string, { readonly dist?: { readonly tarball?: string } }>>
  readonly [key: string]: unknown
}

export type Misbehaviour =
  /** A well-formed answer. */
  | { readonly kind: 'respond', readonly status?: number, readonly headers?: Headers, readonly body?: Body }
  /** A 200 with `etag`, or a bodiless 304 when the request's If-None-Match names it (a registry honouring validators). */
  | { readonly kind: 'conditional', readonly etag: string, readonly body: Body }
  /** Headers after `firstByteDelayMs`, then the body in `chunkBytes` pieces every `chunkDelayMs`. */
  | { readonly kind: 'slow', readonly body: Body, readonly headers?: Headers, readonly firstByteDelayMs?: number, readonly chunkBytes?: number, readonly chunkDelayMs?: number }
  /** Declares the full length, sends `afterBytes` (default half), then resets the connection (TCP RST). */
  | { readonly kind: 'reset-mid-body', readonly body: Body, readonly headers?: Headers, readonly afterBytes?: number }
  /** `Content-Encoding: gzip` whose stream stops short (the HTTP message itself is complete). */
  | { readonly kind: 'truncated-gzip', readonly body: Body, readonly headers?: Headers }
  /** `Content-Encoding: gzip` whose trailer checksum is wrong. */
  | { readonly kind: 'corrupt-gzip', readonly body: Body, readonly headers?: Headers }
  /** `application/json` that is not JSON; default a packument cut in the middle of a string. */
  | { readonly kind: 'malformed-json', readonly body?: string }
  /** A well-formed packument for a package other than the one requested. */
  | { readonly kind: 'another-package', readonly document: PackumentLike }
  /** A redirect, which the proxy must never follow for metadata or private artifacts. */
  | { readonly kind: 'redirect', readonly location: string, readonly status?: 301 | 302 | 303 | 307 | 308 }
  /** `bytes` of body, streamed with backpressure; with or without a Content-Length. */
  | { readonly kind: 'oversized', readonly bytes: number, readonly declareLength?: boolean, readonly contentType?: string }
  /** A small gzip body that inflates to `expandedBytes` of zeros (concatenated gzip members). */
  | { readonly kind: 'gzip-bomb', readonly expandedBytes: number, readonly contentType?: string }
  /** A packument whose every `dist.tarball` names `tarballOrigin` (another host or port). */
  | { readonly kind: 'foreign-tarball', readonly document: PackumentLike, readonly tarballOrigin: string }

export interface RecordedRequest {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
}

const JSON_TYPE = 'application/json'
const MIB = 1024 * 1024

export class MisbehavingUpstream {
  readonly origin: string
  readonly port: number
  /** Trusts the upstream's CA when it serves https. */
  readonly dispatcher: Dispatcher
  readonly requests: RecordedRequest[] = []
  #server: Server
  #scripts = new Map<string, { readonly steps: readonly Misbehaviour[], next: number }>()
  #sockets = new Set<Socket>()
  #timers = new Set<NodeJS.Timeout>()
  #stopping: Promise<void> | undefined

  constructor(server: Server, origin: string, port: number, ca: TestCa | undefined) {
    this.#server = server
    this.origin = origin
    this.port = port
    this.dispatcher = new Agent(ca === undefined ? {} : { connect: { ca: ca.caPem } })
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
    server.on('secureConnection', (socket: Socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res))
  }

  url(path: string): string {
    return `${this.origin}${path}`
  }

  /** Scripts `path` (the request path without its query). Returns this for chaining. */
  script(path: string, behaviour: Misbehaviour | readonly Misbehaviour[]): this {
    const steps = Array.isArray(behaviour) ? behaviour : [behaviour as Misbehaviour]
    if (steps.length === 0) throw new Error('script needs at least one behaviour')
    this.#scripts.set(path, { steps, next: 0 })
    return this
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      for (const timer of this.#timers) clearTimeout(timer)
      await new Promise<void>((resolve) => {
        this.#server.close(() => resolve())
        for (const socket of this.#sockets) socket.destroy()
      })
      await this.dispatcher.close()
    })()
    return this.#stopping
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: { ...req.headers } })
    req.resume()
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const script = this.#scripts.get(path)
    if (script === undefined) {
      send(res, 404, { 'content-type': JSON_TYPE }, '{"error":"not found"}')
      return
    }
    const step = script.steps[Math.min(script.next, script.steps.length - 1)]!
    script.next += 1
    this.#perform(step, req, res)
  }

  #later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      fn()
    }, ms)
    this.#timers.add(timer)
  }

  #perform(step: Misbehaviour, req: IncomingMessage, res: ServerResponse): void {
    switch (step.kind) {
      case 'respond':
        send(res, step.status ?? 200, step.headers ?? { 'content-type': JSON_TYPE }, step.body ?? '')
        return
      case 'conditional':
        if (req.headers['if-none-match'] === step.etag) send(res, 304, { etag: step.etag }, '')
        else send(res, 200, { 'content-type': JSON_TYPE, etag: step.etag }, step.body)
        return
      case 'slow':
        this.#slow(step, res)
        return
      case 'reset-mid-body': {
        const body = bytes(step.body)
        const cut = step.afterBytes ?? Math.floor(body.length / 2)
        res.writeHead(200, { 'content-type': JSON_TYPE, ...step.headers, 'content-length': String(body.length) })
        // The RST must follow bytes already on the wire, or the client sees no body at all.
        res.write(body.subarray(0, cut), () => { res.socket?.resetAndDestroy() })
        return
      }
      case 'truncated-gzip': {
        const gz = gzipSync(bytes(step.body))
        send(res, 200, { 'content-type': JSON_TYPE, ...step.headers, 'content-encoding': 'gzip' }, gz.subarray(0, Math.floor(gz.length / 2)))
        return
      }
      case 'corrupt-gzip': {
        const gz = Buffer.from(gzipSync(bytes(step.body)))
        // Flip the CRC-32 in the trailer (RFC 1952 section 2.2): the deflate data still inflates.
        for (let i = gz.length - 8; i < gz.length - 4; i++) gz[i] = gz[i]! ^ 0xff
        send(res, 200, { 'content-type': JSON_TYPE, ...step.headers, 'content-encoding': 'gzip' }, gz)
        return
      }
      case 'malformed-json':
        send(res, 200, { 'content-type': JSON_TYPE }, step.body ?? '{"name":"cut-short","versions":{"1.0.0":{"name":"cut-sh')
        return
      case 'another-package':
        send(res, 200, { 'content-type': JSON_TYPE }, JSON.stringify(step.document))
        return
      case 'redirect':
        send(res, step.status ?? 302, { location: step.location }, '')
        return
      case 'oversized':
        this.#oversized(step, res)
        return
      case 'gzip-bomb':
        send(res, 200, { 'content-type': step.contentType ?? JSON_TYPE, 'content-encoding': 'gzip' }, gzipBomb(step.expandedBytes))
        return
      case 'foreign-tarball':
        send(res, 200, { 'content-type': JSON_TYPE }, JSON.stringify(withTarballOrigin(step.document, step.tarballOrigin)))
        return
    }
    // Exhaustive: a new kind without a case fails to compile here.
    const unreachable: never = step
    throw new Error(`unknown behaviour ${JSON.stringify(unreachable)} for ${req.url}`)
  }

  #slow(step: Extract<Misbehaviour, { kind: 'slow' }>, res: ServerResponse): void {
    const body = bytes(step.body)
    const chunkBytes = Math.max(1, step.chunkBytes ?? 64)
    const chunkDelayMs = step.chunkDelayMs ?? 50
    let offset = 0
    const pump = (): void => {
      if (res.destroyed) return
      if (offset >= body.length) {
        res.end()
        return
      }
      res.write(body.subarray(offset, offset + chunkBytes))
      offset += chunkBytes
      this.#later(chunkDelayMs, pump)
    }
    this.#later(step.firstByteDelayMs ?? 500, () => {
      if (res.destroyed) return
      res.writeHead(200, { 'content-type': JSON_TYPE, ...step.headers, 'content-length': String(body.length) })
      res.flushHeaders()
      this.#later(chunkDelayMs, pump)
    })
  }

  #oversized(step: Extract<Misbehaviour, { kind: 'oversized' }>, res: ServerResponse): void {
    const chunk = Buffer.alloc(64 * 1024, 0x61)
    res.writeHead(200, {
      'content-type': step.contentType ?? 'application/octet-stream',
      ...(step.declareLength === false ? {} : { 'content-length': String(step.bytes) }),
    })
    let left = step.bytes
    const pump = (): void => {
      while (left > 0 && !res.destroyed) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left)
        left -= piece.length
        if (!res.write(piece)) {
          res.once('drain', pump)
          return
        }
      }
      if (!res.destroyed) res.end()
    }
    pump()
  }
}

function bytes(body: Body): Buffer {
  return typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
}

function send(res: ServerResponse, status: number, headers: Headers, body: Body): void {
  const payload = bytes(body)
  res.writeHead(status, { ...headers, 'content-length': String(payload.length) })
  res.end(payload)
}

/** RFC 1952 allows members back to back; a gunzip inflates them all, one MiB of zeros per ~1 KiB member. */
export function gzipBomb(expandedBytes: number): Buffer {
  const member = gzipSync(Buffer.alloc(Math.min(MIB, Math.max(1, expandedBytes))), { level: 9 })
  const count = Math.max(1, Math.ceil(expandedBytes / MIB))
  return Buffer.concat(Array.from({ length: count }, () => member))
}

/** A copy of `document` whose every `dist.tarball` keeps its path but names `origin`. */
export function withTarballOrigin(document: PackumentLike, origin: string): PackumentLike {
  const versions: Record<string, { readonly dist?: { readonly tarball?: string } }> = {}
  for (const [version, manifest] of Object.entries(document.versions ?? {})) {
    const tarball = manifest.dist?.tarball
    const moved = tarball === undefined ? undefined : new URL(new URL(tarball).pathname, origin).toString()
    versions[version] = { ...manifest, dist: { ...manifest.dist, ...(moved === undefined ? {} : { tarball: moved }) } }
  }
  return { ...document, versions }
}

export async function startMisbehavingUpstream(options: { readonly tls?: TestCa } = {}): Promise<MisbehavingUpstream> {
  const server = options.tls === undefined
    ? createHttpServer()
    : createHttpsServer({ key: options.tls.keyPem, cert: options.tls.certPem })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const origin = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`
  return new MisbehavingUpstream(server, origin, port, options.tls)
}
