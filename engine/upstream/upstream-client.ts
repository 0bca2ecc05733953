/**
 * The HTTP client of one upstream registry (SPEC.md 1.3, 4.2, 4.4, 5, 8):
 * behind the upstream's egress guard, one undici Agent (a keep-alive Pool per
 * origin) for metadata and the relay's own keep-alive connections for
 * artifacts (http1/artifact-connection-pool.ts says why). Two reads go through it:
 *
 * - `fetchDocument`: a metadata document, decompressed as a stream under the
 *   ingest ceiling, chunk by chunk through the caller's `onChunk` (where the
 *   memory gate charges and may pause; reading pauses with it).
 * - `openArtifact`: an artifact request for the streaming relay; status, safe
 *   headers and the verbatim body, read without a per-chunk allocation.
 *
 * MUST hold on every request: no redirect is ever followed (undici 7 follows
 * none without its redirect interceptor, which is never composed here, and
 * the artifact connections follow none; a 3xx comes back to the caller); every request carries `Via: 1.1 <proxyId>` so a
 * request that loops back to this proxy can be recognised; the public side is
 * anonymous (no Authorization header is ever built for it); the private side
 * sends its credential as `Authorization: Bearer`, and that credential only
 * ever goes to the private upstream's own origin.
 */
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { pipeline, type Readable, type Transform } from 'node:stream'
import type { lookup as dnsLookup } from 'node:dns'
import { isIP } from 'node:net'
import { Agent, buildConnector } from 'undici'
import { ServiceError } from '../errors.js'
import type { Logger } from '../log/logger.js'
import { OncePerWindow } from '../log/once-per-window.js'
import { systemClock, type Clock } from '../clock.js'
import type { BearerToken } from '../secret.js'
import { encodePackageName } from '../npm/names.js'
import { EgressGuard, authorityOf, checkTarballAuthority } from './egress-guard.js'
import { ACCEPTED_ENCODINGS, decodersFor } from './content-decoding.js'
import { transportFailure } from './http1/transport-failure.js'
import type { FetchErrorCause, UpstreamFetchCounters } from './fetch-counters.js'
import type { ArtifactResponse } from './http1/artifact-response.js'
import { ArtifactConnections } from './http1/artifact-connection-pool.js'
import type { LargeReadBuffers } from './http1/artifact-connection.js'
import type { RequestAbort } from './http1/request-abort.js'
import { ChunkRuns } from './chunk-runs.js'
import { forwardProxyDetail, type ForwardProxy } from './forward-proxy.js'
import { proxiedConnector } from './proxied-connector.js'

/** Logged at error: 408, 429, 5xx, no answer, a malformed or oversized body (SPEC.md 6.2). */
export const METADATA_FETCH_FAILED = 'upstream metadata fetch failed'
/** Logged at warn: 401, 403, a redirect and any other non-success status (SPEC.md 6.2). */
export const METADATA_FETCH_REFUSED = 'upstream metadata fetch refused'
/** Logged at warn: a genuine 404 or 410, answered as a forwarded miss (SPEC.md 6.2). */
export const METADATA_MISS = 'upstream metadata miss'
/**
 * METADATA_MISS is written once per package per window (issue 32: a private
 * registry without the public packages logged a line per package read); the
 * misses left out are counted on the fetch errors and in the next line's
 * `repeats`.
 */
export const METADATA_MISS_LOG_WINDOW_MS = 15 * 60_000
/** Packages whose last miss line is remembered; past it the oldest is forgotten. */
const METADATA_MISS_LOG_KEYS = 4096

export interface UpstreamTimeouts {
  /** TCP and TLS connection set-up. */
  readonly connectMs: number
  /** From the request to the response headers. */
  readonly headersMs: number
  /** Longest silence between body chunks while the reader is reading. */
  readonly bodyIdleMs: number
  /** Whole metadata exchange, pauses included (SPEC.md 8: 50 s). */
  readonly exchangeMs: number
  /** Longest an artifact body may stay paused or unread (SPEC.md 8: 50 s). */
  readonly pausedReadMs: number
}

export const DEFAULT_UPSTREAM_TIMEOUTS: UpstreamTimeouts = Object.freeze({
  connectMs: 10_000,
  headersMs: 30_000,
  bodyIdleMs: 30_000,
  exchangeMs: 50_000,
  pausedReadMs: 50_000,
})

export interface UpstreamClientOptions {
  /** The upstream's base URL (a path is kept: `https://host/npm/`). No userinfo, query or fragment. */
  readonly url: URL | string
  /** True for the private upstream, false for the public one. */
  readonly trusted: boolean
  /** The private upstream's credential; refused on the public side, which is always anonymous. */
  readonly token?: BearerToken
  /**
   * A minted credential (engine/upstream/credentials/) used in place of
   * `token`, asked for on each request; its refusal (CREDENTIAL_BREAKER_OPEN,
   * CREDENTIAL_MINT_FAILED: 503 with Retry-After) fails the request.
   */
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> }
  /** An extra trust anchor added to the default roots (file path or PEM text). */
  readonly caFile?: string
  readonly caPem?: string
  /** Public side: extra hosts egress may reach besides the upstream's own. */
  readonly allowHosts?: readonly string[]
  /** Public side: CIDR ranges exempt from the internal-range block. */
  readonly allowInternalRanges?: readonly string[]
  /** The configuration key of `allowInternalRanges`, named in an internal-address refusal. */
  readonly allowInternalRangesKey?: string
  /** Metadata ingest ceiling on DECOMPRESSED bytes (`limits.maxResponseBytes`). */
  readonly maxResponseBytes: number
  readonly timeouts?: Partial<UpstreamTimeouts>
  /** This proxy's pseudonym in the `Via` hop marker (an RFC 9110 token). */
  readonly proxyId: string
  readonly logger: Logger
  readonly counters: UpstreamFetchCounters
  /** Sockets per origin; unbounded when unset. */
  readonly connections?: number
  /** How long an idle keep-alive socket is kept. */
  readonly keepAliveTimeoutMs?: number
  /** The large artifact read buffers to borrow from (the proxy shares one, sized by the memory plan); a pool of its own when unset. */
  readonly largeReadBuffers?: LargeReadBuffers
  /** Resolver for the egress guard; tests inject one. */
  readonly resolve?: typeof dnsLookup
  /**
   * Public side: the tarball-host policy (`SERVICE_RESPECT_UPSTREAM_TARBALL_HOST`).
   * False (the default) refuses an artifact URL on another host or port.
   */
  readonly respectUpstreamTarballHost?: boolean
  /** Times the metadata miss log's window (METADATA_MISS_LOG_WINDOW_MS); the system clock when unset. */
  readonly clock?: Clock
  /** The forward proxy connections leave through (forward-proxy.ts); direct when unset. */
  readonly forwardProxy?: ForwardProxy | undefined
}

export interface FetchDocumentOptions {
  readonly accept?: string
  readonly signal?: AbortSignal
  /** Awaited for every decompressed chunk before the next is read. */
  readonly onChunk?: (chunk: Uint8Array) => Promise<void> | void
  /** Validators of a copy the caller holds: a 304 then answers `not-modified`, with no body read (issue 17 item 2). */
  readonly conditional?: DocumentValidators
}

/** What an upstream said identifies one version of a document. */
export interface DocumentValidators {
  readonly etag?: string
  readonly lastModified?: string
}

export type FetchedDocument =
  | { readonly kind: 'document', readonly chunks: Uint8Array[], readonly bytes: number, readonly etag?: string, readonly lastModified?: string, readonly contentType?: string }
  | { readonly kind: 'miss', readonly status: number }
  | { readonly kind: 'not-modified' }

export interface OpenArtifactOptions {
  readonly method: 'GET' | 'HEAD'
  /** The client's credential to forward (private side only; never sent on the public side). */
  readonly bearer?: BearerToken
  readonly conditional?: { readonly ifNoneMatch?: string, readonly ifModifiedSince?: string }
  /**
   * Calls the request off; its reason is then thrown. The relay route's is an
   * AbortCue; a caller holding an AbortSignal wraps it in a SignalAbort
   * (http1/request-abort.ts says why not a signal).
   */
  readonly abort?: RequestAbort
}

/** `If-None-Match` and `If-Modified-Since` from a held copy's validators, added to `headers`. */
function conditionalHeaders(headers: Record<string, string>, validators: { readonly etag?: string | undefined, readonly lastModified?: string | undefined } | undefined): Record<string, string> {
  if (validators?.etag !== undefined) headers['if-none-match'] = validators.etag
  if (validators?.lastModified !== undefined) headers['if-modified-since'] = validators.lastModified
  return headers
}

const PSEUDONYM = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

function checkOptions(options: UpstreamClientOptions, url: URL): void {
  const bad = (message: string): never => { throw new ServiceError('CONFIG_INVALID', { message }) }
  if (url.username !== '' || url.password !== '') bad('an upstream URL must not carry userinfo; use the secret settings')
  if (url.search !== '' || url.hash !== '') bad('an upstream URL must not carry a query or fragment')
  if (!options.trusted && options.token !== undefined) bad('the public upstream is anonymous: it takes no token')
  if (!options.trusted && options.credential !== undefined) bad('the public upstream is anonymous: it takes no credential')
  if (options.token !== undefined && options.credential !== undefined) bad('a token or a credential, not both')
  if (!Number.isSafeInteger(options.maxResponseBytes) || options.maxResponseBytes <= 0) bad('maxResponseBytes must be a positive integer')
  if (!PSEUDONYM.test(options.proxyId)) bad('proxyId must be an HTTP token (it is sent in Via)')
  if (options.caFile !== undefined && options.caPem !== undefined) bad('give caFile or caPem, not both')
  if (options.connections !== undefined && (!Number.isSafeInteger(options.connections) || options.connections <= 0)) {
    bad('connections must be a positive integer')
  }
}

function checkTimeouts(t: UpstreamTimeouts): void {
  for (const [key, value] of Object.entries(t)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: `timeouts.${key} must be a positive integer of milliseconds` })
    }
  }
}

function readCa(options: UpstreamClientOptions): string | undefined {
  if (options.caPem !== undefined) return options.caPem
  if (options.caFile === undefined) return undefined
  try {
    return readFileSync(options.caFile, 'utf8')
  } catch (cause) {
    throw new ServiceError('BOOT_UNBUILDABLE', { cause, message: `the CA file cannot be read: ${options.caFile}` })
  }
}

export class UpstreamClient {
  readonly #base: URL
  readonly #trusted: boolean
  readonly #token: BearerToken | undefined
  readonly #credential: UpstreamClientOptions['credential']
  readonly #guard: EgressGuard
  readonly #agent: Agent
  readonly #artifacts: ArtifactConnections
  readonly #maxResponseBytes: number
  readonly #timeouts: UpstreamTimeouts
  readonly #via: string
  readonly #logger: Logger
  readonly #counters: UpstreamFetchCounters
  readonly #respectTarballHost: boolean
  readonly #missLines: OncePerWindow

  constructor(options: UpstreamClientOptions) {
    let url: URL
    try {
      url = new URL(options.url)
    } catch {
      throw new ServiceError('CONFIG_INVALID', { message: 'the upstream URL does not parse' })
    }
    checkOptions(options, url)
    const timeouts: UpstreamTimeouts = Object.freeze({ ...DEFAULT_UPSTREAM_TIMEOUTS, ...options.timeouts })
    checkTimeouts(timeouts)
    this.#base = new URL(url.href.endsWith('/') ? url.href : `${url.href}/`)
    this.#trusted = options.trusted
    this.#token = options.token
    this.#credential = options.credential
    this.#maxResponseBytes = options.maxResponseBytes
    this.#timeouts = timeouts
    this.#via = `1.1 ${options.proxyId}`
    this.#logger = options.logger
    this.#counters = options.counters
    this.#respectTarballHost = options.respectUpstreamTarballHost ?? false
    this.#missLines = new OncePerWindow({ windowMs: METADATA_MISS_LOG_WINDOW_MS, maxKeys: METADATA_MISS_LOG_KEYS, clock: options.clock ?? systemClock })
    this.#guard = new EgressGuard({
      upstreamUrl: url,
      trusted: options.trusted,
      allowHosts: options.allowHosts,
      allowInternalRanges: options.allowInternalRanges,
      ...(options.allowInternalRangesKey === undefined ? {} : { allowInternalRangesKey: options.allowInternalRangesKey }),
      logger: options.logger,
      resolve: options.resolve,
    })

    const ca = readCa(options)
    // Verification is never switched off: an extra CA only adds to the roots.
    const inner = buildConnector({
      timeout: timeouts.connectMs,
      ...(ca === undefined ? {} : { ca: [...rootCertificates, ca] }),
      ...(options.trusted ? {} : { lookup: this.#guard.lookup }),
    })
    const guard = this.#guard
    const lookup = options.trusted ? undefined : this.#guard.lookup
    const onward = options.forwardProxy === undefined
      ? inner
      : proxiedConnector({ direct: inner, forwardProxy: options.forwardProxy, lookup, timeoutMs: timeouts.connectMs })
    const connect: buildConnector.connector = (connectOptions, callback) => {
      // A literal address never reaches `lookup`, so it is judged here.
      const host = connectOptions.hostname
      if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) {
        try {
          guard.checkAddress(host)
        } catch (err) {
          callback(err as Error, null)
          return
        }
      }
      onward(connectOptions, callback)
    }
    this.#agent = new Agent({
      connect,
      headersTimeout: timeouts.headersMs,
      bodyTimeout: timeouts.bodyIdleMs,
      ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeout: options.keepAliveTimeoutMs }),
      ...(options.connections === undefined ? {} : { connections: options.connections }),
    })
    // Artifacts have connections of their own (http1/artifact-connection-pool.ts says why), under the same guard and timeouts.
    this.#artifacts = new ArtifactConnections({
      timeouts,
      ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveMs: options.keepAliveTimeoutMs }),
      ...(options.connections === undefined ? {} : { connections: options.connections }),
      ...(ca === undefined ? {} : { ca }),
      ...(options.largeReadBuffers === undefined ? {} : { largeReadBuffers: options.largeReadBuffers }),
      ...(lookup === undefined ? {} : { lookup }),
      ...(options.forwardProxy === undefined ? {} : { forwardProxy: options.forwardProxy }),
      checkAddress: (address) => guard.checkAddress(address),
    })
  }

  get trusted(): boolean { return this.#trusted }
  get baseUrl(): URL { return new URL(this.#base) }

  /** `{base}/{package}` with a scoped name written `@scope%2fname`. */
  documentUrl(packageName: string): URL {
    return new URL(`${this.#base.href}${encodePackageName(packageName)}`)
  }

  /** The conventional artifact location `{base}/{package}/-/{file}` (SPEC.md 4.4 private leg 1). */
  artifactUrl(packageName: string, filename: string): URL {
    return new URL(`${this.#base.href}${encodePackageName(packageName)}/-/${encodeURIComponent(filename)}`)
  }

  #headers(extra: Record<string, string>, bearer?: BearerToken): Record<string, string> {
    const headers: Record<string, string> = { via: this.#via, ...extra }
    // The public side never builds an Authorization header (SPEC.md 5.3).
    const credential = this.#trusted ? (bearer ?? this.#token) : undefined
    if (credential !== undefined) headers.authorization = `Bearer ${credential.reveal()}`
    return headers
  }

  #fail(message: string, level: 'warn' | 'error', cause: FetchErrorCause, data: Record<string, unknown>): void {
    this.#counters.increment(cause)
    this.#logger[level](message, { ...data, cause })
  }

  /**
   * Fetches the metadata document of `packageName` (a decoded, valid name).
   * Returns the decompressed chunks, or a miss on 404/410; throws a
   * ServiceError otherwise (see the status mapping below). When the caller's
   * signal aborts, its reason is thrown and nothing is logged or counted.
   */
  async fetchDocument(packageName: string, options: FetchDocumentOptions = {}): Promise<FetchedDocument> {
    return this.#fetchAt(this.documentUrl(packageName), packageName, options)
  }

  /**
   * `{base}{project}/`: a Simple Repository API project page (PEP 503), the
   * base being the index URL as pip's `--index-url` takes it. `project` is a
   * PEP 503 normal name, so it needs no escaping. Same answers as fetchDocument.
   */
  async fetchProjectPage(project: string, options: FetchDocumentOptions = {}): Promise<FetchedDocument> {
    return this.#fetchAt(new URL(`${this.#base.href}${project}/`), project, options)
  }

  /**
   * `{base}{path}`: a registry document that is not a packument (npm's
   * `-/npm/v1/keys`, `-/npm/v1/attestations/{spec}`), read like one, under
   * the same egress guard, ceiling and status mapping. `path` is relative
   * to the base and already escaped; `what` names it in logs.
   */
  async fetchRegistryPath(path: string, what: string, options: FetchDocumentOptions = {}): Promise<FetchedDocument> {
    return this.#fetchAt(new URL(`${this.#base.href}${path}`), what, options)
  }

  async #fetchAt(url: URL, packageName: string, options: FetchDocumentOptions): Promise<FetchedDocument> {
    const upstream = authorityOf(url)
    const where = { upstream, package: packageName }
    const exchange = new AbortController()
    const timer = setTimeout(() => {
      exchange.abort(new ServiceError('UPSTREAM_TIMEOUT', { data: { upstream, reason: 'exchange cap' } }))
    }, this.#timeouts.exchangeMs)
    timer.unref()
    const signal = options.signal === undefined ? exchange.signal : AbortSignal.any([options.signal, exchange.signal])
    // A failure without an HTTP answer: counted and logged here, once.
    const failed = (err: unknown): unknown => {
      if (options.signal?.aborted === true && !exchange.signal.aborted) return options.signal.reason
      const failure = transportFailure(exchange.signal.aborted ? exchange.signal.reason : err, upstream)
      const detail = failure.error.data?.['code'] ?? failure.error.data?.['reason']
      this.#fail(METADATA_FETCH_FAILED, 'error', failure.cause, { ...where, code: failure.error.code, ...(detail === undefined ? {} : { detail }), ...forwardProxyDetail(failure.error) })
      return failure.error
    }
    try {
      // A credential refusal is the request's answer (503 with Retry-After), not a transport failure.
      const minted = this.#credential === undefined ? undefined : await this.#credential.token(signal)
      let response
      try {
        this.#guard.checkUrl(url)
        response = await this.#agent.request({
          origin: url.origin,
          path: url.pathname,
          method: 'GET',
          headers: this.#headers(conditionalHeaders({ accept: options.accept ?? 'application/json', 'accept-encoding': ACCEPTED_ENCODINGS }, options.conditional), minted),
          signal,
        })
      } catch (err) {
        throw failed(err)
      }
      const status = response.statusCode
      if (status === 304 && options.conditional !== undefined) {
        response.body.dump().catch(() => {})
        return { kind: 'not-modified' }
      }
      if (status !== 200 && status !== 203) {
        response.body.dump().catch(() => {})
        return this.#refusal(status, where)
      }
      let body
      try {
        body = await this.#readDocument(response.body, response.headers, options.onChunk, signal, where)
      } catch (err) {
        throw failed(err)
      }
      const etag = firstHeader(response.headers.etag)
      const lastModified = firstHeader(response.headers['last-modified'])
      const contentType = firstHeader(response.headers['content-type'])
      return {
        kind: 'document',
        ...body,
        ...(etag === undefined ? {} : { etag }),
        ...(lastModified === undefined ? {} : { lastModified }),
        ...(contentType === undefined ? {} : { contentType }),
      }
    } finally {
      clearTimeout(timer)
    }
  }

  /** Status mapping of a metadata answer that is not a document (SPEC.md 4.2, 6.2). */
  #refusal(status: number, where: Readonly<Record<string, unknown>>): FetchedDocument {
    const data = { ...where, status }
    if (status === 404 || status === 410) {
      const repeats = this.#missLines.take(String(where['package']))
      if (repeats === undefined) this.#counters.increment('upstream_status')
      else this.#fail(METADATA_MISS, 'warn', 'upstream_status', { ...where, status, ...(repeats === 0 ? {} : { repeats }) })
      return { kind: 'miss', status }
    }
    if (status === 401 || status === 403) {
      this.#fail(METADATA_FETCH_REFUSED, 'warn', 'other', { ...where, status })
      throw new ServiceError('UPSTREAM_REFUSED', { data })
    }
    if (status === 408 || status === 429 || status >= 500) {
      this.#fail(METADATA_FETCH_FAILED, 'error', 'upstream_status', { ...where, status })
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { data })
    }
    this.#fail(METADATA_FETCH_REFUSED, 'warn', 'upstream_status', { ...where, status })
    if (status >= 300 && status < 400 && status !== 304) throw new ServiceError('UPSTREAM_REDIRECT', { data })
    throw new ServiceError('UPSTREAM_REFUSED', { data })
  }

  /**
   * Reads a success body through its decoders, one chunk at a time, under the
   * ceiling. The stream is pulled, never pushed: while `onChunk` is pending
   * nothing more is read, the decoder and undici's body fill to their high
   * water marks, undici stops reading the socket and TCP holds the sender.
   */
  async #readDocument(
    body: Readable,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    onChunk: FetchDocumentOptions['onChunk'],
    signal: AbortSignal,
    where: Readonly<Record<string, unknown>>,
  ): Promise<{ chunks: Uint8Array[], bytes: number }> {
    // Which side failed first: a decoder (malformed body) or the transport.
    let first: { origin: 'decode' | 'transport', error: unknown } | undefined
    body.on('error', (error) => { first ??= { origin: 'transport', error } })
    const max = this.#maxResponseBytes
    let decoders: Transform[]
    // An identity body's announced length: its excess is refused unread; else it sizes the first run.
    const declared = Number(firstHeader(headers['content-length']))
    try {
      decoders = decodersFor(headers['content-encoding'])
      if (decoders.length === 0 && declared > max) {
        throw new ServiceError('RESPONSE_TOO_LARGE', { data: { ...where, limit: max } })
      }
    } catch (err) {
      body.destroy()
      throw err
    }
    for (const d of decoders) d.on('error', (error) => { first ??= { origin: 'decode', error } })
    const source: Readable = decoders.length === 0 ? body : (decoders[decoders.length - 1] as Transform)
    if (decoders.length > 0) pipeline([body, ...decoders], () => {})

    // The exchange cap (and the caller's abort) must end a read even while
    // `onChunk` is still waiting, e.g. paused by the memory gate (SPEC.md 8).
    let onAbort: (() => void) | undefined
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => { reject(signal.reason) }
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    })
    aborted.catch(() => {})

    const runs = new ChunkRuns(decoders.length === 0 ? declared : undefined)
    let bytes = 0
    try {
      for await (const chunk of source as AsyncIterable<Uint8Array>) {
        if (bytes + chunk.byteLength > max) {
          throw new ServiceError('RESPONSE_TOO_LARGE', { data: { ...where, limit: max } })
        }
        bytes += chunk.byteLength
        runs.push(chunk)
        if (onChunk !== undefined) await Promise.race([onChunk(chunk), aborted])
      }
    } catch (err) {
      body.destroy()
      for (const d of decoders) d.destroy()
      if (err instanceof ServiceError) throw err
      if (first?.origin === 'decode') {
        throw new ServiceError('UPSTREAM_DECODE', { cause: first.error, data: { ...where, reason: 'malformed compressed body' } })
      }
      throw first?.error ?? err
    } finally {
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
    }
    return { chunks: runs.finish(), bytes }
  }

  /**
   * Opens an artifact on this upstream for the relay (SPEC.md 4.4). `url` is
   * the private conventional location or the public authoritative one; on
   * the public side it must also pass the tarball-host policy
   * (TARBALL_HOST_REFUSED), checked here so no caller can skip it. Any HTTP status
   * comes back as it is, a 3xx included (never followed); a request that got
   * no answer throws UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT or
   * EGRESS_REFUSED. When the caller's signal aborts, its reason is thrown.
   */
  async openArtifact(url: URL, options: OpenArtifactOptions): Promise<ArtifactResponse> {
    const abort = options.abort
    const upstream = authorityOf(url)
    this.#guard.checkUrl(url)
    if (!this.#trusted) checkTarballAuthority(url, this.#base, this.#respectTarballHost)
    const extra = conditionalHeaders({ 'accept-encoding': 'identity' }, options.conditional === undefined
      ? undefined
      : { etag: options.conditional.ifNoneMatch, lastModified: options.conditional.ifModifiedSince })
    // The client's forwarded credential wins (SPEC.md 5.2); else the minted one, asked for only when it will be sent.
    const bearer = options.bearer ?? (this.#credential === undefined ? undefined : await this.#credential.token(abort?.signal))
    try {
      return await this.#artifacts.request(url, {
        method: options.method,
        headers: this.#headers(extra, bearer),
        ...(abort === undefined ? {} : { abort }),
      }, upstream)
    } catch (err) {
      if (abort?.aborted === true) throw abort.reason
      throw transportFailure(err, upstream).error
    }
  }

  /** Waits for in-flight requests, then closes every socket (STYLE.md rule 11). */
  async close(): Promise<void> {
    await Promise.all([this.#agent.close(), this.#artifacts.close()])
  }

  /** Aborts in-flight requests and closes every socket at once (second signal). */
  async destroy(): Promise<void> {
    this.#artifacts.destroy()
    await this.#agent.destroy()
  }
}
