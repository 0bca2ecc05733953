import type { LogData, LogRecord, Logger } from '../../engine/log/logger.js'

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
