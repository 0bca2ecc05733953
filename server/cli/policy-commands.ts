/**
 * The policy commands that work on the store's document (issue 31 items
 * 1-3): `service policy push FILE`, `waive PKG@RANGE`, `freeze --at` and
 * `show`. They read the configuration (`--config`, the environment) for the
 * store (`store.*`) and refuse unless `policy.store` is true, since no role
 * would read what they write otherwise. They start no role.
 *
 * Exit codes (docs/policy.md "The policy commands"): 0 written (or shown);
 * 2 nothing written because something given is refused: the configuration,
 * the document (the same sentence as `service policy check`), a usage
 * problem; 1 the store failed, or an edit lost to other writers
 * EDIT_ATTEMPTS times.
 */
import { userInfo } from 'node:os'
import type { Config } from '../../engine/config/config.js'
import { loadConfig } from '../../engine/config/load.js'
import { withFreeze, withWaiver } from '../../engine/config/policy-edit.js'
import { policyProblemsSentence, readPolicyDocument, type PolicyDocument } from '../../engine/config/policy-document.js'
import { POLICY_OBJECT_KEY, readStoredPolicy } from '../../engine/config/policy-source.js'
import { formatProblems } from '../../engine/config/problems.js'
import { MOUNT_KEYS, type MountKey } from '../../engine/config/schema.js'
import { editStoredPolicy, EDIT_ATTEMPTS, publishPolicy, type EditOutcome } from '../../engine/config/stored-policy.js'
import { systemClock } from '../../engine/clock.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import type { WaiverConfig } from '../../engine/policy/waivers.js'
import type { ObjectStore } from '../../engine/store/object-store.js'
import { forwardProxyOf } from '../../engine/upstream/forward-proxy.js'
import { EXIT } from '../lifecycle/exit-codes.js'
import { describeObjectStore, openObjectStore } from '../roles/object-store.js'
import type { Command } from './args.js'

export type PolicyStoreCommand = Extract<Command, { kind: 'policy-push' | 'policy-waive' | 'policy-freeze' | 'policy-show' }>

export interface PolicyCommandIo {
  readonly out: NodeJS.WritableStream
  readonly err: NodeJS.WritableStream
  readonly env: NodeJS.ProcessEnv
  readonly now: () => number
}

/** `--expires 24h`: a duration from now, in minutes, hours or days. */
const DURATION = /^(\d{1,4})([mhd])$/
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** An instant as the document writes it: RFC 3339 in UTC, to the second. */
function instant(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

function mountsOf(document: PolicyDocument): string {
  const named = MOUNT_KEYS.filter((k) => document.mounts?.[k] !== undefined)
  return named.length === 0 ? 'no mount' : named.join(', ')
}

/** The configuration, the store and the object's name; or the exit code after saying why not. */
async function openPolicyStore(command: PolicyStoreCommand, io: PolicyCommandIo): Promise<{ config: Config; store: ObjectStore; name: string } | number> {
  const loaded = loadConfig({ configPath: command.configPath, env: io.env })
  if (!loaded.ok) {
    io.err.write(`${formatProblems(loaded.problems)}\n`)
    return EXIT.BOOT_ABORTED
  }
  const { config } = loaded
  if (config.policy.store !== true) {
    const why = config.policy.file === undefined ? 'the roles read no policy document' : `the roles read ${config.policy.file} (policy.file); edit that file`
    io.err.write(`service: policy ${command.kind.slice('policy-'.length)}: policy.store is not true in this configuration: ${why}\n`)
    return EXIT.BOOT_ABORTED
  }
  try {
    const store = await openObjectStore(config.store, systemClock, io.env, forwardProxyOf(config.egress.proxy, io.env))
    const described = describeObjectStore(config.store)
    return { config, store, name: `${described}${described.endsWith('/') ? '' : '/'}${POLICY_OBJECT_KEY}` }
  } catch (error) {
    io.err.write(`service: policy ${command.kind.slice('policy-'.length)}: ${(error as Error).message}\n`)
    return EXIT.BOOT_ABORTED
  }
}

export async function runPolicyCommand(command: PolicyStoreCommand, io: PolicyCommandIo): Promise<number> {
  const verb = command.kind.slice('policy-'.length)
  let pushed: Awaited<ReturnType<typeof readPolicyDocument>> | undefined
  if (command.kind === 'policy-push') {
    // The file is checked before the store is touched, with the check's own sentence.
    pushed = await readPolicyDocument(command.file, io.now())
    if (!pushed.ok) {
      io.err.write(`service: ${policyProblemsSentence(command.file, pushed.problems)}\n`)
      return EXIT.BOOT_ABORTED
    }
  }
  const opened = await openPolicyStore(command, io)
  if (typeof opened === 'number') return opened
  const { config, store, name } = opened
  try {
    switch (command.kind) {
      case 'policy-push': {
        if (pushed === undefined || !pushed.ok) return EXIT.BOOT_ABORTED
        await publishPolicy(store, pushed.document, pushed.digest)
        io.out.write(`policy document ${command.file} pushed to ${name}: digest ${pushed.digest}, rules for ${mountsOf(pushed.document)}, ${plural(pushed.document.waivers?.length ?? 0, 'waiver')}\n`)
        return EXIT.OK
      }
      case 'policy-show': {
        const stored = await readStoredPolicy(store)
        if (stored === undefined) {
          io.err.write(`service: policy show: the store holds no policy document at ${name}\n`)
          return EXIT.ABNORMAL
        }
        io.out.write(stored.text.endsWith('\n') ? stored.text : `${stored.text}\n`)
        return EXIT.OK
      }
      case 'policy-waive': {
        const waiver = waiverOf(command, io)
        if (typeof waiver === 'string') {
          io.err.write(`service: policy waive: ${waiver}\n`)
          return EXIT.BOOT_ABORTED
        }
        const outcome = await editStoredPolicy(store, (document) => withWaiver(document, waiver), io.now)
        return report(outcome, name, verb, io, (document, digest) =>
          `waiver for ${waiver.package}@${waiver.versions} (${waiver.mount ?? 'js'}) by ${waiver.by} until ${waiver.expires} added to ${name}: digest ${digest}, ${plural(document.waivers?.length ?? 0, 'waiver')}`)
      }
      case 'policy-freeze': {
        const at = command.at === 'now' ? instant(io.now()) : command.at
        const configured: Partial<Record<MountKey, readonly RuleConfig[]>> = {}
        for (const key of MOUNT_KEYS) {
          const rules = config.mounts[key]?.rules
          if (rules !== undefined) configured[key] = rules
        }
        let frozen: MountKey[] = []
        const outcome = await editStoredPolicy(store, (document) => {
          const edit = withFreeze(document, at, configured)
          frozen = edit.mounts
          return edit.document
        }, io.now)
        return report(outcome, name, verb, io, (_document, digest) =>
          `freeze at ${at} put at the top of the rules of ${frozen.length === 0 ? 'no mount' : frozen.join(', ')} in ${name}: digest ${digest}`)
      }
    }
  } catch (error) {
    io.err.write(`service: policy ${verb}: ${name}: ${storeDetail(error)}\n`)
    return EXIT.ABNORMAL
  }
}

function report(outcome: EditOutcome, name: string, verb: string, io: PolicyCommandIo, line: (document: PolicyDocument, digest: string) => string): number {
  switch (outcome.kind) {
    case 'written':
      io.out.write(`${line(outcome.reading.document, outcome.reading.digest)}\n`)
      return EXIT.OK
    case 'refused':
      io.err.write(outcome.stage === 'stored'
        ? `service: policy ${verb}: the store's document does not validate, nothing was written (push a valid one): ${policyProblemsSentence(name, outcome.problems)}\n`
        : `service: policy ${verb}: nothing was written: ${policyProblemsSentence(name, outcome.problems)}\n`)
      return EXIT.BOOT_ABORTED
    case 'contended':
      io.err.write(`service: policy ${verb}: ${name} changed under each of ${EDIT_ATTEMPTS} attempts (other writers); nothing was written, run it again\n`)
      return EXIT.ABNORMAL
  }
}

/** The waiver the command asks for, or why it cannot be built. */
function waiverOf(command: Extract<PolicyStoreCommand, { kind: 'policy-waive' }>, io: PolicyCommandIo): WaiverConfig | string {
  // The version part follows the last `@` past the first character, so a scoped name keeps its own `@`.
  const at = command.spec.lastIndexOf('@')
  if (at <= 0 || at === command.spec.length - 1) return `${command.spec} is not PKG@RANGE (e.g. left-pad@1.3.0, @scope/name@^2.1.0)`
  const duration = DURATION.exec(command.expires)
  const expires = duration === null ? command.expires : instant(io.now() + Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS])
  const by = command.by ?? io.env['USER'] ?? safeUserName()
  if (by === undefined || by === '') return 'no --by, and the user name is unknown: say who grants the waiver with --by'
  return {
    package: command.spec.slice(0, at),
    versions: command.spec.slice(at + 1),
    reason: command.reason,
    by,
    expires,
    ...(command.mount === undefined ? {} : { mount: command.mount }),
  }
}

function safeUserName(): string | undefined {
  try {
    return userInfo().username
  } catch {
    return undefined
  }
}

function storeDetail(error: unknown): string {
  const cause = (error as { cause?: unknown })?.cause
  const message = (error as Error)?.message ?? String(error)
  return cause instanceof Error ? `${message}: ${cause.message}` : message
}
