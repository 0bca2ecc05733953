/**
 * Decodes OTLP/HTTP protobuf request bodies (the exporters' default) with the
 * OpenTelemetry protocol definitions in test/fixtures/opentelemetry-proto,
 * through protobufjs: the receiver in the tests reads what a collector
 * would, not strings. The result has the OTLP/JSON shape (camelCase fields,
 * 64-bit integers as strings, enums as numbers), with trace and span ids in
 * hex as OTLP/JSON writes them.
 */
import { join } from 'node:path'
import protobuf from 'protobufjs'
import { readBuildInfo } from '../../engine/build-info.js'

const PROTOS = join(readBuildInfo().root, 'test/fixtures/opentelemetry-proto')

export type Signal = 'traces' | 'metrics' | 'logs'

const REQUESTS: Record<Signal, string> = {
  traces: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
  metrics: 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
  logs: 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest',
}

let root: protobuf.Root | undefined

function load(): protobuf.Root {
  if (root !== undefined) return root
  const loaded = new protobuf.Root()
  // Imports name paths from the proto root (`opentelemetry/proto/common/v1/common.proto`).
  loaded.resolvePath = (_origin, target) => join(PROTOS, target)
  loaded.loadSync([
    'opentelemetry/proto/collector/trace/v1/trace_service.proto',
    'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
    'opentelemetry/proto/collector/logs/v1/logs_service.proto',
  ])
  root = loaded
  return loaded
}

const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId'])

/** base64 ids to hex, everywhere in the tree. */
function hexIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hexIds)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) out[key] = ID_FIELDS.has(key) && typeof v === 'string' ? Buffer.from(v, 'base64').toString('hex') : hexIds(v)
  return out
}

/** One export request body of `signal`, decoded; throws when the bytes are not that message. */
export function decodeOtlp(signal: Signal, body: Uint8Array): Record<string, unknown> {
  const type = load().lookupType(REQUESTS[signal])
  const message = type.decode(body)
  const problem = type.verify(message)
  if (problem !== null) throw new Error(`not a valid ${REQUESTS[signal]}: ${problem}`)
  return hexIds(type.toObject(message, { longs: String, enums: Number, bytes: String, defaults: false })) as Record<string, unknown>
}

/** `/v1/traces` and so on: the signal a request path posts, if any. */
export function signalOf(path: string): Signal | undefined {
  const match = /^\/v1\/(traces|metrics|logs)$/.exec(path)
  return match === null ? undefined : match[1] as Signal
}
