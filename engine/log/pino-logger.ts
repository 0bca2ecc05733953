/**
 * The process logger: pino, one JSON object per line shaped to SPEC.md 2.10:
 *
 *   { timestamp, status, message, service, env, version, data, katip: { host, ... }, dd?: { trace_id, span_id } }
 *
 * `data` is the emitting call's own fields; `dd` is present only while a span
 * is in scope (a SpanScope: engine/telemetry/trace-context.ts in production). Bearer tokens are
 * BearerToken values whose toJSON is the redacted placeholder, so they are
 * redacted wherever they sit in `data`. The console format renders the same
 * record for a human. The destination is asynchronous (STYLE.md rule 10);
 * `flush()` drains it before exit.
 */
import { Writable } from 'node:stream'
import { pino, type DestinationStream, type Logger as Pino } from 'pino'
import type { Identity } from './identity.js'
import type { LogData, Logger, LogLevel } from './logger.js'
import type { SpanScope } from './span-context.js'

export interface ProcessLoggerOptions {
  readonly identity: Identity
  readonly level: LogLevel
  readonly format: 'json' | 'console'
  /** Role name, emitted under katip. */
  readonly role?: string
  readonly trace?: SpanScope
  /** Defaults to an asynchronous stdout destination. */
  readonly destination?: NodeJS.WritableStream
}

export interface ProcessLogger extends Logger {
  /** Writes out anything buffered; call before the process exits. */
  flush(): void
}

export function createProcessLogger(options: ProcessLoggerOptions): ProcessLogger {
  const { identity, trace } = options
  const json: DestinationStream = options.destination === undefined
    ? pino.destination({ dest: 1, sync: false, minLength: 0 })
    : options.destination as unknown as DestinationStream
  const destination: DestinationStream = options.format === 'console' ? consoleDestination(json) : json

  const logger: Pino = pino({
    level: options.level,
    messageKey: 'message',
    base: {
      service: identity.service,
      env: identity.env,
      version: identity.version,
      katip: { host: identity.host, pid: process.pid, ...(options.role === undefined ? {} : { role: options.role }) },
    },
    timestamp: () => `,"timestamp":"${new Date().toISOString()}"`,
    formatters: {
      level: (label) => ({ status: label }),
    },
    mixin: trace === undefined
      ? undefined
      : () => {
          const span = trace.current()
          return span === undefined ? {} : { dd: { trace_id: span.traceId, span_id: span.spanId } }
        },
  }, destination)

  // `data` is always present, so every line has the same shape.
  const emit = (level: LogLevel) => (message: string, data: LogData = {}): void => {
    logger[level]({ data }, message)
  }
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    isLevelEnabled: (level) => logger.isLevelEnabled(level),
    flush: () => {
      const d = destination as { flushSync?: () => void }
      try { d.flushSync?.() } catch { /* not ready yet or already closed: nothing buffered to lose */ }
    },
  }
}

/** Re-renders each JSON line for a human: `time LEVEL message key=value ...`. */
function consoleDestination(out: DestinationStream): DestinationStream {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.length === 0) continue
        out.write(`${renderConsole(line)}\n`)
      }
      callback()
    },
  })
  const flushable = stream as unknown as DestinationStream & { flushSync?: () => void }
  flushable.flushSync = () => (out as { flushSync?: () => void }).flushSync?.()
  return flushable
}

export function renderConsole(line: string): string {
  let record: Record<string, unknown>
  try {
    record = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line
  }
  const data = (record['data'] ?? {}) as Record<string, unknown>
  const fields = Object.entries(data).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
  const dd = record['dd'] as { trace_id?: string } | undefined
  if (dd?.trace_id !== undefined) fields.push(`trace=${dd.trace_id}`)
  const status = String(record['status'] ?? '').toUpperCase().padEnd(5)
  return `${String(record['timestamp'])} ${status} ${String(record['message'] ?? '')}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}`
}
