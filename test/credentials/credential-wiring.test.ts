/**
 * Credential providers wired into the proxy (SPEC.md 3.6, 5.5): one source
 * per name shared by the private upstream and the publication target (minted
 * once, at boot, emitting nothing), the minted token sent to both, and the
 * breaker on the request path (503 with Retry-After) against a stand-in
 * command that counts its mints.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../engine/config/load.js'
import { OFFLINE_JS_MOUNT, startTestProxy } from '../helpers/proxy.js'

/** The publish relay needs an edge token (it writes with its own target credential). */
const EDGE_TOKEN = 'edge-token-for-publish'
import { bytesOf, publishDocument } from '../publish/publish-documents.js'

interface Seen { url: string, authorization: string | undefined }

async function recorder(t: { teardown(fn: () => unknown): void }, status: number): Promise<{ url: string, seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      seen.push({ url: req.url ?? '', authorization: (req.headers as IncomingHttpHeaders).authorization })
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen }
}

/** A selfHosted command that counts its runs in a file; `failAfter` runs succeed, the rest fail. */
async function mintCommand(dir: string, expiresIn: number, failAfter = Infinity): Promise<{ command: string[], mints(): Promise<number> }> {
  const counter = join(dir, 'mints')
  await writeFile(counter, '0')
  const script = join(dir, 'mint.sh')
  await writeFile(script, [
    '#!/bin/sh',
    `n=$(( $(cat ${counter}) + 1 ))`,
    `echo $n > ${counter}`,
    `if [ $n -gt ${Number.isFinite(failAfter) ? failAfter : 1_000_000} ]; then echo "control plane down" >&2; exit 1; fi`,
    `echo "{\\"token\\":\\"minted-secret-$n\\",\\"expiresIn\\":${expiresIn}}"`,
    '',
  ].join('\n'))
  await chmod(script, 0o755)
  return { command: [script], mints: async () => Number((await readFile(counter, 'utf8')).trim()) }
}

t.test('one shared selfHosted credential: minted once at boot for both ecosystems, sent to each private upstream and the publication target', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'credential-wiring-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const mint = await mintCommand(dir, 3600)
  const [privateUpstream, target, privateIndex] = await Promise.all([recorder(t, 404), recorder(t, 201), recorder(t, 404)])
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: {
      credentials: [{ name: 'shared', provider: 'selfHosted', command: mint.command }],
      mounts: {
        js: {
          ...OFFLINE_JS_MOUNT.js,
          upstreams: { ...OFFLINE_JS_MOUNT.js.upstreams, private: { url: privateUpstream.url, credential: 'shared' } },
          publish: { target: target.url, credential: 'shared', scopes: ['@acme'] },
        },
        py: {
          upstreams: { public: { url: 'https://public-index.invalid/simple/' }, private: { url: `${privateIndex.url}simple/`, credential: 'shared' } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 86400 }],
        },
      },
    },
  })
  t.equal(await mint.mints(), 1, 'minted once for every user, across the js and py mounts')
  t.same(proxy.role.metrics()['service.credential'], { refresh: {}, ttlSeconds: {} }, 'the eager construction mint emits nothing')

  await proxy.get('/js/@acme%2flib/-/lib-1.0.0.tgz')
  t.ok(privateUpstream.seen.length >= 1)
  for (const seen of privateUpstream.seen) t.equal(seen.authorization, 'Bearer minted-secret-1')
  const res = await proxy.fetch('PUT', '/js/@acme%2flib', { body: bytesOf(publishDocument({ name: '@acme/lib' })), headers: { 'content-type': 'application/json' } })
  t.equal(res.status, 201)
  t.equal(target.seen[0]?.authorization, 'Bearer minted-secret-1')
  await proxy.get('/py/simple/demo/')
  t.ok(privateIndex.seen.length >= 1, 'the py mount asked its private index')
  for (const seen of privateIndex.seen) t.equal(seen.authorization, 'Bearer minted-secret-1', 'with the same minted token')
  t.equal(await mint.mints(), 1, 'cached while valid')
  t.notMatch(JSON.stringify(proxy.logger.records), /minted-secret/, 'no token in any log line')
})

t.test('the breaker on the request path: five failed mints, then 503 with Retry-After at once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'credential-breaker-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // One-second tokens: the boot mint succeeds, every later one fails.
  const mint = await mintCommand(dir, 1, 1)
  const target = await recorder(t, 201)
  const proxy = await startTestProxy(t, {
    edgeToken: EDGE_TOKEN,
    document: {
      credentials: [{ name: 'short', provider: 'selfHosted', command: mint.command }],
      mounts: { js: { ...OFFLINE_JS_MOUNT.js, publish: { target: target.url, credential: 'short', scopes: ['@acme'] } } },
    },
  })
  // Let the one-second boot token expire (a wait on the stand-in's own lifetime, not a timing assertion).
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const put = () => proxy.fetch('PUT', '/js/@acme%2flib', { body: bytesOf(publishDocument({ name: '@acme/lib' })), headers: { 'content-type': 'application/json' } })
  for (let i = 1; i <= 5; i++) {
    const res = await put()
    t.equal(res.status, 503, `failed mint ${i}`)
    t.ok(res.headers['retry-after'])
  }
  t.equal(await mint.mints(), 6, 'the boot mint and five failures')
  const refused = await put()
  t.equal(refused.status, 503)
  t.match(refused.json(), { error: /breaker is open/ })
  t.ok(Number(refused.headers['retry-after']) > 0 && Number(refused.headers['retry-after']) <= 60, 'Retry-After within the cooldown')
  t.equal(await mint.mints(), 6, 'no mint while open')
  t.same((proxy.role.metrics()['service.credential'] as { refresh: unknown }).refresh, { 'selfHosted.failure': 5 })
  t.equal(target.seen.length, 0, 'nothing reached the target')
})

t.test('credential references are checked at load', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'credential-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  await writeFile(file, `
credentials:
  - { name: a, provider: registry }
  - { name: b, provider: selfHosted, file: /x, command: [/bin/true] }
  - { name: c, provider: registry, token: registry-secret }
  - { name: c, provider: registry, token: registry-secret }
mounts:
  js:
    upstreams: { public: { url: "https://public.example/" }, private: { url: "https://private.example/", token: t, credential: c } }
    publish: { target: "https://private.example/", scopes: ["@acme"], credential: missing }
`)
  const loaded = loadConfig({ configPath: file, env: {}, npmRegistry: () => undefined })
  t.notOk(loaded.ok)
  const problems = loaded.ok ? [] : loaded.problems
  const at = (path: string) => problems.filter((p) => p.path === path).map((p) => p.message)
  t.match(at('credentials.0'), [/registry credential takes a token/])
  t.match(at('credentials.1'), [/exactly one of file or command/])
  t.match(at('credentials.3'), [/defined twice/])
  t.match(at('mounts.js.upstreams.private.credential'), [/token or credential, not both/])
  t.match(at('mounts.js.publish.credential'), [/names no entry of credentials/])
  t.notMatch(JSON.stringify(problems), /registry-secret/)
})
