/**
 * The span in scope, for log correlation (SPEC.md 2.10: `dd.trace_id` and
 * `dd.span_id` appear only while a span is in scope). Telemetry export is
 * opt-in and lives elsewhere; this is the one piece the logger needs, so log
 * lines correlate whether or not export is on.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
import { context, trace } from '@opentelemetry/api'
import type { SpanContext, SpanScope } from '../log/span-context.js'

export class TraceContext implements SpanScope {
  readonly #storage = new AsyncLocalStorage<SpanContext>()

  /**
   * The OpenTelemetry span in scope when telemetry is on (server, client and
   * work spans), else one opened with `inSpan`. With telemetry off the OTel
   * API has no context manager and answers at once with no span.
   */
  current(): SpanContext | undefined {
    const otel = trace.getSpan(context.active())?.spanContext()
    if (otel !== undefined && trace.isSpanContextValid(otel)) return { traceId: otel.traceId, spanId: otel.spanId }
    return this.#storage.getStore()
  }

  /** Runs `fn` inside a child span of the current one (or a new trace). */
  inSpan<T>(fn: () => T, parent: SpanContext | undefined = this.current()): T {
    const span: SpanContext = {
      traceId: parent?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
    }
    return this.#storage.run(span, fn)
  }
}
