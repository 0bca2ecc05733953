/**
 * Spans for the work that is not an HTTP exchange (issue 15): pool work and
 * gate waits inside a request, the mirror job, the Pilot compile. Through
 * the OpenTelemetry API only, so code that does the work never imports the
 * SDK: with telemetry off the global tracer is the API's no-op one.
 *
 * - `inChildSpan` makes a span only under a span already in scope (a
 *   request's server span): with telemetry off nothing is in scope, and the
 *   hot paths (every packument request's gate entry and render) pay one
 *   context lookup, no allocation.
 * - `inRootSpan` starts a trace of its own (a mirror job, a compile), for
 *   work no request carries; it is called per job, never per request.
 *
 * Pool work is timed from the main thread around the Piscina task (queue
 * wait and run together): the task itself carries no trace context, since a
 * worker thread has no exporter and the main thread's span already bounds it.
 */
import { context, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api'

const SCOPE = 'registry-proxy'

async function within<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(context.active(), span), work)
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR })
    span.setAttribute('error.type', (error as { code?: unknown } | undefined)?.code !== undefined ? String((error as { code: unknown }).code) : (error as Error)?.name ?? 'error')
    throw error
  } finally {
    span.end()
  }
}

/** Runs `work` in a child span of the span in scope; without one, just runs it. */
export function inChildSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const parent = trace.getSpan(context.active())
  if (parent === undefined || !parent.isRecording()) return work()
  return within(trace.getTracer(SCOPE).startSpan(name, { attributes }), work)
}

/** Runs `work` in the root span of a trace of its own (a no-op span with telemetry off). */
export function inRootSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  return within(trace.getTracer(SCOPE).startSpan(name, { attributes, root: true }), work)
}
