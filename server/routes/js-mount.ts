/**
 * The `/js` mount on the front door (SPEC.md 4.1): the fixed routes answer
 * here; the package routes call the handlers the proxy role wires in.
 * A request that carries this proxy's own hop marker has come back around a
 * loop (an upstream that is the proxy itself) and gets a 502, never another
 * upstream request (DESIGN.md "Beware the loop").
 */
import { ServiceError } from '../../engine/errors.js'
import type { Exchange } from '../http/exchange.js'
import { EDGE_CHALLENGE, type EdgeAuth } from '../http/edge-auth.js'
import type { FrontDoor } from '../http/front-door.js'
import { respondAfterBody } from '../http/request-body.js'
import { DEFAULT_PUBLISH_MAX_BODY_BYTES } from '../../engine/config/schema.js'
import { carriesHopMarker } from './hop-marker.js'
import { matchAttestationSpec, matchJsRoute, type JsRoute } from './js-routes.js'
import { respondLegacyAudit } from './audit-route.js'

export interface JsMountHandlers {
  packument?(exchange: Exchange, pkg: string): void | Promise<void>
  artifact?(exchange: Exchange, pkg: string, filename: string): void | Promise<void>
  /** Absent when no publication target is configured: 405 (SPEC.md 4.3). */
  publish?(exchange: Exchange, pkg: string): void | Promise<void>
  /** `GET /js/-/why/{package}/{version}`. */
  why?(exchange: Exchange, pkg: string, version: string): void | Promise<void>
  /** `POST /js/-/npm/v1/security/advisories/bulk` (server/routes/audit-route.ts). */
  auditBulk?(exchange: Exchange): void | Promise<void>
  /** `GET /js/-/npm/v1/keys` (server/routes/signature-routes.ts). */
  signingKeys?(exchange: Exchange): void | Promise<void>
  /** `GET /js/-/npm/v1/attestations/{package}@{version}`, also answered at `/-/npm/v1/attestations/...`. */
  attestations?(exchange: Exchange, pkg: string, version: string): void | Promise<void>
}

export interface JsMountOptions {
  /** This deployment's `Via` pseudonym; outgoing upstream requests carry it. */
  readonly hopMarker: string
  readonly handlers: JsMountHandlers
  /** With edge tokens configured: every request under the mount needs one (SPEC.md 5.1); undefined: no check. */
  readonly edge?: EdgeAuth
  /** The most body a refused write is read and dropped up to before its answer (request-body.ts); default the publish bound's default. */
  readonly refusedBodyBytes?: number
}

const errors = {
  notFound: new ServiceError('NOT_FOUND'),
  search: new ServiceError('UNSUPPORTED', { message: 'search is unsupported' }),
  distTags: new ServiceError('UNSUPPORTED', { message: 'dist-tags are owned by the publication target; this proxy has no mutable named pointer' }),
  noPublish: new ServiceError('PUBLISH_NOT_CONFIGURED'),
  metadataChange: new ServiceError('PUBLISH_METADATA_CHANGE'),
  loop: new ServiceError('UPSTREAM_LOOP'),
}

/** `http.route` per route kind (telemetry): the SPEC.md 4.1 templates, never the raw path. */
const JS_ROUTE_TEMPLATES: Readonly<Record<JsRoute['kind'], string>> = {
  ping: '/js/-/ping',
  unsupported: '/js/-/*',
  packument: '/js/{package}',
  publish: '/js/{package}',
  metadata_change: '/js/{package}/-rev/{rev}',
  artifact: '/js/{package}/-/{filename}',
  why: '/js/-/why/{package}/{version}',
  audit_bulk: '/js/-/npm/v1/security/advisories/bulk',
  audit_legacy: '/js/-/npm/v1/security/audits',
  signing_keys: '/js/-/npm/v1/keys',
  attestations: '/js/-/npm/v1/attestations/{spec}',
  not_found: '/js/*',
}

export function mountJs(door: FrontDoor, options: JsMountOptions): void {
  const { handlers, hopMarker, edge } = options
  const refusedBodyBytes = options.refusedBodyBytes ?? DEFAULT_PUBLISH_MAX_BODY_BYTES
  const handle = (ex: Exchange): void | Promise<void> => {
    const head = ex.method === 'HEAD'
    // Before anything else, the ping and unknown paths included: without a token nothing under the mount answers.
    if (edge !== undefined && !edge.admits(ex.header('authorization'))) {
      respondAfterBody(ex, edge.refusal, { maxBytes: refusedBodyBytes, headers: { 'www-authenticate': EDGE_CHALLENGE } })
      return
    }
    const route = matchJsRoute(ex.method, ex.path)
    ex.routeTemplate = JS_ROUTE_TEMPLATES[route.kind]
    if (route.kind !== 'ping' && route.kind !== 'not_found' && carriesHopMarker(ex.header('via'), hopMarker)) {
      ex.respondError(errors.loop, { head })
      return
    }
    switch (route.kind) {
      case 'ping':
        ex.respondJson(200, {})
        return
      case 'unsupported':
        ex.respondError(route.what === 'search' ? errors.search : errors.distTags)
        return
      case 'packument':
        if (handlers.packument !== undefined) return handlers.packument(ex, route.package)
        break
      case 'artifact':
        if (handlers.artifact !== undefined) return handlers.artifact(ex, route.package, route.filename)
        break
      case 'why':
        if (handlers.why !== undefined) return handlers.why(ex, route.package, route.version)
        break
      case 'audit_bulk':
        if (handlers.auditBulk !== undefined) return handlers.auditBulk(ex)
        respondAfterBody(ex, errors.notFound, { maxBytes: refusedBodyBytes })
        return
      case 'audit_legacy':
        respondLegacyAudit(ex)
        return
      case 'signing_keys':
        if (handlers.signingKeys !== undefined) return handlers.signingKeys(ex)
        break
      case 'attestations':
        if (handlers.attestations !== undefined) return handlers.attestations(ex, route.package, route.version)
        break
      case 'publish':
        if (handlers.publish !== undefined) return handlers.publish(ex, route.package)
        respondAfterBody(ex, errors.noPublish, { maxBytes: refusedBodyBytes })
        return
      case 'metadata_change':
        respondAfterBody(ex, errors.metadataChange, { maxBytes: refusedBodyBytes })
        return
      case 'not_found':
        break
    }
    ex.respondError(errors.notFound, { head })
  }
  door.route('any', '/js', handle)
  door.route('any', '/js/*', handle)
  // npm 11 fetches `dist.attestations.url`'s path from its registry's origin, dropping the `/js` prefix
  // (pacote registry.js: new URL(path, registry)): the same route, answered at the root too.
  const attestations = handlers.attestations
  if (attestations !== undefined) {
    door.route('any', '/-/npm/v1/attestations/*', (ex) => {
      const head = ex.method === 'HEAD'
      if (edge !== undefined && !edge.admits(ex.header('authorization'))) {
        respondAfterBody(ex, edge.refusal, { maxBytes: refusedBodyBytes, headers: { 'www-authenticate': EDGE_CHALLENGE } })
        return
      }
      ex.routeTemplate = '/-/npm/v1/attestations/{spec}'
      const route = ex.method === 'GET' || head ? matchAttestationSpec(ex.path.split('/').slice(5)) : { kind: 'not_found' as const }
      if (route.kind !== 'attestations') {
        ex.respondError(errors.notFound, { head })
        return
      }
      if (carriesHopMarker(ex.header('via'), hopMarker)) {
        ex.respondError(errors.loop, { head })
        return
      }
      return attestations(ex, route.package, route.version)
    })
  }
}

/** Deny by default for every path no mount or probe claims, `/metrics` included (SPEC.md 4.5). */
export function mountFallback(door: FrontDoor): void {
  door.route('any', '/*', (ex) => ex.respondError(errors.notFound, { head: ex.method === 'HEAD' }))
}
