/**
 * The shared metadata cache of a role (docs/cache.md): with `cache.backend:
 * redis`, one connection to the Valkey/Redis server, the tier's view of it
 * (engine/cache/shared-tier.ts) for the proxy's caches, and the invalidation
 * a publish relay, a mirror success and a Dredger removal call; with
 * `local`, nothing (the caches keep everything in the process, as before).
 */
import { backendInvalidation, type CacheInvalidation, type ClaimOnce } from '../../engine/cache/shared-backend.js'
import { SharedTier } from '../../engine/cache/shared-tier.js'
import type { Config } from '../../engine/config/config.js'
import type { Logger } from '../../engine/log/logger.js'

/** warn: a package's shared entries could not be invalidated (the backend failed); they expire with `cache.sharedTtlSeconds`. */
export const SHARED_CACHE_INVALIDATION_FAILED = 'shared cache invalidation failed'

/**
 * One package's invalidation as a publish relay, a mirror worker and the
 * Dredger call it after the change happened: a failure is logged and never
 * thrown (the old entries then expire with their time to live).
 */
export function reportedInvalidation(invalidate: (ecosystem: string, packageName: string) => Promise<void>, ecosystem: string, logger: Logger): (packageName: string) => Promise<void> {
  return async (packageName) => {
    await invalidate(ecosystem, packageName).catch((error: unknown) => {
      logger.warn(SHARED_CACHE_INVALIDATION_FAILED, { ecosystem, package: packageName, error: error instanceof Error ? error.message : String(error) })
    })
  }
}

export interface SharedCache {
  readonly tier: SharedTier
  /** Moves the package's stamp on the server: every replica's next request reads the upstreams again. */
  readonly invalidation: CacheInvalidation
  /** Once across the tier (a mirror job's de-duplication may use it). */
  readonly claims: ClaimOnce
  close(): Promise<void>
}

/** The shared cache `config.cache` names, connected (at most the connection bound: a server that is down is no boot failure), or undefined on the local backend. */
export async function openSharedCache(config: Config, logger: Logger): Promise<SharedCache | undefined> {
  const cache = config.cache
  if (cache.backend !== 'redis') return undefined
  // checks.ts refuses `redis` without a URL; this only narrows the type.
  if (cache.url === undefined) throw new Error('cache.url is required when cache.backend is redis')
  const ttlMs = cache.sharedTtlSeconds * 1000
  // Loaded here, not at import: the local backend (the default) never pays for the client.
  const { RedisBackend } = await import('../../engine/cache/redis-backend.js')
  const backend = new RedisBackend({
    url: cache.url,
    username: cache.username,
    password: cache.password,
    keyPrefix: cache.keyPrefix,
    timeoutMs: cache.timeoutMs,
    stampTtlMs: ttlMs,
    logger,
  })
  await backend.connect()
  const tier = new SharedTier({ backend, ttlMs, maxValueBytes: cache.maxValueBytes, collapseWaitMs: cache.collapseWaitMs })
  return { tier, invalidation: backendInvalidation(backend), claims: backend, close: () => backend.close() }
}
