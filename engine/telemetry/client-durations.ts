/**
 * `http.client.request.duration` and the client span of every upstream call,
 * from diagnostics channels: undici's (metadata, publish, mirror target) and
 * the artifact connections' own, which publish the same message shapes
 * (artifact-client-channel.ts). The upstream code stays free of the SDK, and
 * with telemetry off nothing subscribes, so neither client publishes at all
 * (diagnostics_channel `hasSubscribers`).
 *
 * The W3C `traceparent` of the client span goes only to the private leg's
 * origins (issue 15): the public upstream never learns our trace ids.
 *
 * A request's duration runs from its creation to the end of its body (the
 * trailers message) or its error, as the OTel HTTP conventions measure it.
 */
import diagnostics from 'node:diagnostics_channel'
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api'
import { methodAttribute } from './http-method.js'
import { ARTIFACT_REQUEST_CREATE, ARTIFACT_REQUEST_END, ARTIFACT_REQUEST_ERROR, ARTIFACT_REQUEST_HEADERS } from './artifact-client-channel.js'

interface UndiciRequest {
  readonly origin?: string | URL
  readonly method?: string
  addHeader?(name: string, value: string): unknown
}

interface Pending {
  readonly started: number
  readonly attributes: Attributes
  readonly span: Span | undefined
}

export interface ClientDurationsOptions {
  readonly record: ((seconds: number, attributes: Attributes) => void) | undefined
  readonly tracer: Tracer | undefined
  readonly privateOrigins: readonly string[]
}

const CREATE = 'undici:request:create'
const HEADERS = 'undici:request:headers'
const TRAILERS = 'undici:request:trailers'
const ERROR = 'undici:request:error'
/** [create, headers, end, error] of each client. */
const CHANNELS = [[CREATE, HEADERS, TRAILERS, ERROR], [ARTIFACT_REQUEST_CREATE, ARTIFACT_REQUEST_HEADERS, ARTIFACT_REQUEST_END, ARTIFACT_REQUEST_ERROR]] as const

export class ClientDurations {
  readonly #options: ClientDurationsOptions
  readonly #pending = new WeakMap<object, Pending>()
  readonly #private: ReadonlySet<string>
  #subscribed = false

  constructor(options: ClientDurationsOptions) {
    this.#options = options
    this.#private = new Set(options.privateOrigins.map(originOf).filter((o): o is string => o !== undefined))
  }

  start(): void {
    if (this.#subscribed || (this.#options.record === undefined && this.#options.tracer === undefined)) return
    this.#subscribed = true
    for (const [create, headers, end, error] of CHANNELS) {
      diagnostics.subscribe(create, this.#onCreate)
      diagnostics.subscribe(headers, this.#onHeaders)
      diagnostics.subscribe(end, this.#onTrailers)
      diagnostics.subscribe(error, this.#onError)
    }
  }

  stop(): void {
    if (!this.#subscribed) return
    this.#subscribed = false
    for (const [create, headers, end, error] of CHANNELS) {
      diagnostics.unsubscribe(create, this.#onCreate)
      diagnostics.unsubscribe(headers, this.#onHeaders)
      diagnostics.unsubscribe(end, this.#onTrailers)
      diagnostics.unsubscribe(error, this.#onError)
    }
  }

  readonly #onCreate = (message: unknown): void => {
    const request = (message as { request?: UndiciRequest }).request
    if (request === undefined) return
    const origin = originOf(request.origin)
    let address = ''
    let port: number | undefined
    try {
      const url = new URL(origin ?? '')
      address = url.hostname.replace(/^\[|\]$/g, '')
      port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
    } catch { /* an origin undici accepted always parses; keep the empty address if not */ }
    const method = methodAttribute((request.method ?? 'GET').toUpperCase())
    const attributes: Attributes = { 'http.request.method': method, 'server.address': address }
    if (port !== undefined) attributes['server.port'] = port
    const tracer = this.#options.tracer
    // Only a request made inside a traced operation gets a span: background polls would make orphan traces.
    const parent = tracer === undefined ? undefined : trace.getSpan(context.active())
    const span = tracer === undefined || parent === undefined ? undefined : tracer.startSpan(method, { kind: SpanKind.CLIENT, attributes }, context.active())
    if (span !== undefined && origin !== undefined && this.#private.has(origin) && typeof request.addHeader === 'function') {
      const carrier: Record<string, string> = {}
      propagation.inject(trace.setSpan(context.active(), span), carrier)
      for (const [name, value] of Object.entries(carrier)) request.addHeader(name, value)
    }
    this.#pending.set(request, { started: performance.now(), attributes, span })
  }

  readonly #onHeaders = (message: unknown): void => {
    const { request, response } = message as { request?: object; response?: { statusCode?: number } }
    const pending = request === undefined ? undefined : this.#pending.get(request)
    if (pending === undefined || typeof response?.statusCode !== 'number') return
    pending.attributes['http.response.status_code'] = response.statusCode
    if (response.statusCode >= 400) pending.attributes['error.type'] = String(response.statusCode)
  }

  readonly #onTrailers = (message: unknown): void => {
    this.#finish((message as { request?: object }).request, undefined)
  }

  readonly #onError = (message: unknown): void => {
    const { request, error } = message as { request?: object; error?: { name?: string; code?: string } }
    this.#finish(request, error?.code ?? error?.name ?? 'error')
  }

  #finish(request: object | undefined, errorType: string | undefined): void {
    const pending = request === undefined ? undefined : this.#pending.get(request)
    if (request === undefined || pending === undefined) return
    this.#pending.delete(request)
    if (errorType !== undefined) pending.attributes['error.type'] = errorType
    this.#options.record?.((performance.now() - pending.started) / 1000, pending.attributes)
    if (pending.span !== undefined) {
      pending.span.setAttributes(pending.attributes)
      if (pending.attributes['error.type'] !== undefined) pending.span.setStatus({ code: SpanStatusCode.ERROR })
      pending.span.end()
    }
  }
}

function originOf(value: string | URL | undefined): string | undefined {
  if (value === undefined) return undefined
  try {
    return new URL(String(value)).origin
  } catch {
    return undefined
  }
}
