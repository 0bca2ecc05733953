/**
 * The policy document (issue 31 item 1): the rules of each mount and the
 * waivers, as data that changes without a restart. Named by `policy.file`,
 * read at boot, on SIGHUP and every `policy.pollSeconds`
 * (server/roles/policy-reloader.ts), and validated by `service policy check`.
 *
 *   { mounts: { <m>: { rules: [...] } }, waivers: [...] }
 *
 * YAML or JSON (JSON when the name ends in `.json`). Rules are exactly those
 * of the configuration (the same schema and checks); a mount the document
 * does not name keeps its configured rules. A document is valid as a whole
 * or not at all: every problem is reported at once, and none of it applies.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import Type, { type Static } from 'typebox'
import { Compile } from 'typebox/compile'
import Guard from 'typebox/guard'
import YAML from 'yaml'
import { ruleProblems } from '../policy/evaluator.js'
import { RULE_SCHEMA } from '../policy/rule-schema.js'
import { WAIVER_SCHEMA, waiverProblems } from '../policy/waivers.js'
import { syntaxProblem } from './read-sources.js'
import { schemaProblems } from './schema-problems.js'
import { MOUNT_KEYS } from './schema.js'

const closed = { additionalProperties: false } as const
const MountRules = Type.Object({ rules: Type.Array(RULE_SCHEMA) }, closed)

export const POLICY_DOCUMENT_SCHEMA = Type.Object({
  mounts: Type.Optional(Type.Object({ js: Type.Optional(MountRules), py: Type.Optional(MountRules) }, closed)),
  waivers: Type.Optional(Type.Array(WAIVER_SCHEMA)),
}, closed)

export type PolicyDocument = Static<typeof POLICY_DOCUMENT_SCHEMA>

const validator = Compile(POLICY_DOCUMENT_SCHEMA)

/** A read document: valid, with its digest (sha256 of its canonical JSON, 16 hex digits), or every problem found. */
export type PolicyReading =
  | { readonly ok: true; readonly document: PolicyDocument; readonly digest: string }
  | { readonly ok: false; readonly problems: readonly string[] }

/**
 * Validates a document's text at `now` (a waiver's bound is counted from
 * the moment it is read). `json`: parse as JSON (a `.json` name), else YAML.
 */
export function parsePolicyDocument(text: string, json: boolean, now: number): PolicyReading {
  let value: unknown
  try {
    value = json ? JSON.parse(text) : YAML.parse(text, { uniqueKeys: true, prettyErrors: false })
  } catch (error) {
    // Located by line and column, never quoted (read-sources.ts says why).
    return { ok: false, problems: [syntaxProblem(error, text, json)] }
  }
  if (value === null || value === undefined) value = {}
  if (!Guard.IsObjectNotArray(value)) return { ok: false, problems: ['the policy document is not a mapping'] }
  // typebox stops at the first failing member of an object: each section is checked alone, and
  // a section of the right shape gets the checks the schema cannot make, so every problem is named at once.
  const { mounts, waivers, ...rest } = value
  const shapeOf = (section: Record<string, unknown>): string[] => schemaProblems(section, () => 'policy document', validator).map((p) => `${p.path || '(root)'}: ${p.message}`)
  const problems = shapeOf(rest)
  const mountShape = shapeOf({ mounts })
  problems.push(...mountShape)
  const document = value as PolicyDocument
  if (mountShape.length === 0) {
    for (const key of MOUNT_KEYS) {
      const rules = document.mounts?.[key]?.rules
      if (rules !== undefined) problems.push(...ruleProblems(key, rules))
    }
  }
  const waiverShape = shapeOf({ waivers })
  problems.push(...(waiverShape.length > 0 ? waiverShape : waiverProblems(document.waivers ?? [], now)))
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, document, digest: createHash('sha256').update(JSON.stringify(document)).digest('hex').slice(0, 16) }
}

/** Reads and validates the document at `path`; an unreadable file is one problem. */
export async function readPolicyDocument(path: string, now: number): Promise<PolicyReading> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    return { ok: false, problems: [`cannot read ${path}: ${(error as Error).message}`] }
  }
  return parsePolicyDocument(text, path.endsWith('.json'), now)
}

/** The one sentence naming every problem (the refusal log line, `service policy check`, the boot abort). */
export function policyProblemsSentence(path: string, problems: readonly string[]): string {
  return `policy document ${path} refused, ${problems.length} problem${problems.length === 1 ? '' : 's'}: ${problems.join('; ')}`
}
