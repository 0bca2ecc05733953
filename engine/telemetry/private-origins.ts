/**
 * The origins of the private leg (SPEC.md 5.2): the private upstreams, the
 * publish and mirror targets. Only these may receive our W3C `traceparent`;
 * the public upstream never does (issue 15).
 */
import type { Config } from '../config/config.js'

export function privateOrigins(config: Pick<Config, 'mounts'>): string[] {
  const urls: string[] = []
  for (const mount of Object.values(config.mounts)) {
    if (mount === undefined) continue
    if (mount.upstreams.private !== undefined) urls.push(mount.upstreams.private.url)
    if (mount.publish !== undefined) urls.push(mount.publish.target)
    if (mount.mirror !== undefined) urls.push(mount.mirror.target)
  }
  return urls
}
