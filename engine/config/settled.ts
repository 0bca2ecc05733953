/**
 * A schema's defaults, seen by the type system. typebox keeps `default` out of
 * `Static<>` (a validator may or may not fill it), but the loader always runs
 * `Value.Default`, so a key declared with `Defaulted(type, value)` is
 * optional in the document and present in the loaded value.
 *
 * `defaulted(schema)` is the schema of what `Value.Default` returns: every
 * defaulted key required, the others still optional. `settled(schema)` is
 * the schema of a resolved value: every key present, `undefined` where
 * nothing is set (so a consumer reads `cores: number | undefined`, and an
 * object handed on keeps the key). Both mark every property readonly and
 * every array immutable: the loader freezes what it returns (STYLE.md rule
 * 5). The types and the functions walk the same cases; the loader decodes
 * every resolved value against its schema, so neither can drift.
 *
 * Unions are leaves of the mapping: a rule entry (engine/policy/rule-schema.ts)
 * keeps its own type.
 */
import Type, {
  ArrayOptions, ObjectOptions, RemoveOptional,
  type Static, type TArray, type TImmutable, type TObject, type TOptional, type TProperties, type TReadonly, type TSchema, type TUndefined, type TUnion,
} from 'typebox'
import Guard from 'typebox/guard'
import Value from 'typebox/value'

/** The type-level mark of a key the schema's default fills: the `default` annotation itself, typed. */
export interface DefaultMark { default: unknown }

export type TDefaulted<T extends TSchema> = TOptional<T & DefaultMark>

/** A key the document may omit: `value` (in the document's form) fills it. */
export function Defaulted<T extends TSchema>(type: T, value: Readonly<Static<T>>): TDefaulted<T> {
  return Type.Optional(Type.With(type, { default: value })) as unknown as TDefaulted<T>
}

/** What an unset key without a default becomes: still optional, or present and undefined. */
type Unset = 'optional' | 'undefined'

type TShapeProperty<P extends TSchema, U extends Unset> =
  P extends DefaultMark ? TReadonly<TShape<Omit<P, '~optional'>, U>>
    : P extends TOptional<TSchema>
      ? U extends 'undefined' ? TReadonly<TUnion<[TShape<Omit<P, '~optional'>, U>, TUndefined]>> : TReadonly<TOptional<TShape<Omit<P, '~optional'>, U>>>
      : TReadonly<TShape<P, U>>

type TShape<T extends TSchema, U extends Unset> =
  T extends TObject<infer P> ? TObject<{ [K in keyof P]: TShapeProperty<P[K], U> }>
    : T extends TArray<infer I> ? TImmutable<TArray<TShape<I, U>>>
      : T

export type TDefaultedSchema<T extends TSchema> = TShape<T, 'optional'>
export type TSettled<T extends TSchema> = TShape<T, 'undefined'>

export function defaulted<T extends TSchema>(schema: T): TDefaultedSchema<T> {
  return shape(schema, 'optional') as TDefaultedSchema<T>
}

export function settled<T extends TSchema>(schema: T): TSettled<T> {
  return shape(schema, 'undefined') as TSettled<T>
}

function shape(schema: TSchema, unset: Unset): TSchema {
  if (Type.IsObject(schema)) {
    const properties: TProperties = {}
    for (const [key, property] of Object.entries(schema.properties)) properties[key] = shapeProperty(property, unset)
    return Type.Object(properties, ObjectOptions(schema))
  }
  if (Type.IsArray(schema)) return Type.Immutable(Type.Array(shape(schema.items, unset), ArrayOptions(schema)))
  return schema
}

function shapeProperty(property: TSchema, unset: Unset): TSchema {
  if (!Type.IsOptional(property)) return Type.Readonly(shape(property, unset))
  const inner = shape(RemoveOptional(property), unset)
  if (Object.hasOwn(property, 'default')) return Type.Readonly(inner)
  return Type.Readonly(unset === 'undefined' ? Type.Union([inner, Type.Undefined()]) : Type.Optional(inner))
}

/**
 * `value` laid out as `schema` says: object keys in the schema's order, a
 * required key present even when undefined, an optional one only when set,
 * unknown keys dropped; a union lays out by the first member the laid-out
 * value matches (every union laid out here is discriminated by a key).
 * The value is not checked here: decoding it against the same schema is.
 */
export function layout(schema: TSchema, value: unknown): unknown {
  if (value === undefined) return undefined
  if (Type.IsObject(schema)) {
    if (!Guard.IsObjectNotArray(value)) return value
    const out: Record<string, unknown> = {}
    for (const [key, property] of Object.entries(schema.properties)) {
      const laid = layout(property, value[key])
      if (laid !== undefined || !Type.IsOptional(property)) out[key] = laid
    }
    return out
  }
  if (Type.IsArray(schema)) return Array.isArray(value) ? value.map((item: unknown) => layout(schema.items, item)) : value
  if (Type.IsUnion(schema)) {
    for (const member of schema.anyOf) {
      const laid = layout(member, value)
      if (Value.Check(member, laid)) return laid
    }
  }
  return value
}
