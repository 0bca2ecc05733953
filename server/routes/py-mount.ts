/**
 * The `/py` mount on the front door (issue 16): a Simple Repository API
 * index for pip and uv.
 *
 *   GET /py/simple/{project}/           the merged, gated project page (PEP 503 HTML or PEP 691 JSON by Accept)
 *   GET /py/files/{project}/{token}/{file}            a distribution, through the two legs
 *   GET /py/files/{project}/{token}/{file}.metadata   its PEP 658 core metadata
 *   GET /py/provenance/{project}/{token}/{file}       its PEP 740 provenance
 *
 * Decisions where the issue leaves a choice:
 * - `GET /py/simple/` is not offered (listing every project is the
 *   upstream's business): a 404 envelope that says so.
 * - A project name that is not PEP 503 normal (`Foo_Bar`), or a page path
 *   without its trailing slash, is a 301 to `/py/simple/{normal}/` (the
 *   query kept): pip and uv follow it, and one name has one cache entry and
 *   one ETag. A name that is not a valid project name is a 404.
 * - `?format=` (PEP 691's optional query parameter) is honoured.
 * - Methods other than GET and HEAD: 405 (this build relays no `py`
 *   uploads).
 * HEAD is GET without the body, as on `/js`.
 */
import { ServiceError, toServiceError } from '../../engine/errors.js'
import type { Logger } from '../../engine/log/logger.js'
import type { AdmissionGate } from '../../engine/memory/gate.js'
import { negotiatePageFormat, VARY } from '../../engine/pypi/content-negotiation.js'
import { parseFileRequestPath, type FileRequest } from '../../engine/pypi/file-url.js'
import { isValidProjectName, normalizeProjectName } from '../../engine/pypi/project-name.js'
import type { AssembledResponse } from '../../engine/cache/metadata-cache.js'
import type { PageRequest } from '../../engine/pypi/project-service.js'
import type { EdgeAuth } from '../http/edge-auth.js'
import { EDGE_CHALLENGE } from '../http/edge-auth.js'
import type { Exchange } from '../http/exchange.js'
import type { FrontDoor } from '../http/front-door.js'
import type { RequestOrigin } from '../http/request-origin.js'
import { respondAfterBody } from '../http/request-body.js'
import { carriesHopMarker } from './hop-marker.js'
import { requestBaseUrl, serveListing } from './packument-route.js'

export const PY_PREFIX = '/py'
export const SIMPLE_PREFIX = '/py/simple/'
export const PROJECT_PAGE_FAILED = 'project page request failed'

export type PyRoute =
  | { readonly kind: 'index' }
  | { readonly kind: 'page'; readonly project: string }
  | { readonly kind: 'redirect'; readonly project: string }
  | { readonly kind: 'file'; readonly request: FileRequest }
  | { readonly kind: 'not_found' }

const NOT_FOUND: PyRoute = Object.freeze({ kind: 'not_found' })

/** Which route of the `/py` mount a path names (pure, tested as a table). */
export function matchPyRoute(rawPath: string): PyRoute {
  if (rawPath === '/py/simple' || rawPath === SIMPLE_PREFIX) return { kind: 'index' }
  if (rawPath.startsWith(SIMPLE_PREFIX)) {
    const rest = rawPath.slice(SIMPLE_PREFIX.length)
    const slash = rest.indexOf('/')
    if (slash >= 0 && slash !== rest.length - 1) return NOT_FOUND
    let name: string
    try {
      name = decodeURIComponent(slash < 0 ? rest : rest.slice(0, -1))
    } catch {
      return NOT_FOUND
    }
    if (!isValidProjectName(name)) return NOT_FOUND
    const normal = normalizeProjectName(name)
    return normal === name && slash >= 0 ? { kind: 'page', project: normal } : { kind: 'redirect', project: normal }
  }
  const request = parseFileRequestPath(rawPath)
  return request === undefined ? NOT_FOUND : { kind: 'file', request }
}

/** `http.route` per route kind (telemetry): templates, never the raw path. */
const PY_ROUTE_TEMPLATES: Readonly<Record<PyRoute['kind'], string>> = {
  index: '/py/simple/',
  page: '/py/simple/{project}/',
  redirect: '/py/simple/{project}',
  file: '/py/files/{project}/{token}/{filename}',
  not_found: '/py/*',
}

const errors = {
  notFound: new ServiceError('NOT_FOUND'),
  index: new ServiceError('NOT_FOUND', { message: 'this index lists no projects; ask for /py/simple/{project}/' }),
  noUpload: new ServiceError('PUBLISH_NOT_CONFIGURED', { message: 'this index takes no uploads; upload to your private index directly' }),
  notAcceptable: new ServiceError('NOT_ACCEPTABLE', { message: 'the project page is offered as application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html or text/html' }),
  loop: new ServiceError('UPSTREAM_LOOP'),
}

export type FileHandler = (exchange: Exchange, project: string, filename: string) => Promise<void>

export interface PyMountOptions {
  readonly hopMarker: string
  readonly edge?: EdgeAuth
  readonly refusedBodyBytes: number
  readonly service: { assemble(request: PageRequest): Promise<AssembledResponse> }
  readonly gate: AdmissionGate
  readonly logger: Logger
  /** The base URL of the page's file URLs (server/http/request-origin.ts); absent: the configured one. */
  readonly origin?: RequestOrigin
  /** One handler per kind of file URL (the artifact route with the `py` selection). */
  readonly files: Readonly<Record<FileRequest['kind'], FileHandler>>
}

export function mountPy(door: FrontDoor, options: PyMountOptions): void {
  const { hopMarker, edge, files } = options
  const page = createProjectPageHandler(options)
  const handle = (ex: Exchange): void | Promise<void> => {
    const head = ex.method === 'HEAD'
    if (edge !== undefined && !edge.admits(ex.header('authorization'))) {
      respondAfterBody(ex, edge.refusal, { maxBytes: options.refusedBodyBytes, headers: { 'www-authenticate': EDGE_CHALLENGE } })
      return
    }
    const route = matchPyRoute(ex.path)
    ex.routeTemplate = route.kind === 'file' && route.request.kind === 'provenance' ? '/py/provenance/{project}/{token}/{filename}' : PY_ROUTE_TEMPLATES[route.kind]
    if (ex.method !== 'GET' && !head) {
      respondAfterBody(ex, errors.noUpload, { maxBytes: options.refusedBodyBytes })
      return
    }
    if (route.kind !== 'not_found' && route.kind !== 'index' && carriesHopMarker(ex.header('via'), hopMarker)) {
      ex.respondError(errors.loop, { head })
      return
    }
    switch (route.kind) {
      case 'index':
        ex.respondError(errors.index, { head })
        return
      case 'redirect':
        ex.respond(301, { location: `${SIMPLE_PREFIX}${route.project}/${ex.query === '' ? '' : `?${ex.query}`}`, 'cache-control': 'max-age=86400' }, undefined, { head: true })
        return
      case 'page':
        return page(ex, route.project)
      case 'file':
        return files[route.request.kind](ex, route.request.project, route.request.filename)
      case 'not_found':
        ex.respondError(errors.notFound, { head })
    }
  }
  door.route('any', PY_PREFIX, handle)
  door.route('any', `${PY_PREFIX}/*`, handle)
}

function formatQuery(query: string): string | undefined {
  if (query === '') return undefined
  return new URLSearchParams(query).get('format') ?? undefined
}

/**
 * The project page: negotiate the format (406 when nothing offered is
 * acceptable), take the gate's entry step, assemble, and answer with the
 * page's strong ETag (304 on a match), `Vary: Accept` and `no-cache`.
 */
function createProjectPageHandler(options: PyMountOptions): (ex: Exchange, project: string) => Promise<void> {
  const { service, gate, logger } = options
  return async (ex, project) => {
    const head = ex.method === 'HEAD'
    const negotiated = negotiatePageFormat(ex.header('accept'), formatQuery(ex.query))
    if (negotiated === undefined) {
      ex.respondError(errors.notAcceptable, { head })
      return
    }
    let baseUrl: string | undefined
    try {
      baseUrl = requestBaseUrl(options.origin, ex)
    } catch (error) {
      ex.respondError(toServiceError(error), { head })
      return
    }
    await serveListing(ex, gate, {
      assemble: (admission, signal) => service.assemble({ project, format: negotiated.format, baseUrl, admission, signal }),
      headers: (assembled) => ({ etag: assembled.etag, vary: VARY, 'cache-control': 'no-cache' }),
      contentType: negotiated.contentType,
      failed: (failure) => logger.warn(PROJECT_PAGE_FAILED, { project, code: failure.code, status: failure.status }),
    })
  }
}
