/**
 * The shared cache backend on a real redis-server (test/peers/redis.ts):
 * the shared suite (STYLE.md rule 8), then what only this adapter does:
 * key prefixes that keep two tiers apart on one server, and the failure
 * rules of SPEC.md 6.3 (a server that is killed or hangs fails an operation
 * within its bound, typed CACHE_BACKEND_FAILED, and is used again once back).
 */
import t from 'tap'
import { RedisBackend, SHARED_CACHE_CONNECTED, SHARED_CACHE_UNAVAILABLE } from '../../engine/cache/redis-backend.js'
import { BearerToken } from '../../engine/secret.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { startRedis } from '../peers/redis.js'
import { sharedBackendSuite } from './shared-backend.suite.js'

const redis = await startRedis(t)
let serial = 0

async function backendOn(url: string, options: { prefix?: string, timeoutMs?: number, logger?: RecordingLogger } = {}): Promise<RedisBackend> {
  const backend = new RedisBackend({
    url,
    keyPrefix: options.prefix ?? `t${process.pid}-${++serial}:`,
    timeoutMs: options.timeoutMs ?? 1_000,
    stampTtlMs: 60_000,
    logger: options.logger ?? new RecordingLogger(),
  })
  await backend.connect()
  return backend
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

t.test('the shared backend suite, on redis-server', async (t) => {
  sharedBackendSuite(t, async () => {
    const backend = await backendOn(redis.url)
    return { backend, elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)), close: () => backend.close() }
  })
})

t.test('two key prefixes on one server are two caches', async (t) => {
  const a = await backendOn(redis.url, { prefix: 'tier-a:' })
  const b = await backendOn(redis.url, { prefix: 'tier-b:' })
  t.teardown(async () => { await a.close(); await b.close() })
  await a.write('js|x', '0', 'doc', bytes('a'), 60_000)
  t.equal((await b.read('js|x', 'doc')).value, undefined)
  await b.bump('js|x')
  t.equal((await a.read('js|x', 'doc')).value?.toString(), 'a', 'a bump under one prefix leaves the other alone')
  t.ok(await a.lease('js|x', 60_000))
  t.ok(await b.lease('js|x', 60_000), 'leases are apart too')
  t.match(await redis.command('EXISTS', 'tier-a:v|js|x|0|doc'), /^:1/, 'the value sits under its prefix, as docs/cache.md names it')
})

t.test('a password is sent as AUTH; a wrong one fails every operation, typed', async (t) => {
  await redis.command('CONFIG', 'SET', 'requirepass', 'sesame')
  t.teardown(() => redis.command('AUTH', 'sesame').then(() => undefined).catch(() => undefined))
  const ok = new RedisBackend({ url: redis.url, password: new BearerToken('sesame'), keyPrefix: 'auth:', timeoutMs: 1_000, stampTtlMs: 60_000, logger: new RecordingLogger() })
  t.teardown(() => ok.close())
  t.equal(await ok.connect(), true)
  t.equal(await ok.claim('k', 60_000), true)
  const wrong = new RedisBackend({ url: redis.url, password: new BearerToken('nope'), keyPrefix: 'auth:', timeoutMs: 1_000, stampTtlMs: 60_000, logger: new RecordingLogger() })
  t.teardown(() => wrong.close())
  t.equal(await wrong.connect(), false, 'refused at connect: no boot failure, a warning')
  await t.rejects(wrong.read('js|x', 'doc'), { code: 'CACHE_BACKEND_FAILED' })
  await ok.close()
  await resetPassword(redis.port)
})

/** CONFIG SET requirepass '' over a raw connection that authenticates first. */
async function resetPassword(port: number): Promise<void> {
  const { connect } = await import('node:net')
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    let answer = ''
    socket.on('error', reject)
    socket.on('data', (c: Buffer) => {
      answer += c.toString()
      if ((answer.match(/\r\n/g) ?? []).length >= 2) { socket.destroy(); resolve() }
    })
    socket.write('*2\r\n$4\r\nAUTH\r\n$6\r\nsesame\r\n*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$11\r\nrequirepass\r\n$0\r\n\r\n')
  })
}

t.test('a killed server fails every operation at once, typed, and is used again when it is back', async (t) => {
  const own = await startRedis(t)
  const logger = new RecordingLogger()
  const backend = await backendOn(own.url, { timeoutMs: 50, logger })
  t.teardown(() => backend.close())
  t.equal(logger.find(SHARED_CACHE_CONNECTED).length, 1)
  await backend.write('js|a', '0', 'doc', bytes('v'), 60_000)
  await own.kill()
  const started = Date.now()
  const operations: (() => Promise<unknown>)[] = [
    () => backend.read('js|a', 'doc'),
    () => backend.write('js|a', '0', 'doc', bytes('v'), 60_000),
    () => backend.readField('js|a', 'versions', 'f'),
    () => backend.writeFields('js|a', '0', 'versions', new Map([['f', bytes('v')]]), 60_000),
    () => backend.bump('js|a'),
    () => backend.lease('js|a', 1_000),
    () => backend.claim('js|a', 1_000),
  ]
  for (const operation of operations) {
    await t.rejects(operation() as Promise<void>, { code: 'CACHE_BACKEND_FAILED' })
  }
  // Not a timing measure: a call that waited for the server would wait until it is back (below), so any bound
  // far above the 50 ms timeout tells the two apart; 20 s holds on a loaded 2-core machine.
  t.ok(Date.now() - started < 20_000, `seven failed operations took ${Date.now() - started} ms`)
  // The connection's close event may come after the first operations failed (they fail on a write to a dead socket).
  const warnedBy = Date.now() + 5_000
  while (logger.find(SHARED_CACHE_UNAVAILABLE).length === 0 && Date.now() < warnedBy) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(logger.find(SHARED_CACHE_UNAVAILABLE).length, 1, 'one warning for the outage')
  await own.start()
  // ioredis's own reconnection backoff, slower under load: a bound, not a measure.
  const deadline = Date.now() + 60_000
  let back = false
  while (!back && Date.now() < deadline) {
    back = await backend.claim('after', 60_000).catch(() => false)
    if (!back) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.ok(back, 'reconnected by itself')
  t.equal((await backend.read('js|a', 'doc')).value, undefined, 'the new server is empty: a miss, not an error')
})

t.test('a server that hangs fails an operation at the timeout, not later', async (t) => {
  const own = await startRedis(t)
  const backend = await backendOn(own.url, { timeoutMs: 50 })
  t.teardown(() => backend.close())
  t.teardown(() => { if (own.pid !== undefined) process.kill(own.pid, 'SIGCONT') })
  process.kill(own.pid!, 'SIGSTOP')
  const started = Date.now()
  await t.rejects(backend.read('js|a', 'doc'), { code: 'CACHE_BACKEND_FAILED' })
  t.ok(Date.now() - started < 2_000, `the read failed after ${Date.now() - started} ms (timeout 50 ms)`)
  process.kill(own.pid!, 'SIGCONT')
})
