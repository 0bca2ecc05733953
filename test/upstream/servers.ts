/**
 * Real local upstreams for the upstream-client tests: node http or https
 * servers on 127.0.0.1 port 0 that record what reached them and close with
 * the test (teardown runs even when the test fails).
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { isServiceError } from '../../engine/errors.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient, type UpstreamClientOptions } from '../../engine/upstream/upstream-client.js'
import type { TestCa } from '../../bench/peers/tls.js'

export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage['headers']
}

export interface TestServer {
  readonly port: number
  /** `http(s)://127.0.0.1:<port>` */
  readonly origin: string
  readonly seen: SeenRequest[]
  /** TCP connections accepted so far. */
  connections(): number
  readonly server: Server
}

interface Teardown { teardown(fn: () => unknown): void }

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export async function startServer(t: Teardown, handler: Handler, ca?: TestCa): Promise<TestServer> {
  const seen: SeenRequest[] = []
  let connections = 0
  const sockets = new Set<Socket>()
  const wrapped: Handler = (req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
    handler(req, res)
  }
  const server: Server = ca === undefined
    ? createHttpServer(wrapped)
    : createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, wrapped) as unknown as Server
  server.on(ca === undefined ? 'connection' : 'secureConnection', () => { connections++ })
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    origin: `${ca === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    server,
  }
}

export interface ClientKit {
  readonly client: UpstreamClient
  readonly logger: RecordingLogger
  readonly counters: UpstreamFetchCounters
}

export function makeClient(t: Teardown, options: Partial<UpstreamClientOptions> & Pick<UpstreamClientOptions, 'url' | 'trusted'>): ClientKit {
  const logger = new RecordingLogger()
  const counters = new UpstreamFetchCounters()
  const client = new UpstreamClient({
    maxResponseBytes: 1024 * 1024,
    proxyId: 'proxy-test',
    logger,
    counters,
    ...options,
  })
  t.teardown(() => client.destroy())
  return { client, logger, counters }
}

/** The code of a rejected promise's ServiceError (tap's t.rejects cannot take frozen errors). */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (e) {
    return isServiceError(e) ? e.code : `not a ServiceError: ${String(e)}`
  }
  return 'nothing thrown'
}

/** Concatenates chunks into one string. */
export function text(chunks: readonly Uint8Array[]): string {
  return Buffer.concat(chunks.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength))).toString('utf8')
}
