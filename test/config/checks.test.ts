import t from 'tap'
import { crossKeyProblems, documentProblems } from '../../engine/config/checks.js'
import { publicUpstreamUrls } from '../../engine/config/npm-client-registry.js'
import { defaultDocument } from '../../engine/config/resolve-config.js'
import { CONFIG_REFUSAL } from '../../engine/errors.js'

const sourceOf = (path: string): string => `test ${path}`

function crossKey(document: Record<string, unknown>, npm?: string) {
  const defaulted = defaultDocument(document)
  return crossKeyProblems(defaulted, publicUpstreamUrls(defaulted, () => npm), sourceOf)
}

t.test('each credential is held to its provider\'s shape; a reference needs an entry that fits', async (t) => {
  const credentials = [
    { name: 'ok-registry', provider: 'registry', token: 't' },
    { name: 'no-token', provider: 'registry' },
    { name: 'ok-file', provider: 'selfHosted', file: '/run/token' },
    { name: 'ok-command', provider: 'selfHosted', command: ['print-token'] },
    { name: 'both', provider: 'selfHosted', file: '/run/token', command: ['print-token'] },
    { name: 'neither', provider: 'selfHosted' },
    { name: 'token-too', provider: 'selfHosted', token: 't', file: '/run/token' },
    { name: 'managed-field', provider: 'registry', token: 't', region: 'eu-west-1' },
    { name: 'ok-managed', provider: 'managedRepo', domain: 'acme', region: 'eu-west-1', durationSeconds: 900 },
    { name: 'no-region', provider: 'managedRepo', domain: 'acme' },
    { name: 'managed-token', provider: 'managedRepo', domain: 'acme', region: 'eu-west-1', token: 't' },
    { name: 'ok-registry', provider: 'selfHosted', file: '/run/other' },
  ]
  const found = crossKey({
    credentials,
    mounts: {
      js: {
        upstreams: { private: { url: 'https://private.example/', credential: 'no-token' }, public: { url: 'https://public.example/' } },
        mirror: { target: 'https://private.example/', credential: 'ok-managed' },
      },
    },
  })
  t.same(found, [
    { path: 'credentials.1', message: CONFIG_REFUSAL.credentialRegistryShape, source: 'test credentials' },
    { path: 'credentials.4', message: CONFIG_REFUSAL.credentialSelfHostedShape, source: 'test credentials' },
    { path: 'credentials.5', message: CONFIG_REFUSAL.credentialSelfHostedShape, source: 'test credentials' },
    { path: 'credentials.6', message: CONFIG_REFUSAL.credentialSelfHostedShape, source: 'test credentials' },
    { path: 'credentials.7', message: CONFIG_REFUSAL.credentialManagedFieldsElsewhere, source: 'test credentials' },
    { path: 'credentials.9', message: CONFIG_REFUSAL.credentialManagedRepoShape, source: 'test credentials' },
    { path: 'credentials.10', message: CONFIG_REFUSAL.credentialManagedRepoShape, source: 'test credentials' },
    { path: 'credentials.11', message: CONFIG_REFUSAL.credentialDuplicate('ok-registry'), source: 'test credentials' },
    { path: 'mounts.js.upstreams.private.credential', message: CONFIG_REFUSAL.credentialUnknown('no-token'), source: 'test mounts.js.upstreams.private.credential' },
  ])
})

t.test('the npm client\'s registry is held to the public upstream\'s rules, and named as the source', async (t) => {
  t.same(crossKey({}, undefined), [{ path: 'mounts.js.upstreams.public.url', message: CONFIG_REFUSAL.npmRegistryUnset, source: 'test mounts.js.upstreams.public.url' }])
  const source = 'the local npm client\'s registry setting'
  t.same(crossKey({}, 'http://localhost:4873/'), [
    { path: 'mounts.js.upstreams.public.url', message: CONFIG_REFUSAL.urlNotHttps, source },
    { path: 'mounts.js.upstreams.public.url', message: CONFIG_REFUSAL.upstreamIsThisProxy('http://localhost:4873/'), source },
  ])
  t.same(crossKey({}, 'https://registry.example/'), [])
})

t.test('the document pass joins schema, URL and build problems in one report', async (t) => {
  const found = documentProblems({
    server: { port: 'x' },
    queue: { url: 'https://user:pw@sqs.example/' },
    mounts: { js: { upstreams: { public: { allowInternalRanges: ['nope'] } } } },
  }, sourceOf)
  t.same(found.map((p) => p.path), ['server.port', 'queue.url', 'mounts.js.upstreams.public.allowInternalRanges.0'])
})

t.test('the shared cache backend takes a redis:// or rediss:// URL without userinfo, and needs one', async (t) => {
  const problems = (url: string) => documentProblems({ cache: { backend: 'redis', url } }, sourceOf).map((p) => p.message)
  t.same(problems('redis://cache.internal:6379/2'), [])
  t.same(problems('rediss://cache.internal:6380'), [])
  t.same(problems('redis://default:hunter2@cache.internal:6379'), [CONFIG_REFUSAL.urlUserinfo])
  t.same(problems('redis://cache.internal:6379?password=hunter2'), [CONFIG_REFUSAL.urlCredentialQuery('password')])
  t.same(problems('https://cache.internal/'), [CONFIG_REFUSAL.notRedisUrl('https://cache.internal/')])
  t.notOk(JSON.stringify(problems('redis://default:hunter2@cache.internal:6379')).includes('hunter2'), 'no refusal echoes the password')
  const missing = crossKey({ cache: { backend: 'redis' } }, 'https://registry.example/')
  t.same(missing, [{ path: 'cache.url', message: CONFIG_REFUSAL.requiredForRedis, source: 'test cache' }])
  t.same(crossKey({}, 'https://registry.example/'), [], 'the local backend needs no URL')
})
