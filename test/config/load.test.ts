import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig, type LoadResult } from '../../engine/config/load.js'
import type { Config } from '../../engine/config/config.js'
import { BearerToken } from '../../engine/secret.js'

const PUBLIC = 'https://public.example/'

async function withDocument(t: Test, text: string, name = 'config.yaml'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'config-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, name)
  await writeFile(file, text)
  return file
}

function ok(t: Test, result: LoadResult): Config {
  if (!result.ok) {
    t.fail(`refused: ${JSON.stringify(result.problems)}`)
    throw new Error('refused')
  }
  return result.config
}

function problems(result: LoadResult): { path: string; message: string; source: string }[] {
  return result.ok ? [] : [...result.problems]
}

const load = (configPath: string | undefined, env: Record<string, string> = {}): LoadResult =>
  loadConfig({ configPath, env, npmRegistry: () => PUBLIC })

t.test('embedded defaults: the js mount alone, public upstream from the npm client', async (t) => {
  const config = ok(t, load(undefined))
  t.equal(config.server.port, 4873)
  t.equal(config.server.baseUrl, 'http://localhost:4873')
  t.equal(config.server.shutdownDrainTimeout, 30)
  t.equal(config.observability.logFormat, 'json')
  t.equal(config.observability.logLevel, 'info')
  t.equal(config.runtime.coresCeiling, 8)
  t.same(Object.keys(config.mounts), ['js'])
  t.equal(config.mounts.js?.upstreams.public?.url, PUBLIC)
  t.equal(config.mounts.js?.upstreams.public?.urlOrigin, 'npm-client')
  t.ok(Object.isFrozen(config.server), 'frozen')
})

t.test('environment wins over the document; levels joined by __, camelCase', async (t) => {
  const file = await withDocument(t, `
server: { port: 5000, shutdownDrainTimeout: 10 }
runtime: { cores: 2 }
mounts:
  js:
    upstreams:
      public: { url: ${PUBLIC} }
`)
  const config = ok(t, load(file, {
    SERVICE_SERVER__PORT: '6000',
    SERVICE_RUNTIME__CORES_CEILING: '4',
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__URL: 'https://private.example/npm/',
    SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__TOKEN: 'sekrit',
    SERVICE_RESPECT_UPSTREAM_TARBALL_HOST: 'true',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"DenyIdentity","package":"left-pad","versions":"1.3.0"}]',
  }))
  t.equal(config.server.port, 6000, 'environment wins')
  t.equal(config.server.shutdownDrainTimeout, 10, 'document kept where the environment is silent')
  t.equal(config.runtime.coresCeiling, 4)
  t.equal(config.runtime.cores, 2)
  t.equal(config.respectUpstreamTarballHost, true)
  t.equal(config.mounts.js?.upstreams.private?.url, 'https://private.example/npm/')
  t.ok(config.mounts.js?.upstreams.private?.token instanceof BearerToken)
  t.equal(config.mounts.js?.upstreams.private?.token?.reveal(), 'sekrit')
  t.notMatch(JSON.stringify(config), /sekrit/, 'the secret never renders')
  t.same(config.mounts.js?.rules, [{ rule: 'DenyIdentity', package: 'left-pad', versions: '1.3.0' }])
})

t.test('removing a document pin does not restore the automatic value while an environment pin remains', async (t) => {
  const env = { SERVICE_RUNTIME__CORES: '3' }
  const pinned = await withDocument(t, 'runtime: { cores: 6 }\n')
  t.equal(ok(t, load(pinned, env)).runtime.cores, 3)
  const unpinned = await withDocument(t, 'runtime: {}\n')
  t.equal(ok(t, load(unpinned, env)).runtime.cores, 3, 'still the environment pin, not automatic')
  t.equal(ok(t, load(unpinned, {})).runtime.cores, undefined, 'automatic without any pin')
})

t.test('SERVICE_CONFIG names the document; --config wins over it', async (t) => {
  const a = await withDocument(t, 'server: { port: 1111 }\n')
  const b = await withDocument(t, 'server: { port: 2222 }\n')
  t.equal(ok(t, loadConfig({ env: { SERVICE_CONFIG: a }, npmRegistry: () => PUBLIC })).server.port, 1111)
  t.equal(ok(t, loadConfig({ configPath: b, env: { SERVICE_CONFIG: a }, npmRegistry: () => PUBLIC })).server.port, 2222)
})

t.test('JSON documents are read too', async (t) => {
  const file = await withDocument(t, JSON.stringify({ server: { port: 7777 } }), 'config.json')
  t.equal(ok(t, load(file)).server.port, 7777)
})

t.test('every problem is reported at once', async (t) => {
  const file = await withDocument(t, `
server: { port: "eighty", prot: 1 }
observability: { logFormat: xml }
queue: { kind: sqs }
mounts:
  js:
    upstreams:
      private: { url: "https://user:pw@private.example/" }
      public: { url: "https://public.example/?token=abc" }
    rules:
      - { rule: DenyIfCve, apliesTo: [admission] }
      - { rule: DenyIfLuck }
      - { rule: AllowIfOlderThan, seconds: "a week" }
`)
  const result = load(file, { SERVICE_RUNTIME__CORES: 'many', SERVICE_NO_SUCH_KEY: '1' })
  t.equal(result.ok, false)
  const found = problems(result)
  const paths = found.map((p) => p.path)
  t.ok(paths.includes('runtime.cores'), 'wrong type from the environment')
  t.ok(paths.includes('noSuchKey'), 'unknown environment key')
  t.ok(paths.includes('server.prot'), 'unknown key')
  t.ok(paths.includes('server.port'), 'wrong type')
  t.ok(paths.includes('observability.logFormat'), 'bad enum')
  t.ok(paths.includes('mounts.js.rules.0.apliesTo'), 'misspelt appliesTo is an unknown rule key')
  t.ok(paths.includes('mounts.js.rules.1.rule'), 'unknown rule kind')
  t.ok(paths.includes('mounts.js.rules.2.seconds'), 'wrong type inside a rule')
  t.match(found.find((p) => p.path === 'mounts.js.rules.0.apliesTo'), { message: /unknown rule key/ })
  t.match(found.find((p) => p.path === 'mounts.js.rules.1.rule'), { message: /unknown rule kind "DenyIfLuck"/ })
  t.match(found.find((p) => p.path === 'runtime.cores'), { source: 'environment SERVICE_RUNTIME__CORES' })
  t.match(found.find((p) => p.path === 'server.prot'), { source: `document ${file}` })
})

t.test('URLs with userinfo or a credential in the query are refused; public egress is https', async (t) => {
  const file = await withDocument(t, `
advisories: { osvExportBaseUrl: "https://osv.example/?api_key=1" }
mounts:
  js:
    upstreams:
      private: { url: "https://user:pw@private.example/" }
      public: { url: "http://public.example/" }
`)
  const found = problems(load(file))
  t.match(found.find((p) => p.path === 'mounts.js.upstreams.private.url'), { message: /userinfo/ })
  t.match(found.find((p) => p.path === 'mounts.js.upstreams.public.url'), { message: /https/ })
  t.match(found.find((p) => p.path === 'advisories.osvExportBaseUrl'), { message: /credential in the query/ })
  t.notMatch(JSON.stringify(found), /pw@/, 'the report does not echo the credential')
})

t.test('an unparsable URL is refused without echoing a credential it carries', async (t) => {
  const file = await withDocument(t, `
advisories: { epssFeedUrl: "ht tp://feed.example/?token=s3cret-query" }
mounts:
  js:
    upstreams:
      private: { url: "https://user:s3cret-pass@private example/" }
      public: { url: "https://user:s3cret-other@[broken/" }
`)
  const found = problems(load(file))
  t.match(found.find((p) => p.path === 'mounts.js.upstreams.private.url'), { message: /not a valid absolute URL/ })
  t.match(found.find((p) => p.path === 'mounts.js.upstreams.public.url'), { message: /not a valid absolute URL/ })
  t.match(found.find((p) => p.path === 'advisories.epssFeedUrl'), { message: /not a valid absolute URL/ })
  t.notMatch(JSON.stringify(found), /s3cret/, 'no credential in the report')
})

t.test('an unparsable URL is never echoed with its credential, whatever characters the password holds', async (t) => {
  // No parser can tell where such a userinfo ends: a password holding "/", "?", "#" or "@" must not leak either.
  const file = await withDocument(t, `
advisories: { epssFeedUrl: "https://user:s3cret@mid@feed example/", osvExportBaseUrl: "user:s3cret@osv.example/" }
mounts:
  js:
    upstreams:
      private: { url: "https://user:pa/s3cret@private.example/" }
      public: { url: "https://user:p#s3cret@public.example/" }
    mirror: { target: "https://user:p?s3cret@mirror.example/" }
`)
  const found = problems(load(file))
  for (const path of ['mounts.js.upstreams.private.url', 'mounts.js.upstreams.public.url', 'mounts.js.mirror.target', 'advisories.epssFeedUrl', 'advisories.osvExportBaseUrl']) {
    t.match(found.find((p) => p.path === path), { message: /not a valid absolute URL|must be an http or https URL/ }, path)
  }
  t.notMatch(JSON.stringify(found), /s3cret/, 'no credential in the report')
  t.match(found.find((p) => p.path === 'mounts.js.upstreams.private.url'), { message: /"https:\/\/<redacted>@private\.example\/"/ }, 'what is safe is still shown')
})

t.test('the npm client\'s registry is never echoed with its credential, even when it is this proxy', async (t) => {
  const result = loadConfig({ env: {}, npmRegistry: () => 'https://npmuser:s3cret@localhost:4873/?token=s3cret' })
  const found = problems(result)
  t.match(found, [{ path: 'mounts.js.upstreams.public.url', message: /userinfo/ }, { path: 'mounts.js.upstreams.public.url', message: /this proxy itself/ }])
  t.notMatch(JSON.stringify(found), /s3cret|npmuser/)
})

t.test('a document that does not parse is located by line and column; its text is never echoed', async (t) => {
  const yaml = await withDocument(t, 'server:\n  baseUrl: https://user:s3cret@host/\n   port: 4\n')
  const unclosed = await withDocument(t, 'mounts:\n  js:\n    upstreams:\n      private: { url: "https://user:s3cret@host/"\n')
  const duplicate = await withDocument(t, 'server: { baseUrl: "https://user:s3cret@host/" }\nserver: {}\n')
  const json = await withDocument(t, '{"server": {"baseUrl": https://user:s3cret@host/}}', 'config.json')
  const jsonAt = await withDocument(t, '{"server":\n {"baseUrl": "https://user:s3cret@host/" x}}', 'config.json')
  for (const [file, where] of [[yaml, /line 2, column \d+/], [unclosed, /line \d+, column \d+/], [duplicate, /line 2, column 1/], [json, /not valid JSON/], [jsonAt, /line 2, column \d+/]] as const) {
    const found = problems(load(file))
    t.match(found, [{ path: '', message: /^cannot parse the configuration document: / }], file)
    t.match(found[0]?.message, where, file)
    t.notMatch(JSON.stringify(found), /s3cret/, `${file}: no document text echoed`)
  }
})

t.test('an upstream that is this proxy itself is refused, naming the setting', async (t) => {
  const file = await withDocument(t, 'server: { port: 4873 }\n')
  const viaNpm = loadConfig({ configPath: file, env: {}, npmRegistry: () => 'https://localhost:4873/js/' })
  t.match(problems(viaNpm), [{ path: 'mounts.js.upstreams.public.url', message: /this proxy itself/, source: /npm client/ }])
  const explicit = await withDocument(t, `
server: { port: 4873, baseUrl: "https://proxy.example" }
mounts: { js: { upstreams: { private: { url: "https://proxy.example/js/" }, public: { url: "${PUBLIC}" } } } }
`)
  t.match(problems(load(explicit)), [{ path: 'mounts.js.upstreams.private.url', message: /this proxy itself/ }])
})

t.test('what a role refused only when it started is a configuration problem, reported with the others', async (t) => {
  const file = await withDocument(t, `
store: { kind: s3, bucket: advisories, prefix: "../outside" }
mounts:
  js:
    upstreams:
      private: { url: "https://private.example/npm/?shard=2" }
      public: { url: "https://public.example/#top", allowInternalRanges: ["127.0.0.0/8", "::1/128", "10.0.0.0/33", "localhost", "1.2.3.4/08x"] }
    publish: { target: "https://publish.example/", scopes: ["@acme"] }
  py:
    upstreams: { public: { url: "https://public.example/" } }
`)
  const found = problems(load(file, { SERVICE_SERVER__PORT: 'eighty' }))
  const at = (path: string) => found.filter((p) => p.path === path).map((p) => p.message)
  t.match(at('mounts.js.upstreams.private.url'), [/query or fragment/])
  t.match(at('mounts.js.upstreams.public.url'), [/query or fragment/])
  t.same(found.filter((p) => p.path.includes('allowInternalRanges')).map((p) => p.path), [2, 3, 4].map((i) => `mounts.js.upstreams.public.allowInternalRanges.${i}`))
  t.match(at('store.prefix'), [/not a usable object key prefix/])
  t.match(at('server.port'), [/number/], 'in the same report as a type problem')
  t.same(at('mounts.py.publish'), [])
  const viaNpm = loadConfig({ env: {}, npmRegistry: () => 'https://registry.example/?tenant=a' })
  t.match(problems(viaNpm), [{ path: 'mounts.js.upstreams.public.url', message: /query or fragment/, source: /npm client/ }])
  t.ok(load(await withDocument(t, 'store: { kind: embedded, prefix: "../ignored" }\nmounts: { js: { upstreams: { public: { url: "https://public.example/?" } } } }\n')).ok,
    'an embedded store has no prefix; an empty query is none')
})

t.test('a publish target needs edge tokens: without them anyone who reaches the proxy could publish', async (t) => {
  const doc = (server: string) => `
${server}
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
    publish: { target: "https://publish.example/", scopes: ["@acme"], token: "target-token" }
`
  t.match(problems(load(await withDocument(t, doc('')))), [{ path: 'mounts.js.publish', message: /needs server.edgeTokens/ }])
  t.ok(load(await withDocument(t, doc('server: { edgeTokens: ["edge-1"] }'))).ok, 'with an edge token it boots')
  t.ok(load(await withDocument(t, doc('')), { SERVICE_SERVER__EDGE_TOKENS: '["edge-1"]' }).ok, 'set from the environment too')
})

t.test('the tarball-host policy per mount: respectTarballHost overrides the global respectUpstreamTarballHost', async (t) => {
  const config = ok(t, load(await withDocument(t, `
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" } }
  py:
    upstreams: { public: { url: "https://pypi.example/simple/", allowHosts: ["pypi.example", "files.example"], respectTarballHost: true } }
`)))
  t.equal(config.mounts.js?.upstreams.public?.respectTarballHost, false, 'js keeps the default: another host:port is refused')
  t.equal(config.mounts.py?.upstreams.public?.respectTarballHost, true, 'py admits its files host, within allowHosts')
  const global = ok(t, load(await withDocument(t, 'respectUpstreamTarballHost: true\nmounts: { js: { upstreams: { public: { url: "https://public.example/", respectTarballHost: false } } } }\n')))
  t.equal(global.mounts.js?.upstreams.public?.respectTarballHost, false, 'a mount can stay strict under a permissive global')
})

t.test('LOG_LEVEL sets the floor unless the SERVICE_ key is set', async (t) => {
  t.equal(ok(t, load(undefined, { LOG_LEVEL: 'DEBUG' })).observability.logLevel, 'debug')
  t.equal(ok(t, load(undefined, { LOG_LEVEL: 'debug', SERVICE_OBSERVABILITY__LOG_LEVEL: 'warn' })).observability.logLevel, 'warn')
  t.match(problems(load(undefined, { LOG_LEVEL: 'loud' })), [{ path: 'observability.logLevel' }])
})

t.test('no npm registry to default to is a problem', async (t) => {
  const result = loadConfig({ env: {}, npmRegistry: () => undefined })
  t.match(problems(result), [{ path: 'mounts.js.upstreams.public.url', message: /npm client/ }])
})

t.test('the py mount: sha256 integrity floor by default, privateHidesPublic, its mirror, and the keys this build cannot honour', async (t) => {
  const config = ok(t, load(await withDocument(t, `mounts:\n  js: {}\n  py:\n    upstreams:\n      public: { url: 'https://pypi.example/simple/' }\n`)))
  t.equal(config.mounts.py?.integrityFloor, 'sha256', 'what a PyPI page publishes')
  t.equal(config.mounts.js?.integrityFloor, 'sha512')
  t.equal(config.mounts.py?.privateHidesPublic, true)
  const mixed = ok(t, load(await withDocument(t, `mounts:\n  py:\n    privateHidesPublic: false\n    integrityFloor: sha512\n    upstreams:\n      public: { url: 'https://pypi.example/simple/' }\n`)))
  t.equal(mixed.mounts.py?.privateHidesPublic, false)
  t.equal(mixed.mounts.py?.integrityFloor, 'sha512')

  const refused = problems(load(await withDocument(t, [
    'mounts:',
    '  js: { privateHidesPublic: false }',
    '  py:',
    "    upstreams: { public: { url: 'https://pypi.example/simple/' } }",
    "    publish: { target: 'https://private.example/', scopes: ['x'] }",
    "    mirror: { target: 'https://private.example/' }",
    '',
  ].join('\n'))))
  t.same(refused.map((p) => p.path).sort(), ['mounts.js.privateHidesPublic', 'mounts.py.publish'], 'mounts.py.mirror is accepted: py files are mirrored')
  t.match(refused.find((p) => p.path === 'mounts.py.publish')?.message, /relays no py publishes/)

  const mirrored = ok(t, load(await withDocument(t, "mounts:\n  py:\n    upstreams: { public: { url: 'https://pypi.example/simple/' } }\n    mirror: { target: 'https://private.example/upload/', token: 's3cret', simpleUrl: 'https://private.example/+simple/' }\n")))
  t.equal(mirrored.mounts.py?.mirror?.target, 'https://private.example/upload/')
  t.equal(mirrored.mounts.py?.mirror?.simpleUrl, 'https://private.example/+simple/')
  t.equal(mirrored.mounts.py?.mirror?.token?.reveal(), 's3cret')
  const jsSimple = problems(load(await withDocument(t, "mounts:\n  js:\n    mirror: { target: 'https://private.example/', simpleUrl: 'https://private.example/simple/' }\n")))
  t.same(jsSimple.map((p) => p.path), ['mounts.js.mirror.simpleUrl'], 'simpleUrl is a py key')
})

t.test('server.allowedHosts and server.trustedProxies are checked at load (issue 32 item 5)', async (t) => {
  const file = await withDocument(t, `
server:
  allowedHosts: ["proxy.test", "mapped.example:8080", "[::1]:4873", "evil.example/path", "user@host", "127.1"]
  trustedProxies: ["10.0.0.0/8", "::1", "proxy.internal"]
`)
  const found = problems(load(file))
  t.same(found.filter((p) => p.path.startsWith('server.allowedHosts')).map((p) => p.path), [3, 4, 5].map((i) => `server.allowedHosts.${i}`))
  t.match(found.filter((p) => p.path.startsWith('server.allowedHosts')).map((p) => p.message), [/not a host name/, /not a host name/, /not a host name/])
  t.same(found.filter((p) => p.path.startsWith('server.trustedProxies')).map((p) => p.path), ['server.trustedProxies.2'])
  const config = ok(t, load(await withDocument(t, 'server: { allowedHosts: ["proxy.test"], trustedProxies: ["10.0.0.0/8"] }\n')))
  t.same(config.server.allowedHosts, ['proxy.test'])
  t.equal(config.server.baseUrlConfigured, false, 'unset: artifact URLs follow the request')
  t.equal(ok(t, load(await withDocument(t, 'server: { baseUrl: "https://registry.example/" }\n'))).server.baseUrlConfigured, true)
})
