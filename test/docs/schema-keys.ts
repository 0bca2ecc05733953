/**
 * Every key of the configuration schema, walked from the exported typebox
 * schema object (a plain JSON Schema), so the documentation test needs no
 * hand-kept list. Object properties join with `.`, an array of objects adds
 * `[]`, and each member of a union of objects discriminated by a `rule`
 * literal (a mount's rule list) adds `{Kind}`:
 * `server.port`, `credentials[].name`, `mounts.js.rules[]{DenyIfEpss}.threshold`.
 */

interface SchemaNode {
  readonly type?: string
  readonly properties?: Readonly<Record<string, SchemaNode>>
  readonly items?: SchemaNode
  readonly anyOf?: readonly SchemaNode[]
  readonly const?: unknown
  readonly default?: unknown
}

export interface SchemaKey {
  /** The key's path, as described above. */
  readonly path: string
  /** The schema default, when the schema gives one. */
  readonly default?: unknown
  readonly hasDefault: boolean
  /** For a rule option: the rule kind it belongs to. */
  readonly ruleKind?: string
}

function isObjectSchema(node: SchemaNode): boolean {
  return node.type === 'object' && node.properties !== undefined
}

function ruleKindOf(node: SchemaNode): string | undefined {
  const kind = node.properties?.['rule']?.const
  return typeof kind === 'string' ? kind : undefined
}

/** Leaves and containers alike: a container key (an object, an array) is a key too. */
export function schemaKeys(root: SchemaNode): SchemaKey[] {
  const out: SchemaKey[] = []
  const visit = (node: SchemaNode, path: string, ruleKind: string | undefined): void => {
    if (path !== '') {
      out.push({ path, hasDefault: 'default' in node, ...('default' in node ? { default: node.default } : {}), ...(ruleKind === undefined ? {} : { ruleKind }) })
    }
    if (isObjectSchema(node)) {
      for (const [name, child] of Object.entries(node.properties ?? {})) visit(child, path === '' ? name : `${path}.${name}`, ruleKind)
      return
    }
    const items = node.items
    if (node.type === 'array' && items !== undefined) {
      if (isObjectSchema(items)) {
        for (const [name, child] of Object.entries(items.properties ?? {})) visit(child, `${path}[].${name}`, ruleKind)
        return
      }
      const members = items.anyOf ?? []
      for (const member of members) {
        const kind = ruleKindOf(member)
        if (kind === undefined || !isObjectSchema(member)) continue
        for (const [name, child] of Object.entries(member.properties ?? {})) {
          if (name === 'rule') continue
          visit(child, `${path}[]{${kind}}.${name}`, kind)
        }
      }
    }
  }
  visit(root, '', undefined)
  return out
}
