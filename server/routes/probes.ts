/**
 * Health probes on the server port of every role (SPEC.md 4.5), and the
 * 404 for `/metrics` on that port (metrics, when on, have their own listener).
 */
import { ServiceError } from '../../engine/errors.js'
import type { FrontDoor, Handler } from '../http/front-door.js'
import type { Liveness } from '../health/liveness.js'
import type { Readiness } from '../health/readiness.js'

/** GET and HEAD alike: health checkers often probe with HEAD, which gets GET's status and headers. */
function probe(door: FrontDoor, pattern: string, handler: Handler): void {
  door.route('get', pattern, handler)
  door.route('head', pattern, handler)
}

export function mountProbes(door: FrontDoor, liveness: Liveness, readiness: Readiness): void {
  probe(door, '/livez', (ex) => {
    const body = liveness.body()
    ex.respondJson(body.status === 'ok' ? 200 : 503, body)
  })
  probe(door, '/readyz', (ex) => {
    const body = readiness.body()
    ex.respondJson(body.status === 'ready' ? 200 : 503, body)
  })
  probe(door, '/readyz/:mount', (ex) => {
    const key = ex.path.slice('/readyz/'.length)
    if (!readiness.hasMount(key)) {
      ex.respondError(new ServiceError('NOT_FOUND', { message: `no mount named ${JSON.stringify(key)}` }))
      return
    }
    const body = readiness.body(key)
    ex.respondJson(body.status === 'ready' ? 200 : 503, body)
  })
}
