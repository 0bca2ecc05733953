/**
 * The shared-backend contract (shared-backend.ts) on Valkey or Redis through
 * ioredis (`cache.backend: redis`, docs/cache.md).
 *
 * A backend that is down never holds a request (SPEC.md 6.3, issue 29):
 * - no offline queue and no per-command retry: while the connection is not
 *   ready every command fails at once, and ioredis reconnects behind;
 * - every command is bounded by `cache.timeoutMs` (`commandTimeout`), so a
 *   server that hangs costs a request that long and no more;
 * - each failure is a CACHE_BACKEND_FAILED the caller absorbs.
 *
 * Keys (every one under `cache.keyPrefix`, P):
 * - `P s|<group>`: a group's stamp (INCR), kept as long as the values;
 * - `P v|<group>|<stamp>|<name>`: a value; `P h|<group>|<stamp>|<name>`: a
 *   record of fields (a hash);
 * - `P l|<key>`: a lease (SET NX PX, with the holder's token), its release
 *   published on the channel `P released` as `<key>\n<outcome>`;
 * - `P c|<key>`: a claim (SET NX PX).
 * A stamped read is one script (EVALSHA): the stamp and, unless the caller's
 * copy is current, the value, in one round trip. The scripts touch keys they
 * build from their arguments, so the backend is a single primary (a
 * standalone server, or the primary a Sentinel or a managed service names),
 * not a Redis Cluster.
 */
import { Redis, type RedisOptions } from 'ioredis'
import { ServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import type { BearerToken } from '../secret.js'
import { LEASE_LOST, type Lease, type LeaseWatch, type SharedCacheBackend, type StampedRead } from './shared-backend.js'
import { randomUUID } from 'node:crypto'
import { LeaseWatchers } from './lease-watchers.js'

/** warn, once per outage: the shared backend stopped answering; requests go to the origin meanwhile. */
export const SHARED_CACHE_UNAVAILABLE = 'shared cache backend unavailable'
/** info: the shared backend answers (at boot, and after an outage). */
export const SHARED_CACHE_CONNECTED = 'shared cache backend connected'

/** Reconnect attempts back off to this, so a recovered server is used again within it. */
const MAX_RECONNECT_DELAY_MS = 2_000
/** A connection attempt's own bound: it never holds a request (commands fail at once while disconnected). */
const CONNECT_TIMEOUT_MS = 2_000

const STAMPED_GET = `
local s = redis.call('GET', KEYS[1]) or '0'
if s == ARGV[3] then return {s, 1} end
local v = redis.call('GET', ARGV[1] .. s .. ARGV[2])
if v then return {s, 0, v} end
return {s, 0}`

const STAMPED_HGET = `
local s = redis.call('GET', KEYS[1]) or '0'
if s == ARGV[3] then return {s, 1} end
local v = redis.call('HGET', ARGV[1] .. s .. ARGV[2], ARGV[4])
if v then return {s, 0, v} end
return {s, 0}`

const BUMP = `
local s = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return s`

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return redis.call('PUBLISH', ARGV[2], ARGV[3])`

type Reply = [Buffer, number, Buffer?]

interface Scripts {
  stampedGetBuffer(stampKey: string, before: string, after: string, known: string): Promise<Reply>
  stampedHgetBuffer(stampKey: string, before: string, after: string, known: string, field: string): Promise<Reply>
  bumpStamp(stampKey: string, ttlMs: number): Promise<number>
  releaseLease(leaseKey: string, token: string, channel: string, message: string): Promise<number>
}

export interface RedisBackendOptions {
  /** `cache.url`: redis:// or rediss:// (TLS), no userinfo. */
  readonly url: string
  readonly username?: string | undefined
  readonly password?: BearerToken | undefined
  readonly keyPrefix: string
  /** `cache.timeoutMs`: bound of every command. */
  readonly timeoutMs: number
  /** How long the stamps live: at least as long as the values written under them (`cache.sharedTtlSeconds`). */
  readonly stampTtlMs: number
  readonly logger: Logger
}

function failure(operation: string, error: unknown): ServiceError {
  return new ServiceError('CACHE_BACKEND_FAILED', {
    message: `shared cache ${operation} failed: ${error instanceof Error ? error.message : String(error)}`,
    cause: error,
    data: { operation },
  })
}

export class RedisBackend implements SharedCacheBackend {
  readonly #client: Redis
  readonly #subscriber: Redis
  readonly #prefix: string
  readonly #stampTtlMs: number
  readonly #channel: string
  readonly #logger: Logger
  readonly #watchers = new LeaseWatchers()
  #up = false
  #closed = false

  constructor(options: RedisBackendOptions) {
    this.#prefix = options.keyPrefix
    this.#stampTtlMs = options.stampTtlMs
    this.#channel = `${options.keyPrefix}released`
    this.#logger = options.logger
    const settings: RedisOptions = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.timeoutMs,
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: (times) => Math.min(times * 100, MAX_RECONNECT_DELAY_MS),
      ...(options.username === undefined ? {} : { username: options.username }),
      ...(options.password === undefined ? {} : { password: options.password.reveal() }),
    }
    this.#client = new Redis(options.url, settings)
    this.#client.defineCommand('stampedGet', { lua: STAMPED_GET, numberOfKeys: 1, readOnly: true })
    this.#client.defineCommand('stampedHget', { lua: STAMPED_HGET, numberOfKeys: 1, readOnly: true })
    this.#client.defineCommand('bumpStamp', { lua: BUMP, numberOfKeys: 1 })
    this.#client.defineCommand('releaseLease', { lua: RELEASE, numberOfKeys: 1 })
    // The subscriber waits on its own connection (a subscribed connection takes no other command); no command timeout there.
    this.#subscriber = new Redis(options.url, { ...settings, commandTimeout: undefined, enableOfflineQueue: true })
    this.#subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => this.#released(message.toString('utf8')))
    for (const connection of [this.#client, this.#subscriber]) {
      // ioredis reports every failed reconnect as an 'error' event: one warn per outage (below), never a crash.
      connection.on('error', () => {})
    }
    this.#client.on('ready', () => {
      if (!this.#up) this.#logger.info(SHARED_CACHE_CONNECTED, { url: redactedUrl(options.url) })
      this.#up = true
    })
    // A release published while the subscriber is away is never heard: a waiter stops waiting now and looks again (SharedTier
    // then finds the backend down and does the work itself), rather than for the whole `cache.collapseWaitMs`.
    this.#subscriber.on('close', () => this.#settleAll(LEASE_LOST))
    this.#client.on('close', () => {
      if (this.#up && !this.#closed) this.#logger.warn(SHARED_CACHE_UNAVAILABLE, { url: redactedUrl(options.url) })
      this.#up = false
    })
  }

  /** Connects both connections, waiting at most the connection bound; a server that is down is no boot failure (requests go to the origin). */
  async connect(): Promise<boolean> {
    const attempts = [this.#client.connect(), this.#subscriber.connect().then(() => this.#subscriber.subscribe(this.#channel))]
    const settled = await Promise.allSettled(attempts)
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (failed !== undefined) {
      this.#logger.warn(SHARED_CACHE_UNAVAILABLE, { reason: failed.reason instanceof Error ? failed.reason.message : String(failed.reason) })
      return false
    }
    return true
  }

  async read(group: string, name: string, known?: string): Promise<StampedRead> {
    try {
      const reply = await this.#scripts.stampedGetBuffer(this.#stampKey(group), `${this.#prefix}v|${group}|`, `|${name}`, known ?? '')
      return stamped(reply)
    } catch (error) {
      throw failure('read', error)
    }
  }

  async write(group: string, stamp: string, name: string, value: Uint8Array, ttlMs: number): Promise<void> {
    try {
      await this.#client.set(`${this.#prefix}v|${group}|${stamp}|${name}`, Buffer.from(value.buffer, value.byteOffset, value.byteLength), 'PX', ttlMs)
    } catch (error) {
      throw failure('write', error)
    }
  }

  async readField(group: string, name: string, field: string, known?: string): Promise<StampedRead> {
    try {
      const reply = await this.#scripts.stampedHgetBuffer(this.#stampKey(group), `${this.#prefix}h|${group}|`, `|${name}`, known ?? '', field)
      return stamped(reply)
    } catch (error) {
      throw failure('read', error)
    }
  }

  async writeFields(group: string, stamp: string, name: string, fields: ReadonlyMap<string, Uint8Array>, ttlMs: number): Promise<void> {
    if (fields.size === 0) return
    const key = `${this.#prefix}h|${group}|${stamp}|${name}`
    const pairs: (string | Buffer)[] = []
    for (const [field, value] of fields) pairs.push(field, Buffer.from(value.buffer, value.byteOffset, value.byteLength))
    try {
      const results = await this.#client.multi().hset(key, ...pairs).pexpire(key, ttlMs).exec()
      const failed = results?.find(([error]) => error !== null)
      if (results === null || failed !== undefined) throw failed?.[0] ?? new Error('the transaction was discarded')
    } catch (error) {
      throw failure('write', error)
    }
  }

  async bump(group: string): Promise<void> {
    try {
      await this.#scripts.bumpStamp(this.#stampKey(group), this.#stampTtlMs)
    } catch (error) {
      throw failure('invalidate', error)
    }
  }

  async lease(key: string, ttlMs: number): Promise<Lease | undefined> {
    const token = randomUUID()
    try {
      const answer = await this.#client.set(`${this.#prefix}l|${key}`, token, 'PX', ttlMs, 'NX')
      return answer === 'OK' ? { key, token } : undefined
    } catch (error) {
      throw failure('lease', error)
    }
  }

  async release(lease: Lease, outcome: string): Promise<void> {
    try {
      await this.#scripts.releaseLease(`${this.#prefix}l|${lease.key}`, lease.token, this.#channel, `${lease.key}\n${outcome}`)
    } catch (error) {
      throw failure('release', error)
    }
  }

  watch(key: string): LeaseWatch {
    // A subscriber that is not ready hears no release: the waiter stops waiting at once and looks again.
    if (this.#subscriber.status !== 'ready') return LeaseWatchers.settledWith(LEASE_LOST)
    return this.#watchers.watch(key)
  }

  #settleAll(outcome: string): void {
    this.#watchers.settleAll(outcome)
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    try {
      return await this.#client.set(`${this.#prefix}c|${key}`, '1', 'PX', ttlMs, 'NX') === 'OK'
    } catch (error) {
      throw failure('claim', error)
    }
  }

  async unclaim(key: string): Promise<void> {
    try {
      await this.#client.del(`${this.#prefix}c|${key}`)
    } catch (error) {
      throw failure('unclaim', error)
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#watchers.clear()
    await Promise.allSettled([this.#client.quit(), this.#subscriber.quit()])
    this.#client.disconnect()
    this.#subscriber.disconnect()
  }

  get #scripts(): Scripts {
    return this.#client as unknown as Scripts
  }

  #stampKey(group: string): string {
    return `${this.#prefix}s|${group}`
  }

  #released(message: string): void {
    const cut = message.indexOf('\n')
    if (cut < 0) return
    this.#watchers.released(message.slice(0, cut), message.slice(cut + 1))
  }
}

function stamped(reply: Reply): StampedRead {
  const [stamp, current, value] = reply
  return { stamp: stamp.toString('utf8'), current: Number(current) === 1, value }
}

/** The URL as logs may show it: host, port and database, never a credential (there is none: userinfo is refused at boot). */
function redactedUrl(raw: string): string {
  try {
    const url = new URL(raw)
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`
  } catch {
    return '<unparsable>'
  }
}
