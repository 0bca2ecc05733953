import type { Telemetry } from '../../engine/telemetry/instruments.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

/** One metric, one log line and one server span through a started telemetry, then its shutdown: every signal is exported once. */
export async function emitEverySignalAndShutDown(telemetry: Telemetry): Promise<void> {
  telemetry.observeRole(() => ({ 'service.upstream.fetch.errors': { timeout: 1 } }))
  telemetry.teeLogger(new RecordingLogger()).warn('to the collector')
  const span = telemetry.serverSpans?.('GET', '/livez', new Map())
  span?.run(() => undefined)
  span?.end(200, 'completed')
  await telemetry.shutdown()
}
