/**
 * The `managedRepo` provider (SPEC.md 5.5; issue 13) against a stand-in for
 * CodeArtifact's control plane on 127.0.0.1 that speaks its REST protocol
 * (`POST /v1/authorization-token?domain=&domain-owner=&duration=`) and counts
 * mints: the token and the expiry it reports, one call per mint (no hidden
 * SDK retries), failures feeding the breaker, no token in any error; the
 * loader's shape rules; check-config names the client it does not build.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import t from 'tap'
import { loadConfig } from '../../engine/config/load.js'
import { isServiceError } from '../../engine/errors.js'
import { CredentialCounters } from '../../engine/upstream/credentials/credential-counters.js'
import { CredentialSource } from '../../engine/upstream/credentials/credential-source.js'
import { managedRepoMint } from '../../engine/upstream/credentials/managed-repo.js'
import { runCheckConfig } from '../../server/roles/check-config.js'
import { ManualClock } from '../doubles/manual-clock.js'

// The SDK's default chain reads these; the stand-in does not check signatures.
process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE'
process.env['AWS_SECRET_ACCESS_KEY'] = 'stand-in-secret'

interface Call { readonly path: string, readonly query: URLSearchParams, readonly authorization: string | undefined }
const calls: Call[] = []
let answer: (n: number) => { status: number, body: unknown } = (n) => ({ status: 200, body: { authorizationToken: `minted-token-${n}`, expiration: 1_900_000_000 } })

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? '/', 'http://stand-in')
  calls.push({ path: url.pathname, query: url.searchParams, authorization: req.headers.authorization })
  req.resume()
  req.on('end', () => {
    const { status, body } = answer(calls.length)
    res.writeHead(status, { 'content-type': 'application/json', ...(status >= 400 ? { 'x-amzn-errortype': 'InternalServerException' } : {}) })
    res.end(JSON.stringify(body))
  })
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise((resolve) => server.close(resolve)))
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const options = { domain: 'acme', domainOwner: '123456789012', region: 'eu-west-1', endpoint, durationSeconds: 1800 }

t.test('a mint asks for the domain, owner and duration, and returns the token with its expiry', async (t) => {
  calls.length = 0
  const minted = await managedRepoMint(options)(new AbortController().signal)
  t.equal(minted.token.reveal(), 'minted-token-1')
  t.equal(minted.expiresAt, 1_900_000_000_000, 'the expiry CodeArtifact reports')
  t.equal(calls.length, 1)
  t.equal(calls[0]?.path, '/v1/authorization-token')
  t.equal(calls[0]?.query.get('domain'), 'acme')
  t.equal(calls[0]?.query.get('domain-owner'), '123456789012')
  t.equal(calls[0]?.query.get('duration'), '1800')
  t.match(calls[0]?.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\//, 'signed with the default chain')
})

t.test('a failing control plane: one call per mint, the breaker opens after five, no token in the error', async (t) => {
  calls.length = 0
  answer = () => ({ status: 500, body: { message: 'boom minted-token-secret' } })
  const clock = new ManualClock()
  const source = new CredentialSource({ label: 'managedRepo', mint: managedRepoMint(options), clock, counters: new CredentialCounters(clock) })
  for (let i = 0; i < 5; i++) {
    const error = await source.token().then(() => undefined, (e: unknown) => e)
    t.ok(error, `mint ${i + 1} fails`)
    t.notMatch(inspect(error, { depth: 5 }), /minted-token-secret/, 'the answer is not quoted')
  }
  t.equal(calls.length, 5, 'no SDK retries behind the breaker')
  const open = await source.token().then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(open, 'CREDENTIAL_BREAKER_OPEN'), 'open: refused at once')
  t.equal(calls.length, 5, 'no call while open')
  answer = (n) => ({ status: 200, body: { authorizationToken: `minted-token-${n}`, expiration: 1_900_000_000 } })
})

t.test('the loader: domain and region required; managed fields only on managedRepo', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'managed-repo-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const load = async (credentials: unknown[]) => {
    const file = join(dir, `c${Math.random()}.json`)
    await writeFile(file, JSON.stringify({ credentials, mounts: { js: { upstreams: { private: { url: 'https://private.example.internal/', credential: 'ca' }, public: { url: 'https://public.example.internal/' } } } } }))
    return loadConfig({ configPath: file, env: {} })
  }
  const ok = await load([{ name: 'ca', provider: 'managedRepo', domain: 'acme', region: 'eu-west-1' }])
  t.ok(ok.ok)
  if (ok.ok) t.match(ok.config.credentials[0], { provider: 'managedRepo', domain: 'acme', durationSeconds: 3600, domainOwner: undefined })
  const noRegion = await load([{ name: 'ca', provider: 'managedRepo', domain: 'acme' }])
  t.match(noRegion.ok ? [] : noRegion.problems, [{ path: 'credentials.0', message: /needs domain and region/ }])
  const misplaced = await load([{ name: 'ca', provider: 'registry', token: 'x', domain: 'acme' }])
  t.match(misplaced.ok ? [] : misplaced.problems, [{ path: 'credentials.0', message: /belong to a managedRepo credential only/ }])
  const tooShort = await load([{ name: 'ca', provider: 'managedRepo', domain: 'acme', region: 'r', durationSeconds: 60 }])
  t.notOk(tooShort.ok, 'a lifetime under 15 minutes is refused')

  calls.length = 0
  const out: string[] = []
  const sink = { write: (s: string) => { out.push(s); return true } } as unknown as NodeJS.WritableStream
  t.equal(await runCheckConfig(ok, { json: false, out: sink, err: sink } as Parameters<typeof runCheckConfig>[1]), 0)
  t.match(out.join(''), /note: the managed-registry \(CodeArtifact\) client of credential "ca" is not built by check-config; boot builds it/)
  t.equal(calls.length, 0, 'check-config minted nothing')
})
