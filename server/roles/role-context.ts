import type { BuildInfo } from '../../engine/build-info.js'
import type { Clock } from '../../engine/clock.js'
import type { Config } from '../../engine/config/config.js'
import type { Identity } from '../../engine/log/identity.js'
import type { Logger } from '../../engine/log/logger.js'
import type { TraceContext } from '../../engine/telemetry/trace-context.js'
import type { FrontDoor } from '../http/front-door.js'
import type { Liveness } from '../health/liveness.js'
import type { Readiness } from '../health/readiness.js'

/** What every role's composition root is handed. */
export interface RoleContext {
  readonly config: Config
  readonly logger: Logger
  readonly clock: Clock
  readonly identity: Identity
  readonly build: BuildInfo
  readonly trace: TraceContext
  /** The environment HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from (egress.proxy.environment); the process's when unset. */
  readonly env?: NodeJS.ProcessEnv
}

/** A started long-running role. */
export interface RunningRole {
  readonly door: FrontDoor
  readonly readiness: Readiness
  readonly liveness: Liveness
  /** Called as the drain starts: stop taking work that does not come through the front door (mirror receives). */
  quiesce?(): void
  /** Releases dispatchers, pools and queues after the drain (STYLE.md rule 11). */
  release(): Promise<void>
  /**
   * Re-reads the role's policy document (`policy.file`, or a poll of the
   * store's object now), on SIGHUP; absent when the role reads none. Never
   * throws: a refused document is logged and counted, and the policy in
   * force stays.
   */
  reloadPolicy?(trigger: 'sighup' | 'poll'): Promise<void>
  /** The role's counters and gauges now (SPEC.md 6.3 names), for telemetry and tests. */
  metrics(): Readonly<Record<string, unknown>>
}
