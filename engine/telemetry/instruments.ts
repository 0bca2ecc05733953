/**
 * The one instrument layer (DESIGN.md): what the process records through,
 * whether telemetry is on or off. Off is `TELEMETRY_OFF`, whose recorders
 * are `undefined`: a caller tests one field and does nothing else (no clock
 * read, no attribute object), so telemetry off costs nothing measurable on
 * the hot paths. On, the recorders are backed by the OpenTelemetry SDK
 * (otel-telemetry.ts). Code that counts never imports an exporter.
 */
import type { Logger } from '../log/logger.js'
import type { RoleSnapshot } from './metric-catalog.js'
import type { ServerSpans } from './server-spans.js'

/** One answered (or abandoned) request on the front door. */
export interface ServerRequest {
  readonly method: string
  /** The route TEMPLATE the request matched (`/js/*`), never the raw path: bounded cardinality. */
  readonly route: string
  /** 0 when no status was written (the client went away first). */
  readonly status: number
  /** How the exchange ended: `completed`, `aborted` or `cut`. */
  readonly reason: string
  readonly seconds: number
}

export type ServerRequestRecorder = (request: ServerRequest) => void

export interface Telemetry {
  readonly enabled: boolean
  /** `http.server.request.duration`; undefined when off. */
  readonly serverRequests: ServerRequestRecorder | undefined
  /** A server span per request; undefined when traces are off. */
  readonly serverSpans: ServerSpans | undefined
  /** Reads the role's `metrics()` at each collection (every SPEC.md 6.3 series from then on). */
  observeRole(metrics: () => RoleSnapshot): void
  /** Log lines go to the collector too, beside stdout; off: the logger itself. */
  teeLogger<L extends Logger>(logger: L): L
  /** Flushes what can be flushed within the bound and stops every exporter and listener. */
  shutdown(timeoutMs?: number): Promise<void>
}

export const TELEMETRY_OFF: Telemetry = Object.freeze({
  enabled: false,
  serverRequests: undefined,
  serverSpans: undefined,
  observeRole() {},
  teeLogger: <L extends Logger>(logger: L): L => logger,
  shutdown: async () => {},
})

/** Bucket bounds of the HTTP duration histograms, seconds (the OTel HTTP semantic conventions' advice). */
export const HTTP_DURATION_BUCKETS: readonly number[] = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10])
