/**
 * node:http and node:https Agents whose connections leave through the
 * forward proxy (docs/security.md#forward-proxy), for the clients that are
 * not undici's: the AWS SDK's (SQS, S3, CodeArtifact), whose request
 * handler takes an Agent per scheme. A connection to a host the NO_PROXY
 * list names, or with no proxy for its scheme, is the Agent's own; any
 * other is the same CONNECT tunnel the upstream clients open
 * (forward-proxy.ts), TLS then made over it by https.Agent itself, so the
 * server name, the certificate check and the session cache stay node's and
 * keep the endpoint's name.
 *
 * The endpoints are the operator's own (the queue, the bucket, the
 * credential service): trusted like the mirror and publish targets, so the
 * egress policy (allowlist, internal ranges) does not judge them and the
 * tunnel asks for the endpoint's name, which the proxy may be the only one
 * able to resolve.
 */
import { Agent as HttpAgent, type ClientRequestArgs } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { openTunnel, tunnelTarget, type ForwardProxy } from './forward-proxy.js'
import { TARGET_CONNECT_TIMEOUT_MS } from './proxied-connector.js'

type ConnectionCallback = (err: Error | null, stream: Duplex) => void
type CreateConnection = (options: ClientRequestArgs, callback?: ConnectionCallback) => Duplex | null | undefined

/**
 * `agent` with its createConnection routed: a connection the forward proxy
 * routes is a tunnel, handed to the request as `made(own, socket, options)`
 * through the callback (node's Agent waits for it when nothing is
 * returned); any other is the Agent's own.
 */
function routed<A extends HttpAgent>(agent: A, forwardProxy: ForwardProxy, protocol: 'http:' | 'https:', made: (own: CreateConnection, socket: Socket, options: ClientRequestArgs) => Duplex): A {
  const own: CreateConnection = agent.createConnection.bind(agent)
  agent.createConnection = (options, callback) => {
    const host = options.host ?? options.hostname ?? 'localhost'
    const port = Number(options.port ?? (protocol === 'https:' ? 443 : 80))
    const route = forwardProxy.routeFor(protocol, host, port)
    if (route === undefined || callback === undefined) return own(options, callback)
    tunnelTarget(host, port, undefined)
      .then((target) => openTunnel(route, target, { timeoutMs: TARGET_CONNECT_TIMEOUT_MS, upstream: `${host}:${port}` }))
      .then((socket) => callback(null, made(own, socket, options)), (err: Error) => callback(err, undefined as never))
    return undefined
  }
  return agent
}

/** The AWS SDK's own defaults for the Agents its request handler makes (keep-alive, 50 sockets per origin). */
const SDK_AGENT_OPTIONS = { keepAlive: true, maxSockets: 50 } as const

/** The http and https Agents of one client over the forward proxy. */
export function proxiedAgents(forwardProxy: ForwardProxy): { httpAgent: HttpAgent, httpsAgent: HttpsAgent } {
  return {
    // openTunnel hands the socket over paused; a plain-http request reads it with a data listener, which does not resume a paused stream.
    httpAgent: routed(new HttpAgent(SDK_AGENT_OPTIONS), forwardProxy, 'http:', (_own, socket) => socket.resume()),
    // TLS by https.Agent's own createConnection over the tunnel: its server name, certificate check and session cache.
    httpsAgent: routed(new HttpsAgent(SDK_AGENT_OPTIONS), forwardProxy, 'https:', (own, socket, options) => own({ ...options, socket } as ClientRequestArgs) as Duplex),
  }
}

/**
 * The `requestHandler` option of an AWS SDK client: its node request
 * handler (@smithy/node-http-handler's NodeHttpHandler, which the SDK
 * builds from these options and destroys the Agents with the client) over
 * the forward proxy. Empty without a forward proxy, so the client keeps its
 * default handler.
 */
export function sdkRequestHandler(forwardProxy: ForwardProxy | undefined): { requestHandler: { httpAgent: HttpAgent, httpsAgent: HttpsAgent } } | Record<string, never> {
  if (forwardProxy === undefined) return {}
  return { requestHandler: proxiedAgents(forwardProxy) }
}
