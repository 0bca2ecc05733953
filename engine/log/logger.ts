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

/** Discards everything. */
export const silentLogger: Logger = Object.freeze({
  debug() {}, info() {}, warn() {}, error() {},
  isLevelEnabled: () => false,
})
