import { inspect } from 'node:util'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import { BearerToken } from '../../engine/secret.js'
import { CredentialCounters } from '../../engine/upstream/credentials/credential-counters.js'
import { COOLDOWN_MS, CredentialSource, type MintedCredential } from '../../engine/upstream/credentials/credential-source.js'
import { staticMint } from '../../engine/upstream/credentials/registry-provider.js'
import { commandMint, fileMint } from '../../engine/upstream/credentials/self-hosted.js'
import { ManualClock } from '../doubles/manual-clock.js'

const HOUR = 3_600_000

/** A stand-in control plane that counts mints; each mint answers from `next`. */
class StandIn {
  mints = 0
  signals: AbortSignal[] = []
  next: (n: number) => Promise<MintedCredential>
  constructor(next: (n: number) => Promise<MintedCredential>) { this.next = next }
  mint = (signal: AbortSignal): Promise<MintedCredential> => {
    this.mints++
    this.signals.push(signal)
    return this.next(this.mints)
  }
}

function setup(next: (n: number, clock: ManualClock) => Promise<MintedCredential>) {
  const clock = new ManualClock()
  const counters = new CredentialCounters(clock)
  const standIn = new StandIn((n) => next(n, clock))
  const source = new CredentialSource({ label: 'managedRepo', mint: standIn.mint, clock, counters })
  return { clock, counters, standIn, source }
}

const expiring = (n: number, clock: ManualClock): Promise<MintedCredential> =>
  Promise.resolve({ token: new BearerToken(`minted-secret-${n}`), expiresAt: clock.now() + HOUR })
const failing = (): Promise<MintedCredential> => Promise.reject(new Error('control plane down'))

t.test('the eager construction mint emits nothing; on-demand refresh near expiry is counted once', async (t) => {
  const { clock, counters, standIn, source } = setup(expiring)
  await source.prime()
  t.equal(standIn.mints, 1)
  t.same(counters.snapshot(), { refresh: {}, ttlSeconds: {} }, 'no refresh event, no expiry observation')
  t.equal((await source.token()).reveal(), 'minted-secret-1', 'cached')
  t.equal(standIn.mints, 1)
  clock.advance(HOUR - 60_000) // inside the refresh margin
  t.equal((await source.token()).reveal(), 'minted-secret-2')
  t.same(counters.snapshot(), { refresh: { 'managedRepo.success': 1 }, ttlSeconds: { managedRepo: 3600 } })
  clock.advance(2 * HOUR)
  t.same(counters.snapshot().ttlSeconds, { managedRepo: 0 }, 'an idle credential expires; the gauge clamps to zero')
})

t.test('a static registry provider: one mint, no expiry observation ever', async (t) => {
  const clock = new ManualClock()
  const counters = new CredentialCounters(clock)
  const source = new CredentialSource({ label: 'registry', mint: staticMint(new BearerToken('static-secret')), clock, counters })
  t.equal((await source.token()).reveal(), 'static-secret')
  clock.advance(365 * 24 * HOUR)
  t.equal((await source.token()).reveal(), 'static-secret')
  t.same(counters.snapshot(), { refresh: { 'registry.success': 1 }, ttlSeconds: {} })
})

t.test('callers that need a mint at once share one', async (t) => {
  const { standIn, source } = setup(expiring)
  const tokens = await Promise.all([source.token(), source.token(), source.token()])
  t.equal(standIn.mints, 1)
  t.same(tokens.map((x) => x.reveal()), ['minted-secret-1', 'minted-secret-1', 'minted-secret-1'])
})

t.test('five consecutive failures open the breaker for 60 s; refusals are not attempts; no token in any error', async (t) => {
  const { clock, counters, standIn, source } = setup(failing)
  for (let i = 1; i <= 5; i++) {
    const error = await source.token().then(() => undefined, (e: unknown) => e)
    t.ok(isServiceError(error, 'CREDENTIAL_MINT_FAILED'), `failure ${i}`)
  }
  t.equal(source.breaker, 'open')
  const refused = await source.token().then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(refused, 'CREDENTIAL_BREAKER_OPEN'), 'refused at once')
  t.equal(isServiceError(refused) ? refused.status : 0, 503)
  t.equal(isServiceError(refused) ? refused.retryAfter : 0, 60)
  t.equal(standIn.mints, 5, 'no mint while open')
  t.same(counters.snapshot().refresh, { 'managedRepo.failure': 5 }, 'the refusal is not a completed attempt')
  clock.advance(COOLDOWN_MS - 1000)
  t.equal(source.breaker, 'open')
  const late = await source.token().then(() => undefined, (e: unknown) => e)
  t.equal(isServiceError(late) ? late.retryAfter : 0, 1, 'Retry-After is the time left')
  clock.advance(1000)
  t.equal(source.breaker, 'half-open')
  t.notMatch(inspect(refused, { depth: 5 }), /minted-secret/)
})

t.test('valid cached tokens stay usable while the breaker is open', async (t) => {
  let fail = false
  const { clock, standIn, source } = setup((n, clock) => (fail ? failing() : expiring(n, clock)))
  await source.prime()
  fail = true
  clock.advance(HOUR - 10_000) // due for refresh, still valid
  for (let i = 0; i < 5; i++) t.equal((await source.token()).reveal(), 'minted-secret-1', 'a failed refresh falls back to the valid token')
  t.equal(source.breaker, 'open')
  t.equal((await source.token()).reveal(), 'minted-secret-1', 'open, and the valid token still serves')
  t.equal(standIn.mints, 6, 'the prime and five failures; nothing while open')
  clock.advance(20_000) // expired, the breaker still open
  const expired = await source.token().then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(expired, 'CREDENTIAL_BREAKER_OPEN'), 'expired: refused at once')
})

t.test('after the cooldown exactly one probe runs; its cancellation releases it', async (t) => {
  let resolveProbe: ((value: MintedCredential) => void) | undefined
  let mode: 'fail' | 'hold' = 'fail'
  const { clock, counters, standIn, source } = setup(() => mode === 'fail'
    ? failing()
    : new Promise<MintedCredential>((resolve) => { resolveProbe = resolve }))
  for (let i = 0; i < 5; i++) await source.token().catch(() => {})
  clock.advance(COOLDOWN_MS)
  mode = 'hold'

  const caller = new AbortController()
  const probe = source.token(caller.signal)
  t.equal(source.breaker, 'probing')
  const other = await source.token().then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(other, 'CREDENTIAL_BREAKER_OPEN'), 'a second caller during the probe is refused at once')
  t.equal(standIn.mints, 6, 'exactly one probe')
  caller.abort(new Error('client went away'))
  await t.rejects(probe, { message: 'client went away' })
  t.ok(standIn.signals[5]?.aborted, 'the probe mint is cancelled')
  t.same(counters.snapshot().refresh, { 'managedRepo.failure': 5 }, 'no outcome for a cancelled probe')
  t.equal(source.breaker, 'half-open', 'released')

  const retry = source.token()
  t.equal(standIn.mints, 7, 'an immediate retry probes again')
  resolveProbe?.({ token: new BearerToken('recovered-secret'), expiresAt: clock.now() + HOUR })
  t.equal((await retry).reveal(), 'recovered-secret')
  t.equal(source.breaker, 'closed')
  t.same(counters.snapshot().refresh, { 'managedRepo.failure': 5, 'managedRepo.success': 1 })
})

t.test('a failed probe opens the breaker for another cooldown', async (t) => {
  const { clock, source, standIn } = setup(failing)
  for (let i = 0; i < 5; i++) await source.token().catch(() => {})
  clock.advance(COOLDOWN_MS)
  await source.token().catch(() => {})
  t.equal(standIn.mints, 6)
  t.equal(source.breaker, 'open')
})

t.test('selfHosted: a file (JWT exp) and a command (JSON expiry), read again on demand', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'credential-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const clock = new ManualClock()
  const exp = Math.floor(clock.now() / 1000) + 1800
  const jwt = (n: number) => `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ exp, n })).toString('base64url')}.sig`
  const file = join(dir, 'token')
  await writeFile(file, `${jwt(1)}\n`)
  const counters = new CredentialCounters(clock)
  const fromFile = new CredentialSource({ label: 'selfHosted', mint: fileMint(file, clock), clock, counters })
  t.equal((await fromFile.token()).reveal(), jwt(1))
  t.same(counters.snapshot().ttlSeconds, { selfHosted: 1800 }, 'the expiry the JWT reports')
  await writeFile(file, jwt(2))
  t.equal((await fromFile.token()).reveal(), jwt(1), 'cached while valid')
  clock.advance(1800_000 - 60_000)
  t.equal((await fromFile.token()).reveal(), jwt(2), 're-read near expiry')

  const script = join(dir, 'mint.sh')
  await writeFile(script, `#!/bin/sh\necho '{"token":"command-secret","expiresIn":600}'\n`)
  await chmod(script, 0o755)
  const fromCommand = new CredentialSource({ label: 'selfHosted', mint: commandMint([script], clock), clock, counters })
  t.equal((await fromCommand.token()).reveal(), 'command-secret')
  t.same(counters.snapshot().ttlSeconds, { selfHosted: 60 }, 'the shortest remaining lifetime of the label: the file\'s JWT, 60 s left')
  const broken = new CredentialSource({ label: 'selfHosted', mint: commandMint(['/bin/sh', '-c', 'echo leaked-secret; exit 3'], clock), clock, counters })
  const error = await broken.token().then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(error, 'CREDENTIAL_MINT_FAILED'))
  t.notMatch(inspect(error, { depth: 5 }), /leaked-secret/, 'the command output is never in the error')
})
