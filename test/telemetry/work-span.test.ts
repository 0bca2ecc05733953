/**
 * Spans for work that is not an exchange (issue 15): a child span only under
 * a span in scope (so the request hot paths pay nothing with telemetry off),
 * a root span for the mirror job and the Pilot compile, errors marked.
 */
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import t from 'tap'
import { inChildSpan, inRootSpan } from '../../engine/telemetry/work-span.js'

t.test('with no tracer registered (telemetry off) the work runs and nothing is made', async (t) => {
  t.equal(await inChildSpan('gate enter', {}, async () => 7), 7)
  t.equal(await inRootSpan('mirror job', {}, async () => 8), 8)
  t.equal(trace.getSpan(context.active()), undefined)
})

t.test('with telemetry on', async (t) => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  t.teardown(async () => { await provider.shutdown(); trace.disable(); context.disable() })
  const tracer = trace.getTracer('test')

  t.test('no span in scope: no child span', async (t) => {
    exporter.reset()
    await inChildSpan('packument render', {}, async () => undefined)
    t.same(exporter.getFinishedSpans(), [])
  })

  t.test('under a request span: child spans with their attributes, nested work under them', async (t) => {
    exporter.reset()
    const request = tracer.startSpan('GET /js/*')
    await context.with(trace.setSpan(context.active(), request), async () => {
      await inChildSpan('gate enter', {}, async () => undefined)
      await inChildSpan('packument render', { 'package.name': 'left-pad' }, async () => {
        await inChildSpan('packument compress', {}, async () => undefined)
      })
    })
    request.end()
    const spans = exporter.getFinishedSpans()
    const byName = new Map(spans.map((s) => [s.name, s]))
    const parentOf = (name: string): string | undefined => byName.get(name)?.parentSpanContext?.spanId
    t.equal(parentOf('gate enter'), request.spanContext().spanId)
    t.equal(parentOf('packument render'), request.spanContext().spanId)
    t.equal(parentOf('packument compress'), byName.get('packument render')?.spanContext().spanId, 'nested work is the render\'s child')
    t.equal(byName.get('packument render')?.attributes['package.name'], 'left-pad')
    t.equal(new Set(spans.map((s) => s.spanContext().traceId)).size, 1, 'one trace')
  })

  t.test('a root span starts its own trace even under a request; a failure is marked and rethrown', async (t) => {
    exporter.reset()
    const request = tracer.startSpan('GET /js/*')
    const error = Object.assign(new Error('no answer'), { code: 'UPSTREAM_UNAVAILABLE' })
    await context.with(trace.setSpan(context.active(), request), async () => {
      await t.rejects(inRootSpan('mirror job', { 'package.name': 'p' }, async () => { throw error }), error)
    })
    request.end()
    const job = exporter.getFinishedSpans().find((s) => s.name === 'mirror job')
    t.equal(job?.parentSpanContext, undefined, 'a root')
    t.not(job?.spanContext().traceId, request.spanContext().traceId)
    t.equal(job?.status.code, SpanStatusCode.ERROR)
    t.equal(job?.attributes['error.type'], 'UPSTREAM_UNAVAILABLE')
  })
})
