import t from 'tap'
import Value from 'typebox/value'
import { ResolvedConfigSchema } from '../../engine/config/config.js'
import { publicUpstreamUrls } from '../../engine/config/npm-client-registry.js'
import { defaultDocument, resolveConfig, resolvedBaseUrl } from '../../engine/config/resolve-config.js'
import { BearerToken } from '../../engine/secret.js'

const NPM = 'https://npm-client.example/'

function resolve(document: Record<string, unknown>, documentPath?: string) {
  const defaulted = defaultDocument(document)
  return resolveConfig(defaulted, publicUpstreamUrls(defaulted, () => NPM), documentPath)
}

/** The resolved value in its document form (secrets revealed), to hold against the resolved schema. */
function encoded(value: unknown): unknown {
  if (value instanceof BearerToken) return value.reveal()
  if (Array.isArray(value)) return value.map(encoded)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encoded(v)]))
  return value
}

t.test('{base_url}: the configured address without trailing slashes, else the loopback one of the port', async (t) => {
  t.equal(resolvedBaseUrl({ ...defaultDocument({}).server, port: 5000 }), 'http://localhost:5000')
  t.equal(resolvedBaseUrl({ ...defaultDocument({}).server, baseUrl: 'https://proxy.example/npm///' }), 'https://proxy.example/npm')
  t.equal(resolve({ server: { port: 6000 } }).server.baseUrl, 'http://localhost:6000')
})

t.test('the defaults that depend on the mount or on another key', async (t) => {
  const config = resolve({
    respectUpstreamTarballHost: true,
    mounts: {
      js: {},
      py: { upstreams: { public: { url: 'https://pypi.example/simple/', respectTarballHost: false } } },
    },
  })
  const js = config.mounts.js
  const py = config.mounts.py
  t.equal(js?.key, 'js')
  t.equal(py?.key, 'py')
  t.same(js?.upstreams.public, { url: NPM, urlOrigin: 'npm-client', caFile: undefined, allowHosts: [], allowInternalRanges: [], respectTarballHost: true }, 'js: the npm client\'s registry, the global tarball-host policy')
  t.equal(py?.upstreams.public?.urlOrigin, 'configured')
  t.equal(py?.upstreams.public?.respectTarballHost, false, 'the mount\'s own policy wins')
  t.equal(js?.integrityFloor, 'sha512')
  t.equal(py?.integrityFloor, 'sha256')
  t.equal(py?.privateHidesPublic, true)
  t.equal(js?.rules.length, 3, 'the shipped rules')
})

t.test('a mount without a public URL has no public upstream; the npm client is asked for js only', async (t) => {
  let asked = 0
  const defaulted = defaultDocument({ mounts: { py: { upstreams: { private: { url: 'https://private.example/py/' } } } } })
  const urls = publicUpstreamUrls(defaulted, () => { asked++; return NPM })
  t.equal(asked, 0)
  const config = resolveConfig(defaulted, urls, undefined)
  t.equal(config.mounts.py?.upstreams.public, undefined)
  t.ok(Object.hasOwn(config.mounts.py?.upstreams ?? {}, 'public'), 'present, and undefined')
  t.same(Object.keys(config.mounts), ['py'], 'only configured mounts are keys')
})

t.test('credentials get exactly their provider\'s fields, with its defaults', async (t) => {
  const config = resolve({
    credentials: [
      { name: 'reg', provider: 'registry', token: 'static-token' },
      { name: 'file', provider: 'selfHosted', file: '/run/token' },
      { name: 'ca', provider: 'managedRepo', domain: 'acme', region: 'eu-west-1' },
    ],
  })
  const [reg, file, ca] = config.credentials
  t.ok(reg?.provider === 'registry' && reg.token instanceof BearerToken && reg.token.reveal() === 'static-token')
  t.same(Object.keys(file ?? {}), ['name', 'provider', 'file'])
  t.same(ca, { name: 'ca', provider: 'managedRepo', domain: 'acme', domainOwner: undefined, region: 'eu-west-1', endpoint: undefined, durationSeconds: 3600 })
})

t.test('secrets are BearerToken values; every unset key is present; the value is frozen and fits the resolved schema', async (t) => {
  const config = resolve({
    server: { edgeTokens: ['edge'] },
    mounts: { js: { upstreams: { private: { url: 'https://private.example/', token: 'private-token' } }, publish: { target: 'https://private.example/', scopes: ['@acme'], token: 'publish-token' } } },
  }, '/etc/service.yaml')
  t.ok(config.server.edgeTokens[0] instanceof BearerToken)
  t.equal(config.mounts.js?.upstreams.private?.token?.reveal(), 'private-token')
  t.equal(config.mounts.js?.publish?.token?.reveal(), 'publish-token')
  t.notMatch(JSON.stringify(config), /private-token|publish-token|"edge"/)
  t.same(Object.keys(config.runtime), ['cores', 'maxHeapBytes', 'coresCeiling', 'serveMaxInFlight', 'cgroupPath'])
  t.ok(Object.hasOwn(config.server, 'compatPort'))
  t.equal(config.source.document, '/etc/service.yaml')
  t.ok(Object.isFrozen(config.mounts.js?.upstreams.private?.token), 'frozen all the way down')
  t.ok(Value.Check(ResolvedConfigSchema, encoded(config)))
})
