/**
 * What the logger asks of tracing (SPEC.md 2.10: `dd.trace_id` and
 * `dd.span_id` appear only while a span is in scope): the span in scope, if
 * any. engine/telemetry/trace-context.ts answers it; the logger names only
 * this, so logging stands below telemetry and never imports it.
 */
export interface SpanContext {
  readonly traceId: string
  readonly spanId: string
}

export interface SpanScope {
  /** The span in scope, or undefined outside any. */
  current(): SpanContext | undefined
}
