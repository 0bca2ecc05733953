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

export interface CheckConfigOutput {
  readonly json: boolean
  readonly out: NodeJS.WritableStream
  readonly err: NodeJS.WritableStream
}

export const MAINTENANCE_CLIENT_NOTE = 'mirror store maintenance clients are not built by check-config; boot builds them against the live environment'

export async function runCheckConfig(loaded: LoadResult, output: CheckConfigOutput): Promise<number> {
  if (!loaded.ok) {
    if (output.json) output.out.write(`${JSON.stringify({ ok: false, problems: loaded.problems })}\n`)
    output.err.write(`${formatProblems(loaded.problems)}\n`)
    return EXIT.BOOT_ABORTED
  }
  const plan = describePlan(await planFor(loaded.config))
  const { source, ...config } = loaded.config
  const report = { ok: true, source, config, plan, notes: [MAINTENANCE_CLIENT_NOTE] }
  if (output.json) {
    output.out.write(`${JSON.stringify(report)}\n`)
  } else {
    output.out.write(`configuration OK (${source.document === undefined ? 'embedded defaults and environment' : source.document})\n`)
    output.out.write(`${JSON.stringify({ config, plan }, null, 2)}\n`)
    output.out.write(`note: ${MAINTENANCE_CLIENT_NOTE}\n`)
  }
  return EXIT.OK
}
