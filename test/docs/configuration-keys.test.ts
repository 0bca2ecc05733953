/**
 * Every key of the configuration schema is documented in docs/configuration.md,
 * with its default, and every documented key exists: the key reference table
 * ("Key reference") has a row per key, the rules table ("Rules") a row per
 * rule kind naming each of its options. The keys are walked from the exported
 * typebox schema (./schema-keys.ts), never listed by hand.
 */
import t from 'tap'
import { ConfigSchema } from '../../engine/config/schema.js'
import { RULE_SCHEMAS } from '../../engine/policy/rule-schema.js'
import { codeSpans, readDoc, section, tableRows } from './markdown.js'
import { schemaKeys, type SchemaKey } from './schema-keys.js'

const PAGE = 'docs/configuration.md'
const page = readDoc(PAGE)

/** `mounts.js.x`, `mounts.py.x` and `mounts.<m>.x` name one key of the one mount schema both mounts share. */
function mountNeutral(path: string): string {
  return path.replace(/^mounts\.(js|py|<m>)\./, 'mounts.<m>.')
}

/** The documented keys: every code span of the first cell of each key reference row. */
function documentedKeys(markdown: string): Map<string, { defaultCell: string, line: number }> {
  const rows = tableRows(section(markdown, 'Key reference'))
  const out = new Map<string, { defaultCell: string, line: number }>()
  for (const row of rows) {
    for (const key of codeSpans(row.cells[0] ?? '')) out.set(mountNeutral(key), { defaultCell: row.cells[1] ?? '', line: row.line })
  }
  return out
}

/** Rule kinds documented in the rules table, each with the option names its row (and the "every rule" row) gives. */
function documentedRules(markdown: string): Map<string, Set<string>> {
  const rows = tableRows(section(markdown, 'Rules'))
  const shared = rows.find((r) => r.cells[0] === 'every rule')
  const sharedOptions = codeSpans(shared?.cells[1] ?? '')
  const out = new Map<string, Set<string>>()
  for (const row of rows) {
    const kind = codeSpans(row.cells[0] ?? '')[0]
    if (kind === undefined) continue
    out.set(kind, new Set([...codeSpans(row.cells[1] ?? ''), ...sharedOptions]))
  }
  return out
}

/** What the default cell must show for a schema default. */
function defaultProblem(key: SchemaKey, cell: string): string | undefined {
  const value = key.default
  if (cell.trim() === '') return 'has an empty default cell, but the schema gives a default'
  if (typeof value === 'number') {
    const forms = [String(value), value.toLocaleString('en-US')]
    return forms.some((f) => cell.includes(f)) ? undefined : `default cell does not show ${value}`
  }
  if (typeof value === 'boolean') return cell.includes(String(value)) ? undefined : `default cell does not show ${value}`
  if (typeof value === 'string') {
    const shown = value === '' ? '""' : value
    return cell.includes(shown) ? undefined : `default cell does not show ${JSON.stringify(value)}`
  }
  if (Array.isArray(value) && value.length === 0) return cell.includes('[]') ? undefined : 'default cell does not show []'
  return undefined
}

const keys = schemaKeys(ConfigSchema as never)
const isContainer = (key: SchemaKey): boolean => keys.some((k) => k.path.startsWith(`${key.path}.`) && !k.path.startsWith(`${key.path}[]`))
const emptyObjectDefault = (key: SchemaKey): boolean =>
  typeof key.default === 'object' && key.default !== null && !Array.isArray(key.default) && Object.keys(key.default).length === 0

t.test('the schema walk finds the keys it must', async (t) => {
  const paths = keys.map((k) => k.path)
  for (const expected of ['server.port', 'advisories.quietTime.py', 'credentials[].provider', 'mounts.py.upstreams.public.allowHosts', 'mounts.js.rules[]{DenyIfEpss}.threshold']) {
    t.ok(paths.includes(expected), expected)
  }
  t.ok(keys.length > 100, `${keys.length} keys`)
})

t.test('every configuration key has a row in the key reference, with its default', async (t) => {
  const documented = documentedKeys(page)
  t.ok(documented.size > 50, `${PAGE} "Key reference" has ${documented.size} keys`)
  const wanted = new Map<string, SchemaKey>()
  for (const key of keys) {
    if (key.ruleKind !== undefined) continue
    // An object is documented through its keys, unless it carries a default of its own (`mounts`).
    if (isContainer(key) && (key.default === undefined || emptyObjectDefault(key))) continue
    wanted.set(mountNeutral(key.path), key)
  }
  for (const [path, key] of wanted) {
    const row = documented.get(path)
    if (row === undefined) {
      t.fail(`${path} is not documented in ${PAGE} "Key reference"`)
      continue
    }
    const problem = key.hasDefault ? defaultProblem(key, row.defaultCell) : undefined
    t.equal(problem, undefined, `${path} (${PAGE}:${row.line})`)
  }
})

t.test('every key the reference documents exists in the schema', async (t) => {
  const known = new Set(keys.filter((k) => k.ruleKind === undefined).map((k) => mountNeutral(k.path)))
  for (const [path, row] of documentedKeys(page)) {
    t.ok(known.has(path), `${path} (${PAGE}:${row.line}) is a schema key`)
  }
})

t.test('every rule kind and option is documented in the rules table, and nothing else', async (t) => {
  const documented = documentedRules(page)
  t.same([...documented.keys()].sort(), Object.keys(RULE_SCHEMAS).sort(), 'the rules table has one row per rule kind')
  for (const key of keys) {
    if (key.ruleKind === undefined || !key.path.startsWith('mounts.js.')) continue
    const option = key.path.slice(key.path.lastIndexOf('.') + 1)
    t.ok(documented.get(key.ruleKind)?.has(option), `${key.ruleKind}.${option} is named in the ${key.ruleKind} row (or the "every rule" row)`)
  }
  for (const [kind, options] of documented) {
    const schema = (RULE_SCHEMAS as Record<string, { properties: Record<string, unknown> } | undefined>)[kind]
    for (const option of options) t.ok(schema !== undefined && option in schema.properties, `${kind} takes ${option}`)
  }
})
