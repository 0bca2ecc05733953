/**
 * A real HTTP CONNECT forward proxy on 127.0.0.1 for the forward-proxy
 * tests: node's http server answering `connect` by piping a TCP connection
 * to the asked-for authority. It records every CONNECT target, optionally
 * demands a Proxy-Authorization credential (407 without it), and can refuse
 * every tunnel with a chosen status. Closes with the test.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net'

export interface ConnectProxy {
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** The authority of every CONNECT request, in order (refused ones too). */
  readonly targets: string[]
  /** The Proxy-Authorization header of every CONNECT request (undefined when absent). */
  readonly authorizations: (string | undefined)[]
  /** Requests that were not CONNECT (absolute-form), by URL. */
  readonly plain: string[]
}

export interface ConnectProxyOptions {
  /** `user:password` the proxy demands; any CONNECT without it gets 407. */
  readonly credential?: string
  /** Answer every CONNECT with this status instead of tunnelling. */
  readonly refuseWith?: number
}

interface Teardown { teardown(fn: () => unknown): void }

export async function startConnectProxy(t: Teardown, options: ConnectProxyOptions = {}): Promise<ConnectProxy> {
  const targets: string[] = []
  const authorizations: (string | undefined)[] = []
  const plain: string[] = []
  const sockets = new Set<Socket>()
  const want = options.credential === undefined ? undefined : `Basic ${Buffer.from(options.credential).toString('base64')}`
  const server: Server = createServer((req, res) => {
    plain.push(req.url ?? '')
    res.statusCode = 405
    res.end()
  })
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? ''
    targets.push(target)
    authorizations.push(req.headers['proxy-authorization'])
    if (want !== undefined && req.headers['proxy-authorization'] !== want) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="test"\r\ncontent-length: 0\r\n\r\n')
      return
    }
    if (options.refuseWith !== undefined) {
      client.end(`HTTP/1.1 ${options.refuseWith} Refused\r\ncontent-length: 0\r\n\r\n`)
      return
    }
    const m = /^\[?([^\]]+)\]?:(\d+)$/.exec(target)
    if (m === null) { client.end('HTTP/1.1 400 Bad Request\r\n\r\n'); return }
    const upstream = netConnect({ host: m[1] as string, port: Number(m[2]) })
    sockets.add(upstream)
    upstream.on('close', () => sockets.delete(upstream))
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.on('error', () => { client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n') })
    client.on('error', () => upstream.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  const port = (server.address() as AddressInfo).port
  return { port, url: `http://127.0.0.1:${port}`, targets, authorizations, plain }
}
