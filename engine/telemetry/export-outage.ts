/**
 * One warn line per collector outage, not per batch (issue 15): the first
 * failed export of a signal after a success (or boot) logs
 * `telemetry export failing`; the first success after that logs
 * `telemetry export recovered` at info. The batches in between are dropped
 * by the SDK's bounded queues, which is all a down collector costs.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import type { Logger } from '../log/logger.js'

export const EXPORT_FAILING = 'telemetry export failing'
export const EXPORT_RECOVERED = 'telemetry export recovered'

interface Exporter<T> {
  export(items: T, resultCallback: (result: ExportResult) => void): void
  shutdown(): Promise<void>
  forceFlush?(): Promise<void>
}

export class OutageReport {
  readonly #logger: Logger
  readonly #signal: string
  readonly #endpoint: string
  #down = false

  constructor(logger: Logger, signal: string, endpoint: string) {
    this.#logger = logger
    this.#signal = signal
    this.#endpoint = endpoint
  }

  get down(): boolean { return this.#down }

  observe(result: ExportResult): void {
    if (result.code === ExportResultCode.SUCCESS) {
      if (this.#down) this.#logger.info(EXPORT_RECOVERED, { signal: this.#signal, endpoint: this.#endpoint })
      this.#down = false
      return
    }
    if (this.#down) return
    this.#down = true
    // The error names the collector's answer or the socket error; never a header (they may authenticate).
    this.#logger.warn(EXPORT_FAILING, { signal: this.#signal, endpoint: this.#endpoint, error: String(result.error?.message ?? result.error ?? 'unknown') })
  }
}

const DELEGATED = ['shutdown', 'forceFlush', 'selectAggregationTemporality', 'selectAggregation'] as const

/** The same exporter, reporting each result to `report`; its other members (flush, temporality selectors) bound to it as they are. */
export function reportingOutages<T, E extends Exporter<T>>(exporter: E, report: OutageReport): E {
  const wrapped: Record<string, unknown> = {
    export: (items: T, resultCallback: (result: ExportResult) => void) => {
      exporter.export(items, (result) => {
        report.observe(result)
        resultCallback(result)
      })
    },
  }
  for (const name of DELEGATED) {
    const member = (exporter as unknown as Record<string, unknown>)[name]
    if (typeof member === 'function') wrapped[name] = (member as (...args: unknown[]) => unknown).bind(exporter)
  }
  return wrapped as unknown as E
}
