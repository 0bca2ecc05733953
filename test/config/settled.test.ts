import t from 'tap'
import Type from 'typebox'
import Value from 'typebox/value'
import { DefaultedConfigSchema } from '../../engine/config/config.js'
import { defaultDocument } from '../../engine/config/resolve-config.js'
import { Defaulted, defaulted, layout, settled } from '../../engine/config/settled.js'

const closed = { additionalProperties: false } as const

const Example = Type.Object({
  port: Defaulted(Type.Integer(), 4873),
  cores: Type.Optional(Type.Integer()),
  inner: Defaulted(Type.Object({ path: Defaulted(Type.String(), './var'), bucket: Type.Optional(Type.String()) }, closed), {}),
  list: Defaulted(Type.Array(Type.String()), []),
}, closed)

t.test('Defaulted writes the default annotation that Value.Default fills', async (t) => {
  t.same(Value.Default(Example, {}), { port: 4873, inner: { path: './var' }, list: [] })
  t.equal(Example.properties.port.default, 4873)
  t.ok(Value.Check(Example, {}), 'the document may omit a defaulted key')
})

t.test('defaulted(): the schema of what Value.Default returns', async (t) => {
  const schema = defaulted(Example)
  t.notOk(Value.Check(schema, {}), 'a defaulted key is required once defaults have run')
  t.ok(Value.Check(schema, Value.Default(Example, {})))
  t.ok(Value.Check(schema, Value.Default(Example, { cores: 2 })))
})

t.test('settled(): every key present, undefined where unset', async (t) => {
  const schema = settled(Example)
  const value = { port: 1, cores: undefined, inner: { path: 'p', bucket: undefined }, list: [] }
  t.ok(Value.Check(schema, value))
  t.notOk(Value.Check(schema, { port: 1, inner: { path: 'p', bucket: undefined }, list: [] }), 'cores must be present')
  t.ok(Value.Check(schema, { ...value, cores: 2, inner: { path: 'p', bucket: 'b' } }))
})

t.test('layout(): schema order, required keys present, optional ones only when set, unknown keys dropped', async (t) => {
  const schema = Type.Object({
    a: Type.Number(),
    b: Type.Union([Type.String(), Type.Undefined()]),
    c: Type.Optional(Type.String()),
    d: Type.Array(Type.Object({ x: Type.Number(), y: Type.Union([Type.Number(), Type.Undefined()]) })),
  })
  const laid = layout(schema, { d: [{ x: 1, extra: true }], c: undefined, a: 2, stray: 1 }) as Record<string, unknown>
  t.same(Object.keys(laid), ['a', 'b', 'd'])
  t.ok(Object.hasOwn(laid, 'b') && laid['b'] === undefined, 'a required key is present even when undefined')
  t.same(Object.keys((laid['d'] as Record<string, unknown>[])[0] as object), ['x', 'y'])
})

t.test('layout(): a union lays out by the member its discriminator names', async (t) => {
  const A = Type.Object({ kind: Type.Literal('a'), n: Type.Union([Type.Number(), Type.Undefined()]) }, closed)
  const B = Type.Object({ kind: Type.Literal('b'), s: Type.String() }, closed)
  const union = Type.Union([A, B, Type.Undefined()])
  t.same(layout(union, { s: 'x', kind: 'b' }), { kind: 'b', s: 'x' })
  const a = layout(union, { kind: 'a' }) as Record<string, unknown>
  t.same(Object.keys(a), ['kind', 'n'])
  t.equal(layout(union, undefined), undefined)
  t.same(layout(union, { kind: 'c' }), { kind: 'c' }, 'no member: the value as it was (decoding reports it)')
})

t.test('the configuration schema\'s defaults agree with the defaulted type', async (t) => {
  t.ok(Value.Check(DefaultedConfigSchema, defaultDocument({})), 'embedded defaults')
  const full = defaultDocument({
    server: { baseUrl: 'https://proxy.example/' },
    credentials: [{ name: 'ca', provider: 'managedRepo', domain: 'acme', region: 'eu-west-1' }],
    mounts: {
      js: { upstreams: { private: { url: 'https://private.example/' } }, publish: { target: 'https://private.example/', scopes: ['@acme'] } },
      py: { mirror: { target: 'https://private.example/py/' } },
    },
  })
  t.ok(Value.Check(DefaultedConfigSchema, full), [...Value.Errors(DefaultedConfigSchema, full)].map((e) => `${e.instancePath} ${e.message}`).join('; '))
  t.same(Object.keys(full.mounts), ['js', 'py'], 'no default mount is added to configured ones')
  t.equal(full.mounts.js?.publish?.maxBodyBytes, 64 * 1024 * 1024)
  t.same(full.mounts.py?.upstreams, { public: { allowHosts: [], allowInternalRanges: [] } })
})
