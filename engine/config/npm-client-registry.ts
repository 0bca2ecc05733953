/**
 * The js mount's public upstream when none is configured: the local npm
 * client's own registry setting (DESIGN.md: no public registry host is
 * written into the code). Once npm points at the proxy that setting IS the
 * proxy, so the checks hold what is found here to the same URL and loop
 * rules as a configured URL (checks.ts).
 */
import { execFileSync } from 'node:child_process'
import type { DefaultedDocument, PublicUpstreamConfig } from './config.js'
import { MOUNT_KEYS, type MountKey } from './schema.js'

/** Where a public upstream's URL comes from; `url` is undefined when nothing supplies one. */
export interface PublicUpstreamUrl {
  readonly url: string | undefined
  readonly origin: PublicUpstreamConfig['urlOrigin']
}

export type PublicUpstreamUrls = Readonly<Partial<Record<MountKey, PublicUpstreamUrl>>>

/** Each configured mount's public upstream URL; `lookup` runs only for a js mount that sets none. */
export function publicUpstreamUrls(document: DefaultedDocument, lookup: () => string | undefined): PublicUpstreamUrls {
  const out: Partial<Record<MountKey, PublicUpstreamUrl>> = {}
  for (const key of MOUNT_KEYS) {
    const mount = document.mounts[key]
    if (mount === undefined) continue
    const url = mount.upstreams.public.url
    out[key] = url === undefined && key === 'js' ? { url: lookup(), origin: 'npm-client' } : { url, origin: 'configured' }
  }
  return out
}

/** `npm config get registry`, or undefined when npm is missing, fails or has none. */
export function npmClientRegistry(): string | undefined {
  try {
    const out = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    return out === '' || out === 'undefined' ? undefined : out
  } catch {
    return undefined
  }
}
