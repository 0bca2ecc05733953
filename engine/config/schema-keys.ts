/**
 * Every key the configuration schema accepts, as the dotted paths the
 * refusals and the `SERVICE_` variables use (`server.port`,
 * `mounts.js.upstreams.public.url`), so documentation can be checked
 * against the schema rather than against memory. Leaves only: an object is
 * listed through its keys, an array of objects through its entries' keys as
 * `credentials[].name`. A union (a rule entry) is a leaf: the rule kinds have
 * their own schemas (engine/policy/rule-schema.ts).
 */
import Type, { type TSchema } from 'typebox'
import { ConfigSchema } from './schema.js'

export function schemaKeyPaths(schema: TSchema = ConfigSchema): string[] {
  const out: string[] = []
  const walk = (node: TSchema, path: string): void => {
    if (Type.IsObject(node)) {
      for (const [key, child] of Object.entries(node.properties)) walk(child, path === '' ? key : `${path}.${key}`)
      return
    }
    if (Type.IsArray(node) && Type.IsObject(node.items)) {
      walk(node.items, `${path}[]`)
      return
    }
    out.push(path)
  }
  walk(schema, '')
  return out
}
