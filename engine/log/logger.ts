/**
 * The logging surface every module takes. The process-wide implementation is
 * pino (engine/log/pino-logger.ts) shaped to SPEC.md 2.10; tests pass a
 * RecordingLogger. `data` is the call's own fields and ends up under `data`.
 *
 * Messages that SPEC.md fixes word for word are constants in the module that
 * emits them, and tests assert on them.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export type LogData = Readonly<Record<string, unknown>>

export interface Logger {
  debug(message: string, data?: LogData): void
  info(message: string, data?: LogData): void
  warn(message: string, data?: LogData): void
  error(message: string, data?: LogData): void
  isLevelEnabled(level: LogLevel): boolean
}

export interface LogRecord {
  readonly level: LogLevel
  readonly message: string
  readonly data: LogData
}

/** Keeps every record in memory; for tests. */
export class RecordingLogger implements Logger {
  readonly records: LogRecord[] = []

  debug(message: string, data: LogData = {}): void { this.records.push({ level: 'debug', message, data }) }
  info(message: string, data: LogData = {}): void { this.records.push({ level: 'info', message, data }) }
  warn(message: string, data: LogData = {}): void { this.records.push({ level: 'warn', message, data }) }
  error(message: string, data: LogData = {}): void { this.records.push({ level: 'error', message, data }) }
  isLevelEnabled(): boolean { return true }

  /** Records whose message equals `message`. */
  find(message: string): LogRecord[] { return this.records.filter((r) => r.message === message) }
}

/** Discards everything. */
export const silentLogger: Logger = Object.freeze({
  debug() {}, info() {}, warn() {}, error() {},
  isLevelEnabled: () => false,
})
