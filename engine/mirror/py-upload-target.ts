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
import type { Dispatcher } from 'undici'
import { ServiceError } from '../errors.js'
import { readSimpleHtml } from '../pypi/simple-html-reader.js'
import { readSimpleJson } from '../pypi/simple-json-reader.js'
import { DEFAULT_READ_LIMITS, SIMPLE_HTML_V1, SIMPLE_JSON_V1, TEXT_HTML } from '../pypi/simple-model.js'
import { TargetConnection, targetBase, type TargetAnswer, type TargetConnectionOptions } from './target-connection.js'

/** The user name twine sends with an API token. */
export const TOKEN_USERNAME = '__token__'

const PAGE_ACCEPT = `${SIMPLE_JSON_V1}, ${SIMPLE_HTML_V1};q=0.2, ${TEXT_HTML};q=0.1`

export interface PyUploadTargetOptions extends TargetConnectionOptions {
  /** The upload endpoint (twine's `--repository-url`). No userinfo, query or fragment. */
  readonly url: string
  /** The target's Simple index URL; default `{url}simple/`. */
  readonly simpleUrl?: string | undefined
}

export type TargetFile =
  | { readonly kind: 'absent' }
  /** The target lists the file; `sha256` is what its page states (undefined when it states none). */
  | { readonly kind: 'present'; readonly sha256: string | undefined }

/** The status, and for a refusal the target's own reason. */
export type UploadAnswer = TargetAnswer

export class PyUploadTarget {
  readonly #upload: URL
  readonly #simple: URL
  readonly #connection: TargetConnection

  constructor(options: PyUploadTargetOptions) {
    this.#upload = targetBase(options.url, 'mirror target')
    this.#simple = options.simpleUrl === undefined ? new URL('simple/', this.#upload) : targetBase(options.simpleUrl, 'mirror simpleUrl')
    // What twine sends for an API token: HTTP Basic `__token__:<token>`.
    this.#connection = new TargetConnection(options, this.#upload.host, (token) => `Basic ${Buffer.from(`${TOKEN_USERNAME}:${token.reveal()}`, 'utf8').toString('base64')}`)
  }

  get authority(): string {
    return this.#upload.host
  }

  /** `{simpleUrl}{project}/`: where the target lists what it holds of a project. */
  projectPageUrl(project: string): URL {
    return new URL(`${project}/`, this.#simple)
  }

  /**
   * What the target holds of `filename`. Throws UPSTREAM_UNAVAILABLE for a
   * transient failure, UPSTREAM_REFUSED for any other refusal,
   * RESPONSE_TOO_LARGE past the ingest ceiling.
   */
  async lookup(project: string, filename: string, signal?: AbortSignal): Promise<TargetFile> {
    const url = this.projectPageUrl(project)
    const where = { target: this.authority, package: project }
    const response = await this.#connection.page(url, PAGE_ACCEPT, where, signal)
    if (response === undefined) return { kind: 'absent' }
    const body = await readBounded(response.body, this.#connection.maxDocumentBytes, where)
    const contentType = String(response.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
    const limits = { ...DEFAULT_READ_LIMITS, maxBytes: this.#connection.maxDocumentBytes }
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
    return this.#connection.send('POST', this.#upload, {
      'content-type': contentType,
      ...(length === undefined ? {} : { 'content-length': String(length) }),
    }, body, { target: this.authority }, signal)
  }

  async close(): Promise<void> {
    await this.#connection.close()
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
