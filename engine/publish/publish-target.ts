/**
 * The HTTP client of a publication target (SPEC.md 1.4, 4.3): one PUT of
 * the checked publish document to `{target}/{package}`, keyed on the
 * route's name (SPEC.md 2.5), with the target's own credential
 * (`mounts.<m>.publish.token`) and nothing of the client's. The target is
 * operator configuration, trusted like the private upstream: no egress
 * guard, but no redirect is followed (undici follows none without its
 * redirect interceptor) and the credential goes to the target's origin only.
 *
 * The target's answer is read whole, bounded (a registry answers a publish
 * with a small JSON document), and relayed to the client.
 */
import { Agent } from 'undici'
import { ServiceError } from '../errors.js'
import { encodePackageName } from '../npm/names.js'
import type { BearerToken } from '../secret.js'
import type { ForwardProxy } from '../upstream/forward-proxy.js'
import { trustedTargetConnector } from '../upstream/proxied-connector.js'

/** A publish answer is a small JSON document; more is not relayed. */
export const MAX_TARGET_ANSWER_BYTES = 1024 * 1024

export interface PublishTargetOptions {
  readonly url: string
  readonly token: BearerToken | undefined
  /** A minted credential (engine/upstream/credentials/) used in place of `token`. */
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> }
  /** This proxy's `Via` pseudonym, so a target that is the proxy itself is recognised. */
  readonly proxyId: string
  /** A target stores the tarball before it answers: headers may take a while. */
  readonly headersTimeoutMs?: number
  readonly bodyTimeoutMs?: number
  /** The forward proxy the target is reached through (docs/security.md#forward-proxy); direct when unset. */
  readonly forwardProxy?: ForwardProxy | undefined
}

export interface TargetAnswer {
  readonly status: number
  readonly contentType: string | undefined
  readonly body: Uint8Array
}

export class PublishTarget {
  readonly #base: URL
  readonly #token: BearerToken | undefined
  readonly #credential: PublishTargetOptions['credential']
  readonly #via: string
  readonly #agent: Agent

  constructor(options: PublishTargetOptions) {
    const url = new URL(options.url)
    this.#base = new URL(url.href.endsWith('/') ? url.href : `${url.href}/`)
    this.#token = options.token
    this.#credential = options.credential
    this.#via = `1.1 ${options.proxyId}`
    this.#agent = new Agent({
      headersTimeout: options.headersTimeoutMs ?? 120_000,
      bodyTimeout: options.bodyTimeoutMs ?? 30_000,
      ...trustedTargetConnector(options.forwardProxy),
    })
  }

  /** `{target}/{package}`, a scoped name written `@scope%2fname` as npm writes it. */
  documentUrl(name: string): URL {
    return new URL(`${this.#base.href}${encodePackageName(name)}`)
  }

  /** PUTs `body` as the publish document of `name`; any HTTP answer is returned, no answer is PUBLISH_TARGET_UNAVAILABLE. */
  async publish(name: string, body: Uint8Array, signal: AbortSignal): Promise<TargetAnswer> {
    const url = this.documentUrl(name)
    const headers: Record<string, string> = {
      via: this.#via,
      'content-type': 'application/json',
      accept: 'application/json',
    }
    // A credential refusal (503 with Retry-After) is the publish's answer; nothing is sent.
    const token = this.#credential === undefined ? this.#token : await this.#credential.token(signal)
    if (token !== undefined) headers.authorization = `Bearer ${token.reveal()}`
    try {
      const response = await this.#agent.request({ origin: url.origin, path: url.pathname, method: 'PUT', headers, body, signal })
      const chunks: Buffer[] = []
      let bytes = 0
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        bytes += chunk.byteLength
        if (bytes > MAX_TARGET_ANSWER_BYTES) {
          response.body.destroy()
          throw new ServiceError('PUBLISH_TARGET_UNAVAILABLE', { message: 'the publication target answered with an oversized body', data: { status: response.statusCode } })
        }
        chunks.push(chunk)
      }
      const type = response.headers['content-type']
      return { status: response.statusCode, contentType: Array.isArray(type) ? type[0] : type, body: Buffer.concat(chunks) }
    } catch (error) {
      if (signal.aborted) throw signal.reason
      if (error instanceof ServiceError) throw error
      throw new ServiceError('PUBLISH_TARGET_UNAVAILABLE', { cause: error, data: { target: url.host } })
    }
  }

  close(): Promise<void> {
    return this.#agent.close()
  }
}
