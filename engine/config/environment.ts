/**
 * `SERVICE_` environment variables as a configuration overlay (SPEC.md 2.11,
 * DESIGN.md): the path in upper snake case, levels joined by `__`, each level
 * mapped to camelCase (`SERVICE_SERVER__SHUTDOWN_DRAIN_TIMEOUT` is
 * `server.shutdownDrainTimeout`). Values are strings; each is converted by
 * the type the schema gives its path, so `SERVICE_SERVER__PORT=x` is a type
 * problem reported like any other, not a silent NaN. Arrays and objects
 * (a rule list, say) are given as JSON text.
 */
import type { TSchema } from 'typebox'
import { CONFIG_REFUSAL } from '../errors.js'
import type { ConfigProblem } from './problems.js'

export const ENV_PREFIX = 'SERVICE_'

/** Variables under the prefix that are not configuration keys. */
const NOT_KEYS = new Set(['SERVICE_CONFIG'])

/**
 * Conventional variables read as keys when their `SERVICE_` form is unset:
 * `LOG_LEVEL` sets the log floor (SPEC.md 2.10).
 */
const ALIASES: Readonly<Record<string, string>> = { LOG_LEVEL: 'SERVICE_OBSERVABILITY__LOG_LEVEL' }

export interface EnvironmentOverlay {
  readonly values: Record<string, unknown>
  /** Dotted path → variable name, so problems name what the operator set. */
  readonly origins: ReadonlyMap<string, string>
  readonly problems: readonly ConfigProblem[]
}

export function camelCase(segment: string): string {
  return segment.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())
}

export function readEnvironment(schema: TSchema, env: NodeJS.ProcessEnv): EnvironmentOverlay {
  const values: Record<string, unknown> = {}
  const origins = new Map<string, string>()
  const problems: ConfigProblem[] = []
  const entries = new Map<string, [string, string]>()
  for (const [alias, canonical] of Object.entries(ALIASES)) {
    const value = env[alias]
    if (value !== undefined && env[canonical] === undefined) entries.set(canonical, [alias, value.toLowerCase()])
  }
  for (const name of Object.keys(env)) {
    const value = env[name]
    if (name.startsWith(ENV_PREFIX) && !NOT_KEYS.has(name) && value !== undefined) entries.set(name, [name, value])
  }
  for (const key of [...entries.keys()].sort()) {
    const [name, raw] = entries.get(key) as [string, string]
    const path = key.slice(ENV_PREFIX.length).split('__').map(camelCase)
    const dotted = path.join('.')
    const target = schemaAt(schema, path)
    if (path.some((p) => p.length === 0) || target === undefined) {
      problems.push({ path: dotted, message: CONFIG_REFUSAL.unknownKey, source: `environment ${name}` })
      continue
    }
    const converted = convert(raw, target)
    if (!converted.ok) {
      problems.push({ path: dotted, message: converted.message, source: `environment ${name}` })
      continue
    }
    setPath(values, path, converted.value)
    origins.set(dotted, name)
  }
  return { values, origins, problems }
}

/** The schema that governs `path`, or undefined when no key is there. */
export function schemaAt(schema: TSchema, path: readonly string[]): TSchema | undefined {
  let node: TSchema | undefined = schema
  for (const segment of path) {
    node = childSchema(node, segment)
    if (node === undefined) return undefined
  }
  return node
}

function childSchema(node: TSchema, segment: string): TSchema | undefined {
  const s = node as Record<string, unknown>
  if (Array.isArray(s['anyOf'])) {
    for (const member of s['anyOf'] as TSchema[]) {
      const found = childSchema(member, segment)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (s['type'] === 'object') {
    const properties = s['properties'] as Record<string, TSchema> | undefined
    if (properties !== undefined && Object.hasOwn(properties, segment)) return properties[segment]
    const pattern = s['patternProperties'] as Record<string, TSchema> | undefined
    if (pattern !== undefined) return Object.values(pattern)[0]
  }
  return undefined
}

type Converted = { ok: true; value: unknown } | { ok: false; message: string }

function typesOf(schema: TSchema): Set<string> {
  const s = schema as Record<string, unknown>
  const out = new Set<string>()
  if (Array.isArray(s['anyOf'])) for (const m of s['anyOf'] as TSchema[]) for (const t of typesOf(m)) out.add(t)
  if (typeof s['type'] === 'string') out.add(s['type'])
  if (s['const'] !== undefined) out.add(typeof s['const'])
  return out
}

function convert(raw: string, schema: TSchema): Converted {
  const types = typesOf(schema)
  const text = raw.trim()
  if (types.has('array') || types.has('object')) {
    try {
      return { ok: true, value: JSON.parse(text) }
    } catch {
      return { ok: false, message: CONFIG_REFUSAL.envNotJson }
    }
  }
  if (types.has('integer') || types.has('number')) {
    const n = Number(text)
    if (text === '' || !Number.isFinite(n)) return { ok: false, message: CONFIG_REFUSAL.envNotNumber(raw) }
    return { ok: true, value: n }
  }
  if (types.has('boolean')) {
    const lowered = text.toLowerCase()
    if (['true', '1', 'yes', 'on'].includes(lowered)) return { ok: true, value: true }
    if (['false', '0', 'no', 'off'].includes(lowered)) return { ok: true, value: false }
    return { ok: false, message: CONFIG_REFUSAL.envNotBoolean(raw) }
  }
  return { ok: true, value: raw }
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target
  for (const segment of path.slice(0, -1)) {
    const next = node[segment]
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[segment] = {}
    node = node[segment] as Record<string, unknown>
  }
  node[path[path.length - 1] as string] = value
}
