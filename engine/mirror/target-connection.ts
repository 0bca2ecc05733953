/**
 * What the js mirror target (mirror-target.ts) and the py upload target
 * (py-upload-target.ts) share: the base URL check, one undici Agent (or the
 * test's dispatcher), the credential as each protocol writes it, and the
 * two exchanges both make, a page read (the idempotency lookup) and a
 * streamed body send (the publish or the upload).
 *
 * The target is operator-configured and trusted, like the private upstream:
 * no egress guard, and no redirect followed (undici's request follows none).
 * Bodies are always consumed or destroyed; none is logged.
 */
import { performance } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import { Agent, type Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import type { BearerToken } from '../secret.js'
import { refusalCause } from './refusal-cause.js'
import type { ForwardProxy } from '../upstream/forward-proxy.js'
import { trustedTargetConnector } from '../upstream/proxied-connector.js'

export interface TargetConnectionOptions {
  readonly token?: BearerToken | undefined
  /** A minted credential sent instead of `token`, asked for on each request (engine/upstream/credentials/). */
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> } | undefined
  /** Largest document or page a lookup reads (the metadata ingest ceiling). */
  readonly maxDocumentBytes: number
  /** Milliseconds to wait for response headers (a publish waits for the target to store the artifact). */
  readonly headersTimeoutMs?: number
  /** Milliseconds of silence allowed between body chunks. */
  readonly bodyTimeoutMs?: number
  /** Tests pass their own. */
  readonly dispatcher?: Dispatcher
  /** Each lookup the target answered (any status): milliseconds to its headers (the mirror's pace, target-pace.ts). */
  readonly onAnswer?: (latencyMs: number) => void
  /** The forward proxy the target is reached through (docs/security.md#forward-proxy); direct when unset. */
  readonly forwardProxy?: ForwardProxy | undefined
}

/** A sent body's answer: its status and, for a refusal, the target's own reason (refusal-cause.ts). */
export interface TargetAnswer {
  readonly status: number
  readonly cause?: string | undefined
}

/** Charges one chunk of a document read before the next is read (the embedded worker's memory gate); undefined when it fits at once. */
export type ChunkCharge = (chunk: Uint8Array) => Promise<void> | undefined

/** Statuses that say "try again": the target is overloaded or briefly failing. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

/** A target URL as a base (ending in `/`); `what` names the setting in the refusal. */
export function targetBase(raw: string, what: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ServiceError('CONFIG_INVALID', { message: `the ${what} URL does not parse` })
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new ServiceError('CONFIG_INVALID', { message: `the ${what} URL must carry no userinfo, query or fragment; use mirror.token` })
  }
  return new URL(url.href.endsWith('/') ? url.href : `${url.href}/`)
}

export class TargetConnection {
  readonly maxDocumentBytes: number
  readonly #authority: string
  readonly #token: BearerToken | undefined
  readonly #credential: TargetConnectionOptions['credential']
  /** How the protocol writes the credential: `Bearer …` for npm, Basic `__token__:…` for twine. */
  readonly #authorization: (token: BearerToken) => string
  readonly #dispatcher: Dispatcher
  readonly #owned: boolean
  readonly #onAnswer: ((latencyMs: number) => void) | undefined
  /** The credential last sent, so a refusal's reason that echoes it can be redacted. */
  #lastSecret = ''

  constructor(options: TargetConnectionOptions, authority: string, authorization: (token: BearerToken) => string) {
    if (!Number.isSafeInteger(options.maxDocumentBytes) || options.maxDocumentBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxDocumentBytes must be a positive integer' })
    }
    this.maxDocumentBytes = options.maxDocumentBytes
    this.#authority = authority
    this.#token = options.token
    this.#credential = options.credential
    this.#authorization = authorization
    this.#owned = options.dispatcher === undefined
    this.#onAnswer = options.onAnswer
    this.#dispatcher = options.dispatcher ?? new Agent({
      headersTimeout: options.headersTimeoutMs ?? 300_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
      connections: 8,
      ...trustedTargetConnector(options.forwardProxy),
    })
  }

  async #headers(extra: Record<string, string>, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    // A credential that cannot be had (breaker open, mint failed) is a target outage: the job is held until it answers (target-pace.ts).
    const token = this.#credential === undefined ? this.#token : await this.#credential.token(signal).catch((cause: unknown) => {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { target: this.#authority, reason: 'credential' } })
    })
    if (token === undefined) return extra
    this.#lastSecret = token.reveal()
    return { ...extra, authorization: this.#authorization(token) }
  }

  /** What a refusal's body says, its credential redacted. */
  #cause(body: Dispatcher.ResponseData['body']): Promise<string | undefined> {
    return refusalCause(body, [this.#lastSecret, this.#token?.reveal() ?? ''])
  }

  /**
   * GETs a page the target lists its holdings on: the 200 answer (its body
   * for the caller to read), or undefined on 404. Throws UPSTREAM_UNAVAILABLE
   * for a transient failure or no answer, UPSTREAM_REFUSED for any other
   * status (with the target's reason as `data.cause`).
   */
  async page(url: URL, accept: string, where: Readonly<Record<string, unknown>>, signal?: AbortSignal): Promise<Dispatcher.ResponseData | undefined> {
    let response: Dispatcher.ResponseData
    const started = performance.now()
    try {
      response = await this.#dispatcher.request({
        origin: url.origin, path: url.pathname, method: 'GET',
        headers: await this.#headers({ accept, 'accept-encoding': 'identity' }, signal),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason
      if (cause instanceof ServiceError) throw cause
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'no answer' } })
    }
    const status = response.statusCode
    this.#onAnswer?.(performance.now() - started)
    if (status === 200) return response
    if (status === 404 || isTransientStatus(status)) {
      await response.body.dump()
      if (status === 404) return undefined
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { data: { ...where, status } })
    }
    const cause = await this.#cause(response.body)
    throw new ServiceError('UPSTREAM_REFUSED', { data: { ...where, status, ...(cause === undefined ? {} : { cause }) } })
  }

  /**
   * Sends `body`, pulled only as the socket drains (so a slow target slows
   * the upstream read). A body that throws aborts the request, and its error
   * is what this throws, also when the target answered before the body ended
   * (e.g. a 401 read from the headers). Any HTTP status comes back, a
   * refusal's with the target's reason; a request that got no answer throws
   * UPSTREAM_UNAVAILABLE.
   */
  async send(method: 'PUT' | 'POST', url: URL, headers: Record<string, string>, body: AsyncIterable<Uint8Array | string>, where: Readonly<Record<string, unknown>>, signal?: AbortSignal): Promise<TargetAnswer> {
    let bodyError: unknown
    let bodyFailed = false
    async function* guarded(): AsyncGenerator<Uint8Array> {
      try {
        for await (const part of body) yield typeof part === 'string' ? Buffer.from(part, 'utf8') : part
      } catch (error) {
        bodyFailed = true
        bodyError = error
        throw error
      }
    }
    let response: Dispatcher.ResponseData
    try {
      response = await this.#dispatcher.request({
        origin: url.origin, path: url.pathname, method,
        headers: await this.#headers(headers, signal),
        body: Readable.from(guarded(), { objectMode: false }),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (bodyFailed) throw bodyError
      if (signal?.aborted === true) throw signal.reason
      if (cause instanceof ServiceError) throw cause
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'no answer' } })
    }
    const status = response.statusCode
    const refused = status >= 400 && !isTransientStatus(status)
    const cause = refused ? await this.#cause(response.body) : await response.body.dump().then(() => undefined)
    if (bodyFailed) throw bodyError
    return { status, ...(cause === undefined ? {} : { cause }) }
  }

  async close(): Promise<void> {
    if (this.#owned) await this.#dispatcher.close()
  }
}
