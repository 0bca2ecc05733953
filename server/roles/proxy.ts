/**
 * The proxy role's composition root: the one place its objects are made and
 * wired (DESIGN.md). It serves the `/js` mount's routes and the probes on
 * `SERVICE_SERVER__PORT`.
 */
import { needsAdvisoryDatabase } from '../../engine/policy/advisory-max-age.js'
import { MOUNT_KEYS } from '../../engine/config/schema.js'
import { FrontDoor } from '../http/front-door.js'
import { Liveness } from '../health/liveness.js'
import { Readiness } from '../health/readiness.js'
import { mountFallback, mountJs } from '../routes/js-mount.js'
import { mountProbes } from '../routes/probes.js'
import type { RoleContext, RunningRole } from './role-context.js'

export const PROXY_LISTENING = 'proxy listening'

export async function startProxy(ctx: RoleContext): Promise<RunningRole> {
  const { config, logger } = ctx
  const door = new FrontDoor({ host: config.server.host, port: config.server.port, logger })
  const readiness = new Readiness()
  const liveness = new Liveness()
  for (const key of MOUNT_KEYS) {
    const mount = config.mounts[key]
    if (mount !== undefined) readiness.addMount(key, needsAdvisoryDatabase(mount.rules))
  }

  mountProbes(door, liveness, readiness)
  if (config.mounts.js !== undefined) {
    mountJs(door, { hopMarker: hopMarker(config.server.baseUrl), handlers: {} })
  }
  mountFallback(door)

  const port = await door.listen()
  readiness.markStarted()
  logger.info(PROXY_LISTENING, { port, baseUrl: config.server.baseUrl, mounts: Object.keys(config.mounts) })
  return {
    door,
    readiness,
    liveness,
    release: async () => {},
  }
}

/** The `Via` pseudonym of this deployment: every replica behind one base URL shares it. */
export function hopMarker(baseUrl: string): string {
  return `registry-proxy@${new URL(baseUrl).host}`
}
