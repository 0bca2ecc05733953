/** The upstream clients of a mount, built the same way for every ecosystem. */
import type { Config, MountConfig } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'
import type { CredentialRegistry } from '../../engine/upstream/credentials/credential-registry.js'
import type { UpstreamFetchCounters } from '../../engine/upstream/fetch-counters.js'
import { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import type { LargeReadBuffers } from '../../engine/upstream/http1/artifact-connection.js'
import { forwardProxyOf, type ForwardProxy } from '../../engine/upstream/forward-proxy.js'

/** Logged at info at boot when upstream connections leave through a forward proxy (docs/security.md#forward-proxy). */
export const FORWARD_PROXY_LOG = 'upstream connections leave through a forward proxy'

/**
 * The forward proxy of the configuration (`egress.proxy`) and the
 * environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), built once per process
 * and said at boot, without its credential; undefined: connections go direct.
 */
export function forwardProxyFor(config: Config, logger: Logger, env: NodeJS.ProcessEnv = process.env): ForwardProxy | undefined {
  const proxy = forwardProxyOf(config.egress.proxy, env)
  if (proxy !== undefined) logger.info(FORWARD_PROXY_LOG, proxy.describe())
  return proxy
}

export interface ClientContext {
  readonly config: Config
  readonly credentials: CredentialRegistry
  readonly counters: UpstreamFetchCounters
  readonly maxResponseBytes: number
  readonly marker: string
  readonly logger: Logger
  /** The process's large artifact read buffers (the memory plan's artifactReadBuffers), shared by every mount's clients. */
  readonly largeReadBuffers: LargeReadBuffers
  /** The forward proxy every upstream connection leaves through (forwardProxyFor); direct when unset. */
  readonly forwardProxy?: ForwardProxy | undefined
}

/**
 * A mount's two upstream clients: the private one trusted, with its token or
 * credential; the public one anonymous, https only, under the egress policy.
 */
export function mountClients(mount: MountConfig, c: ClientContext): { privateClient: UpstreamClient | undefined, publicClient: UpstreamClient | undefined } {
  const privateClient = mount.upstreams.private === undefined ? undefined : new UpstreamClient({
    url: mount.upstreams.private.url,
    trusted: true,
    ...(mount.upstreams.private.token === undefined ? {} : { token: mount.upstreams.private.token }),
    ...(mount.upstreams.private.credential === undefined ? {} : { credential: c.credentials.source(mount.upstreams.private.credential) }),
    maxResponseBytes: c.maxResponseBytes,
    proxyId: c.marker,
    logger: c.logger,
    counters: c.counters,
    largeReadBuffers: c.largeReadBuffers,
    forwardProxy: c.forwardProxy,
  })
  const publicClient = mount.upstreams.public === undefined ? undefined : new UpstreamClient({
    url: mount.upstreams.public.url,
    trusted: false,
    ...(mount.upstreams.public.caFile === undefined ? {} : { caFile: mount.upstreams.public.caFile }),
    allowHosts: mount.upstreams.public.allowHosts,
    allowInternalRanges: mount.upstreams.public.allowInternalRanges,
    allowInternalRangesKey: `mounts.${mount.key}.upstreams.public.allowInternalRanges`,
    respectUpstreamTarballHost: mount.upstreams.public.respectTarballHost,
    maxResponseBytes: c.maxResponseBytes,
    proxyId: c.marker,
    logger: c.logger,
    counters: c.counters,
    largeReadBuffers: c.largeReadBuffers,
    forwardProxy: c.forwardProxy,
  })
  return { privateClient, publicClient }
}

