/**
 * `service policy check FILE [--json]` (issue 31 item 1): validates a policy
 * document exactly as a reload would (engine/config/policy-document.ts),
 * against the clock now (a waiver's 30-day bound), without a configuration
 * and without starting a role. Valid: one line on stdout, exit 0. Invalid
 * or unreadable: the sentence naming every problem on stderr, exit 2 (as
 * `check-config` refuses). `--json` prints one object on stdout either way.
 *
 * What depends on the running role (an advisory rule on a mount that booted
 * without one) is not known here; a reload refuses it (docs/policy.md).
 */
import { policyProblemsSentence, readPolicyDocument } from '../../engine/config/policy-document.js'
import { MOUNT_KEYS } from '../../engine/config/schema.js'
import { EXIT } from '../lifecycle/exit-codes.js'

export interface PolicyCheckIo {
  readonly out: NodeJS.WritableStream
  readonly err: NodeJS.WritableStream
  readonly now: number
}

export async function runPolicyCheck(file: string, json: boolean, io: PolicyCheckIo): Promise<number> {
  const read = await readPolicyDocument(file, io.now)
  if (!read.ok) {
    if (json) io.out.write(`${JSON.stringify({ file, valid: false, problems: read.problems })}\n`)
    else io.err.write(`service: ${policyProblemsSentence(file, read.problems)}\n`)
    return EXIT.BOOT_ABORTED
  }
  const mounts = MOUNT_KEYS.filter((k) => read.document.mounts?.[k] !== undefined)
  const waivers = read.document.waivers?.length ?? 0
  if (json) io.out.write(`${JSON.stringify({ file, valid: true, digest: read.digest, mounts, waivers })}\n`)
  else io.out.write(`policy document ${file} is valid: digest ${read.digest}, rules for ${mounts.length === 0 ? 'no mount' : mounts.join(', ')}, ${waivers} waiver${waivers === 1 ? '' : 's'}\n`)
  return EXIT.OK
}
