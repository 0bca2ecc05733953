import t from 'tap'
import { EdgeAuth, edgeAuthFor } from '../../server/http/edge-auth.js'
import { BearerToken } from '../../engine/secret.js'
import { loadConfig } from '../../engine/config/load.js'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

t.test('any configured token admits; anything else does not', async (t) => {
  const edge = new EdgeAuth([new BearerToken('old-token'), new BearerToken('new-token')])
  t.ok(edge.admits('Bearer old-token'))
  t.ok(edge.admits('bearer new-token'), 'the scheme is case-insensitive (RFC 9110 11.1)')
  t.notOk(edge.admits(undefined))
  t.notOk(edge.admits(''))
  t.notOk(edge.admits('Bearer'))
  t.notOk(edge.admits('Bearer new-toke'))
  t.notOk(edge.admits('Bearer new-token2'))
  t.notOk(edge.admits('Basic bmV3LXRva2Vu'))
  t.notOk(edge.admits('Bearer old-token new-token'))
  t.equal(edgeAuthFor([]), undefined, 'no tokens: no edge check')
})

t.test('server.edgeTokens load as secrets: never echoed, from the document or the environment', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'edge-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  await writeFile(file, 'server: { edgeTokens: ["edge-secret-one", "edge-secret-two"] }\nmounts: { js: { upstreams: { public: { url: "https://public.example/" } } } }\n')
  const loaded = loadConfig({ configPath: file, env: {}, npmRegistry: () => undefined })
  t.ok(loaded.ok)
  if (!loaded.ok) return
  t.equal(loaded.config.server.edgeTokens.length, 2)
  t.equal(loaded.config.server.edgeTokens[1]?.reveal(), 'edge-secret-two')
  t.notMatch(JSON.stringify(loaded.config), /edge-secret/, 'redacted in the configuration echo')
  const fromEnv = loadConfig({ configPath: file, env: { SERVICE_SERVER__EDGE_TOKENS: '["edge-secret-three"]' }, npmRegistry: () => undefined })
  t.ok(fromEnv.ok)
  if (fromEnv.ok) t.same(fromEnv.config.server.edgeTokens.map((token) => token.reveal()), ['edge-secret-three'], 'the environment overrides the document')
  const empty = loadConfig({ configPath: file, env: { SERVICE_SERVER__EDGE_TOKENS: '[""]' }, npmRegistry: () => undefined })
  t.notOk(empty.ok, 'an empty token is refused')
})
