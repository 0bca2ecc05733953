/**
 * The document held to its schema (compiled once, STYLE.md rule 5), each
 * typebox error turned into one problem a person can act on: an unknown key
 * named as such, a value outside a union with the values it may take, and a
 * rule entry checked against the one schema its `rule` names rather than
 * reported against every branch of the rule union.
 */
import { Compile } from 'typebox/compile'
import Guard from 'typebox/guard'
import { CONFIG_REFUSAL } from '../errors.js'
import { RULE_KINDS, type RuleKind } from '../policy/decision.js'
import { RULE_SCHEMAS } from '../policy/rule-schema.js'
import type { ConfigProblem } from './problems.js'
import { ConfigSchema } from './schema.js'

const validator = Compile(ConfigSchema)
const ruleValidators = new Map(RULE_KINDS.map((kind) => [kind, Compile(RULE_SCHEMAS[kind])]))

const RULES_PATH = /^\/mounts\/(js|py)\/rules\/(\d+)(\/|$)/

/** A compiled schema whose errors schemaProblems reports: the configuration's, or another document's with the same `mounts.<m>.rules` (the policy document). */
export type DocumentValidator = Pick<typeof validator, 'Check' | 'Errors'>

export function schemaProblems(value: unknown, sourceOf: (path: string) => string, schema: DocumentValidator = validator): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  const seen = new Set<string>()
  const add = (pointer: string, message: string): void => {
    const path = pointer.split('/').filter((s) => s.length > 0).join('.')
    const key = `${path}\u0000${message}`
    if (seen.has(key)) return
    seen.add(key)
    problems.push({ path, message, source: sourceOf(path) })
  }
  if (schema.Check(value)) return problems
  const ruleLists = new Set<string>()
  for (const error of schema.Errors(value)) {
    const rules = RULES_PATH.exec(error.instancePath)
    if (rules !== null) {
      // The rule union's errors name every branch; check the entry against the
      // one schema its `rule` names instead (below), for one precise report.
      ruleLists.add(rules[1] as string)
      continue
    }
    if (error.keyword === 'boolean') continue // duplicate of the additionalProperties report
    if (error.keyword === 'additionalProperties') {
      const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? []
      for (const key of extra) add(`${error.instancePath}/${key}`, CONFIG_REFUSAL.unknownKey)
      continue
    }
    if (error.keyword === 'anyOf' || error.keyword === 'const') {
      add(error.instancePath, CONFIG_REFUSAL.notOneOf(allowedValues(error.schemaPath)))
      continue
    }
    add(error.instancePath, error.message)
  }
  const mounts = (value as { mounts?: Record<string, { rules?: unknown }> }).mounts ?? {}
  for (const mount of ruleLists) {
    const rules = mounts[mount]?.rules
    if (!Array.isArray(rules)) continue
    rules.forEach((rule: unknown, index) => {
      const base = `/mounts/${mount}/rules/${index}`
      const kind = Guard.IsObjectNotArray(rule) ? rule['rule'] : undefined
      if (typeof kind !== 'string' || !RULE_KINDS.includes(kind as RuleKind)) {
        add(`${base}/rule`, CONFIG_REFUSAL.unknownRuleKind(kind, RULE_KINDS))
        return
      }
      const check = ruleValidators.get(kind as RuleKind)
      if (check === undefined || check.Check(rule)) return
      for (const error of check.Errors(rule)) {
        if (error.keyword === 'boolean') continue
        if (error.keyword === 'additionalProperties') {
          const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? []
          for (const key of extra) add(`${base}${error.instancePath}/${key}`, CONFIG_REFUSAL.unknownRuleKey(kind))
          continue
        }
        add(`${base}${error.instancePath}`, error.message)
      }
    })
  }
  return problems
}

function allowedValues(schemaPath: string): string {
  // schemaPath is a JSON pointer into ConfigSchema, e.g. '#/properties/observability/properties/logFormat'
  let node: unknown = ConfigSchema
  for (const segment of schemaPath.replace(/^#\/?/, '').split('/').filter((s) => s.length > 0)) {
    if (!Guard.IsObjectNotArray(node)) break
    node = node[segment]
  }
  if (Guard.IsObjectNotArray(node) && Array.isArray(node['anyOf'])) {
    const values = (node['anyOf'] as unknown[]).map((m) => (Guard.IsObjectNotArray(m) ? m['const'] : undefined)).filter((v) => v !== undefined)
    if (values.length > 0) return values.map((v) => JSON.stringify(v)).join(', ')
  }
  return 'the allowed values'
}
