/**
 * The mirror target of the `py` mount (`mounts.py.mirror: { target, token |
 * credential, simpleUrl }`): a Python index that takes `twine upload`
 * through the legacy upload API (warehouse's, pypiserver, devpi, Nexus,
 * Artifactory, CodeArtifact). Two exchanges:
 *
 * - `lookup`: the target's own Simple page of the project (PEP 691 JSON or
 *   PEP 503 HTML, read with the mount's readers), for the file and its
 *   sha256: the idempotency check. `simpleUrl` defaults to
 *   `{target}simple/` (pypiserver, Nexus, Artifactory, CodeArtifact); devpi
 *   serves it at `{index}+simple/` and needs the key.
 * - `upload`: `POST {target}` with the multipart body (upload-form.ts),
 *   pulled as the connection drains; a Content-Length when the length is
 *   known, else chunked.
 *
 * Credential: HTTP Basic `__token__:<token>`, what twine sends for an API
 * token. The target is operator-configured and trusted, like the js mirror
 * target: no egress guard, no redirect followed. Bodies are always consumed
 * or destroyed; none is logged.
 */
import { Readable } from 'node:stream'
import { Agent, type Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import { readSimpleHtml } from '../pypi/simple-html-reader.js'
import { readSimpleJson } from '../pypi/simple-json-reader.js'
import { DEFAULT_READ_LIMITS, SIMPLE_HTML_V1, SIMPLE_JSON_V1, TEXT_HTML } from '../pypi/simple-model.js'
import type { BearerToken } from '../secret.js'
import { isTransientStatus } from './mirror-target.js'

/** The user name twine sends with an API token. */
export const TOKEN_USERNAME = '__token__'

const PAGE_ACCEPT = `${SIMPLE_JSON_V1}, ${SIMPLE_HTML_V1};q=0.2, ${TEXT_HTML};q=0.1`

export interface PyUploadTargetOptions {
  /** The upload endpoint (twine's `--repository-url`). No userinfo, query or fragment. */
  readonly url: string
  /** The target's Simple index URL; default `{url}simple/`. */
  readonly simpleUrl?: string | undefined
  readonly token?: BearerToken | undefined
  readonly credential?: { token(signal?: AbortSignal): Promise<BearerToken> } | undefined
  /** Largest Simple page `lookup` reads (the metadata ingest ceiling). */
  readonly maxDocumentBytes: number
  readonly headersTimeoutMs?: number
  readonly bodyTimeoutMs?: number
  /** Tests pass their own. */
  readonly dispatcher?: Dispatcher
}

export type TargetFile =
  | { readonly kind: 'absent' }
  /** The target lists the file; `sha256` is what its page states (undefined when it states none). */
  | { readonly kind: 'present'; readonly sha256: string | undefined }

export interface UploadAnswer {
  readonly status: number
}

function baseOf(raw: string, what: string): URL {
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

export class PyUploadTarget {
  readonly #upload: URL
  readonly #simple: URL
  readonly #token: BearerToken | undefined
  readonly #credential: PyUploadTargetOptions['credential']
  readonly #maxDocumentBytes: number
  readonly #dispatcher: Dispatcher
  readonly #owned: boolean

  constructor(options: PyUploadTargetOptions) {
    this.#upload = baseOf(options.url, 'mirror target')
    this.#simple = options.simpleUrl === undefined ? new URL('simple/', this.#upload) : baseOf(options.simpleUrl, 'mirror simpleUrl')
    if (!Number.isSafeInteger(options.maxDocumentBytes) || options.maxDocumentBytes <= 0) {
      throw new ServiceError('CONFIG_INVALID', { message: 'maxDocumentBytes must be a positive integer' })
    }
    this.#token = options.token
    this.#credential = options.credential
    this.#maxDocumentBytes = options.maxDocumentBytes
    this.#owned = options.dispatcher === undefined
    this.#dispatcher = options.dispatcher ?? new Agent({
      headersTimeout: options.headersTimeoutMs ?? 300_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
      connections: 8,
    })
  }

  get authority(): string {
    return this.#upload.host
  }

  /** `{simpleUrl}{project}/`: where the target lists what it holds of a project. */
  projectPageUrl(project: string): URL {
    return new URL(`${project}/`, this.#simple)
  }

  async #headers(extra: Record<string, string>, signal: AbortSignal | undefined): Promise<Record<string, string>> {
    // A credential refusal (breaker open, mint failed) is a transient target failure: the job is retried.
    const token = this.#credential === undefined ? this.#token : await this.#credential.token(signal).catch((cause: unknown) => {
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { target: this.authority, reason: 'credential' } })
    })
    if (token === undefined) return extra
    return { ...extra, authorization: `Basic ${Buffer.from(`${TOKEN_USERNAME}:${token.reveal()}`, 'utf8').toString('base64')}` }
  }

  /**
   * What the target holds of `filename`. Throws UPSTREAM_UNAVAILABLE for a
   * transient failure, UPSTREAM_REFUSED for any other refusal,
   * RESPONSE_TOO_LARGE past the ingest ceiling.
   */
  async lookup(project: string, filename: string, signal?: AbortSignal): Promise<TargetFile> {
    const url = this.projectPageUrl(project)
    const where = { target: this.authority, package: project }
    let response: Dispatcher.ResponseData
    try {
      response = await this.#dispatcher.request({
        origin: url.origin, path: url.pathname, method: 'GET',
        headers: await this.#headers({ accept: PAGE_ACCEPT, 'accept-encoding': 'identity' }, signal),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason
      if (cause instanceof ServiceError) throw cause
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { ...where, reason: 'no answer' } })
    }
    const status = response.statusCode
    if (status === 404) {
      await response.body.dump()
      return { kind: 'absent' }
    }
    if (status !== 200) {
      await response.body.dump()
      throw new ServiceError(isTransientStatus(status) ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_REFUSED', { data: { ...where, status } })
    }
    const body = await readBounded(response.body, this.#maxDocumentBytes, where)
    const contentType = String(response.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
    const limits = { ...DEFAULT_READ_LIMITS, maxBytes: this.#maxDocumentBytes }
    const read = contentType === 'application/json' || contentType.endsWith('+json')
      ? readSimpleJson(body, project, url.href, limits)
      : readSimpleHtml(body, project, url.href, limits)
    const file = read.project.files.find((f) => f.filename === filename)
    return file === undefined ? { kind: 'absent' } : { kind: 'present', sha256: file.hashes['sha256'] }
  }

  /**
   * POSTs the form. `body` is pulled as the connection drains, so a slow
   * target slows the upstream read. A body that throws aborts the request,
   * and its error is what this throws. Any HTTP status comes back; a request
   * that got no answer throws UPSTREAM_UNAVAILABLE.
   */
  async upload(contentType: string, body: AsyncIterable<Uint8Array>, length: number | undefined, signal?: AbortSignal): Promise<UploadAnswer> {
    let bodyError: unknown
    let bodyFailed = false
    async function* guarded(): AsyncGenerator<Uint8Array> {
      try {
        for await (const part of body) yield part
      } catch (error) {
        bodyFailed = true
        bodyError = error
        throw error
      }
    }
    let response: Dispatcher.ResponseData
    try {
      response = await this.#dispatcher.request({
        origin: this.#upload.origin, path: this.#upload.pathname, method: 'POST',
        headers: await this.#headers({
          'content-type': contentType,
          ...(length === undefined ? {} : { 'content-length': String(length) }),
        }, signal),
        body: Readable.from(guarded(), { objectMode: false }),
        ...(signal === undefined ? {} : { signal }),
      })
    } catch (cause) {
      if (bodyFailed) throw bodyError
      if (signal?.aborted === true) throw signal.reason
      if (cause instanceof ServiceError) throw cause
      throw new ServiceError('UPSTREAM_UNAVAILABLE', { cause, data: { target: this.authority, reason: 'no answer' } })
    }
    await response.body.dump()
    if (bodyFailed) throw bodyError
    return { status: response.statusCode }
  }

  async close(): Promise<void> {
    if (this.#owned) await this.#dispatcher.close()
  }
}

async function readBounded(body: Dispatcher.ResponseData['body'], max: number, where: Record<string, unknown>): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.byteLength
    if (bytes > max) {
      body.destroy()
      throw new ServiceError('RESPONSE_TOO_LARGE', { data: { ...where, limit: max } })
    }
    chunks.push(chunk)
  }
  return new Uint8Array(Buffer.concat(chunks))
}
