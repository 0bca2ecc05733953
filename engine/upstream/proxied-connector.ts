/**
 * undici's connector for the document requests of an upstream client, over
 * the forward proxy when one routes the origin (forward-proxy.ts says how
 * the target is judged and named). A CONNECT tunnel is opened here, then
 * handed to undici's own connector as `httpSocket` for TLS (as undici's
 * ProxyAgent does), so session reuse, the server name and the certificate
 * check stay undici's and keep the target's name. undici's ProxyAgent is not
 * used: it asks the proxy for the target's NAME, which would let the
 * proxy's resolver bypass the internal-range block.
 */
import { buildConnector } from 'undici'
import { openTunnel, tunnelTarget, type ForwardProxy, type TargetLookup } from './forward-proxy.js'

export interface ProxiedConnectorOptions {
  /** undici's connector with the egress guard's lookup: the direct path, and TLS over a tunnel. */
  readonly direct: buildConnector.connector
  readonly forwardProxy: ForwardProxy
  /** The egress guard's resolver on the untrusted side; undefined on the trusted side (the tunnel asks for the name). */
  readonly lookup: TargetLookup | undefined
  /** Bound of the tunnel's opening (the TLS handshake then has undici's own connect timeout). */
  readonly timeoutMs: number
}

export function proxiedConnector(o: ProxiedConnectorOptions): buildConnector.connector {
  return (options, callback) => {
    const port = Number(options.port !== '' && options.port !== undefined ? options.port : options.protocol === 'https:' ? 443 : 80)
    const route = o.forwardProxy.routeFor(options.protocol, options.hostname, port)
    if (route === undefined) { o.direct(options, callback); return }
    const upstream = `${options.hostname}:${port}`
    tunnelTarget(options.hostname, port, o.lookup)
      .then((target) => openTunnel(route, target, { timeoutMs: o.timeoutMs, upstream }))
      .then((socket) => {
        if (options.protocol === 'https:') o.direct({ ...options, httpSocket: socket }, callback)
        else callback(null, socket)
      }, (err: Error) => callback(err, null))
  }
}

/** undici's default connect timeout, kept for the trusted targets' agents (they set none of their own) and the SDK clients' tunnels (proxied-agents.ts). */
export const TARGET_CONNECT_TIMEOUT_MS = 10_000

/**
 * The `connect` option of an undici Agent that writes to a trusted,
 * operator-configured target (the mirror target, the publish target):
 * through the forward proxy when one routes the target's origin (the tunnel
 * asks for the target's name: a trusted target has no egress guard), else
 * direct. Undefined without a forward proxy, so the Agent keeps its own.
 */
export function trustedTargetConnector(forwardProxy: ForwardProxy | undefined): { connect: buildConnector.connector } | Record<string, never> {
  if (forwardProxy === undefined) return {}
  const direct = buildConnector({ timeout: TARGET_CONNECT_TIMEOUT_MS })
  return { connect: proxiedConnector({ direct, forwardProxy, lookup: undefined, timeoutMs: TARGET_CONNECT_TIMEOUT_MS }) }
}
