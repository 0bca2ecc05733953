/**
 * The server span of one front-door request (issue 15): a W3C `traceparent`
 * from the client is honoured as the parent; the handler runs with the span
 * active, so upstream fetches become its children (client-durations.ts) and
 * log lines carry `dd.trace_id` / `dd.span_id` (trace-context.ts).
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api'
import { methodAttribute } from './http-method.js'

export interface ServerSpan {
  /** Runs `fn` with the span active. */
  run<T>(fn: () => T): T
  /** `route`: the template the mount matched, when finer than the one the span started with. */
  end(status: number, reason: string, route?: string): void
}

export type ServerSpans = (method: string, route: string, headers: ReadonlyMap<string, string>) => ServerSpan

const MAP_GETTER: TextMapGetter<ReadonlyMap<string, string>> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key.toLowerCase()),
}

export function serverSpans(tracer: Tracer): ServerSpans {
  return (method, route, headers) => {
    const parent = propagation.extract(ROOT_CONTEXT, headers, MAP_GETTER)
    const attribute = methodAttribute(method)
    const span: Span = tracer.startSpan(`${attribute} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': attribute, 'http.route': route },
    }, parent)
    const active: Context = trace.setSpan(parent, span)
    return {
      run: (fn) => context.with(active, fn),
      end: (status, reason, finer) => {
        if (finer !== undefined && finer !== route) {
          span.updateName(`${attribute} ${finer}`)
          span.setAttribute('http.route', finer)
        }
        if (status > 0) span.setAttribute('http.response.status_code', status)
        if (reason !== 'completed') span.setAttribute('error.type', reason)
        // Server spans: a 4xx is the client's error, not ours (OTel HTTP conventions).
        if (status >= 500 || reason !== 'completed') span.setStatus({ code: SpanStatusCode.ERROR })
        span.end()
      },
    }
  }
}
