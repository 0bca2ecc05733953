/**
 * `service check-config [--json]` (SPEC.md 1.8): validates the configuration
 * without starting a role and echoes it resolved, secrets redacted (the
 * BearerToken values render as the placeholder) and endpoint values printed
 * (SPEC.md 2.11), with the predicted memory plan (SPEC.md 8.2). Mirror
 * stores with a control plane are not built here: boot builds them against
 * the live environment.
 */
import type { LoadResult } from '../../engine/config/load.js'
import { formatProblems } from '../../engine/config/problems.js'
import { describePlan } from '../../engine/memory/plan-report.js'
import { EXIT } from '../lifecycle/exit-codes.js'
import { planFor } from './runtime-plan.js'
import { describeTelemetrySettings, readTelemetrySettings } from '../../engine/telemetry/telemetry-settings.js'
import { isServiceError } from '../../engine/errors.js'
import { forwardProxyOf } from '../../engine/upstream/forward-proxy.js'

export interface CheckConfigOutput {
  readonly json: boolean
  readonly out: NodeJS.WritableStream
  readonly err: NodeJS.WritableStream
  /** The environment the telemetry settings (`OTEL_*`, `VENDOR_*`) and the forward proxy (`HTTPS_PROXY`, ...) come from; default none. */
  readonly env?: NodeJS.ProcessEnv
}

export const MAINTENANCE_CLIENT_NOTE = 'mirror store maintenance clients are not built by check-config; boot builds them against the live environment'

/** SPEC.md 1.8: the managed registry's control-plane client is built by boot, never by a configuration check. */
export function managedRegistryNote(names: readonly string[]): string {
  return `the managed-registry (CodeArtifact) client of credential ${names.map((n) => JSON.stringify(n)).join(', ')} is not built by check-config; boot builds it against the live environment and mints the first token there`
}

export async function runCheckConfig(loaded: LoadResult, output: CheckConfigOutput): Promise<number> {
  if (!loaded.ok) {
    if (output.json) output.out.write(`${JSON.stringify({ ok: false, problems: loaded.problems })}\n`)
    output.err.write(`${formatProblems(loaded.problems)}\n`)
    return EXIT.BOOT_ABORTED
  }
  // The forward proxy as boot builds it (docs/security.md#forward-proxy): a variable boot would refuse is refused here.
  let forwardProxy: Record<string, unknown> | 'direct'
  try {
    forwardProxy = forwardProxyOf(loaded.config.egress.proxy, output.env ?? {})?.describe() ?? 'direct'
  } catch (error) {
    if (!isServiceError(error, 'CONFIG_INVALID')) throw error
    const problems = [{ path: 'egress.proxy', message: error.message, source: 'environment' }]
    if (output.json) output.out.write(`${JSON.stringify({ ok: false, problems })}\n`)
    output.err.write(`${formatProblems(problems)}\n`)
    return EXIT.BOOT_ABORTED
  }
  const plan = describePlan(await planFor(loaded.config))
  const { source, ...config } = loaded.config
  const managed = loaded.config.credentials.filter((c) => c.provider === 'managedRepo').map((c) => c.name)
  const notes = [MAINTENANCE_CLIENT_NOTE, ...(managed.length === 0 ? [] : [managedRegistryNote(managed)])]
  // With telemetry on, the export settings as boot echoes them: OTLP header values redacted, only their names shown.
  const telemetrySettings = config.observability.telemetry === 'on' ? readTelemetrySettings(output.env ?? {}) : undefined
  const telemetry = telemetrySettings === undefined ? undefined : { ...describeTelemetrySettings(telemetrySettings), problems: telemetrySettings.problems }
  const report = { ok: true, source, config, plan, forwardProxy, ...(telemetry === undefined ? {} : { telemetry }), notes }
  if (output.json) {
    output.out.write(`${JSON.stringify(report)}\n`)
  } else {
    output.out.write(`configuration OK (${source.document === undefined ? 'embedded defaults and environment' : source.document})\n`)
    output.out.write(`${JSON.stringify({ config, plan, forwardProxy, ...(telemetry === undefined ? {} : { telemetry }) }, null, 2)}\n`)
    for (const note of notes) output.out.write(`note: ${note}\n`)
  }
  return EXIT.OK
}
