/**
 * A Python index that takes uploads, on 127.0.0.1, for the `py` mirror
 * tests: Debian has twine but no pypiserver or devpi, so this is the
 * smallest real peer of the legacy upload API as `twine upload` speaks it
 * (test/pypi/upload-index-twine.test.ts proves it with the real twine CLI).
 *
 * - `POST /` multipart/form-data with `:action=file_upload`,
 *   `protocol_version=1`, `name`, `version`, `filetype` (`bdist_wheel` or
 *   `sdist`), `pyversion`, `metadata_version`, `sha256_digest`, optional
 *   `md5_digest`, and the file as `content`. HTTP Basic
 *   `__token__:<token>` when a token is set (401 without, 403 wrong).
 *   A digest that does not match the bytes is refused 400, as warehouse
 *   refuses it; a file name it already holds 409 `File already exists`, as
 *   pypiserver answers (and twine's `--skip-existing` understands).
 * - A body that ends before the closing delimiter is no upload: nothing is
 *   stored, and the attempt is counted in `incomplete` (a connection cut
 *   mid-body in `aborted`), so a test can tell that a refused mirror job
 *   reached the target and was never completed.
 * - `GET /simple/{project}/`: PEP 503 HTML of what it holds, each anchor
 *   with its `#sha256=`; 404 for a project it has none of.
 * - `GET /packages/{filename}`: the stored bytes.
 *
 * The whole body is read into memory: this is a test peer for small files.
 */
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface StoredUpload {
  readonly project: string
  readonly filename: string
  readonly bytes: Buffer
  readonly sha256: string
  /** Every non-file field, in order, repeated names kept. */
  readonly fields: readonly [string, string][]
}

export interface UploadIndex {
  /** `http://127.0.0.1:PORT/`: twine's `--repository-url` and the mirror `target`. */
  readonly url: string
  /** `{url}simple/` */
  readonly simpleUrl: string
  readonly files: ReadonlyMap<string, StoredUpload>
  /** Upload attempts by outcome status, in order. */
  readonly attempts: readonly { status: number, filename: string | undefined }[]
  /** Bodies that ended without the closing delimiter. */
  readonly incomplete: number
  /** Uploads whose connection was cut before the body ended. */
  readonly aborted: number
  /** Holds `bytes` as `filename` as if uploaded earlier (a collision test's other file). */
  preload(project: string, filename: string, bytes: Buffer): void
  stop(): Promise<void>
}

interface Teardown { teardown(fn: () => unknown): void }

export const FILE_EXISTS = 'File already exists'

function normalize(name: string): string {
  return name.replace(/[-_.]+/g, '-').toLowerCase()
}

interface Part { readonly name: string, readonly filename: string | undefined, readonly body: Buffer }

/** RFC 7578 parts, or undefined when the body is not a complete multipart body (no closing delimiter). */
export function parseMultipart(body: Buffer, boundary: string): Part[] | undefined {
  const delimiter = Buffer.from(`--${boundary}`)
  const parts: Part[] = []
  let at = body.indexOf(delimiter)
  if (at !== 0) return undefined
  for (;;) {
    const afterDelimiter = at + delimiter.byteLength
    if (body.subarray(afterDelimiter, afterDelimiter + 2).toString('latin1') === '--') return parts
    const headerStart = afterDelimiter + 2
    const headerEnd = body.indexOf('\r\n\r\n', headerStart)
    if (headerEnd < 0) return undefined
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4)
    if (next < 0) return undefined
    const headers = body.subarray(headerStart, headerEnd).toString('utf8')
    const disposition = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(headers)?.[1] ?? ''
    const name = /\bname="([^"]*)"/.exec(disposition)?.[1]
    const filename = /\bfilename="([^"]*)"/.exec(disposition)?.[1]
    if (name === undefined) return undefined
    parts.push({ name, filename, body: body.subarray(headerEnd + 4, next) })
    at = next + 2
  }
}

function send(res: ServerResponse, status: number, text: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

export async function startUploadIndex(t: Teardown, options: { token?: string } = {}): Promise<UploadIndex> {
  const files = new Map<string, StoredUpload>()
  const attempts: { status: number, filename: string | undefined }[] = []
  let incomplete = 0
  let aborted = 0

  const upload = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const answer = (status: number, text: string, filename?: string): void => {
      attempts.push({ status, filename })
      send(res, status, text)
    }
    if (options.token !== undefined) {
      const auth = req.headers['authorization']
      if (auth === undefined) {
        res.setHeader('www-authenticate', 'Basic realm="upload"')
        return answer(401, 'authentication required')
      }
      if (auth !== `Basic ${Buffer.from(`__token__:${options.token}`).toString('base64')}`) return answer(403, 'invalid credentials')
    }
    const boundary = /boundary=("?)([^";]+)\1/.exec(req.headers['content-type'] ?? '')?.[2]
    if (boundary === undefined) return answer(400, 'not multipart/form-data')
    const parts = parseMultipart(body, boundary)
    if (parts === undefined) {
      incomplete++
      return answer(400, 'incomplete multipart body')
    }
    const fields: [string, string][] = parts.filter((p) => p.filename === undefined).map((p) => [p.name, p.body.toString('utf8')])
    const field = (name: string): string | undefined => fields.find(([n]) => n === name)?.[1]
    const content = parts.find((p) => p.name === 'content' && p.filename !== undefined)
    if (field(':action') !== 'file_upload' || field('protocol_version') !== '1') return answer(400, 'unknown action')
    const name = field('name')
    const version = field('version')
    if (content?.filename === undefined || name === undefined || version === undefined) return answer(400, 'name, version and content are required')
    const filename = content.filename
    if (!['bdist_wheel', 'sdist'].includes(field('filetype') ?? '')) return answer(400, 'invalid filetype', filename)
    if (field('metadata_version') === undefined) return answer(400, 'metadata_version is required', filename)
    if (!normalize(filename).startsWith(`${normalize(name)}-`)) return answer(400, 'the file name does not start with the project name', filename)
    const sha256 = createHash('sha256').update(content.body).digest('hex')
    const md5 = createHash('md5').update(content.body).digest('hex')
    if (field('sha256_digest') !== undefined && field('sha256_digest') !== sha256) return answer(400, 'The digest supplied does not match a digest calculated from the uploaded file.', filename)
    if (field('md5_digest') !== undefined && field('md5_digest') !== md5) return answer(400, 'The digest supplied does not match a digest calculated from the uploaded file.', filename)
    if (files.has(filename)) return answer(409, FILE_EXISTS, filename)
    files.set(filename, { project: normalize(name), filename, bytes: Buffer.from(content.body), sha256, fields })
    answer(200, 'OK', filename)
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (req.method === 'POST' && path === '/') {
      const chunks: Buffer[] = []
      let ended = false
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => { ended = true; upload(req, res, Buffer.concat(chunks)) })
      req.on('close', () => { if (!ended) aborted++ })
      return
    }
    const simple = /^\/simple\/([^/]+)\/$/.exec(path)
    if (req.method === 'GET' && simple !== null) {
      const project = normalize(decodeURIComponent(simple[1] ?? ''))
      const held = [...files.values()].filter((f) => f.project === project)
      if (held.length === 0) return send(res, 404, 'no such project')
      const anchors = held.map((f) => `<a href="/packages/${encodeURIComponent(f.filename)}#sha256=${f.sha256}">${f.filename}</a><br/>`).join('\n')
      return send(res, 200, `<!DOCTYPE html>\n<html><head><title>Links for ${project}</title></head><body><h1>Links for ${project}</h1>\n${anchors}\n</body></html>\n`, 'text/html; charset=utf-8')
    }
    const pkg = /^\/packages\/([^/]+)$/.exec(path)
    if (req.method === 'GET' && pkg !== null) {
      const file = files.get(decodeURIComponent(pkg[1] ?? ''))
      if (file === undefined) return send(res, 404, 'not found')
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.bytes.byteLength })
      return res.end(file.bytes)
    }
    send(res, 404, 'not found')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  let stopped = false
  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.teardown(stop)
  const url = `http://127.0.0.1:${port}/`
  return {
    url,
    simpleUrl: `${url}simple/`,
    files,
    attempts,
    get incomplete() { return incomplete },
    get aborted() { return aborted },
    preload: (project, filename, bytes) => {
      files.set(filename, { project: normalize(project), filename, bytes, sha256: createHash('sha256').update(bytes).digest('hex'), fields: [] })
    },
    stop,
  }
}
