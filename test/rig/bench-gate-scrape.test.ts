import t from 'tap'
import { parseGate } from '../../bench/lib/gate-scrape.js'

// The names the OpenTelemetry Prometheus exporter gives the SPEC.md 6.3 gate figures: counters end in _total.
const TEXT = [
  '# HELP service_serve_admission_memory_budget_bytes current memory budget of the admission gate',
  'service_serve_admission_memory_budget_bytes{otel_scope_name="registry-proxy-service",otel_scope_version="0.1.0"} 150994944',
  'service_serve_admission_memory_charged_bytes{otel_scope_name="registry-proxy-service"} 1048576',
  'service_serve_admission_memory_brake_level{otel_scope_name="registry-proxy-service"} 1',
  'service_serve_admission_memory_waiting{otel_scope_name="registry-proxy-service"} 3',
  'service_serve_admission_memory_paused_now{otel_scope_name="registry-proxy-service"} 12',
  'service_serve_admission_memory_pauses_total{otel_scope_name="registry-proxy-service"} 490',
  'service_serve_admission_memory_overdraws_total{otel_scope_name="registry-proxy-service"} 17767',
  'service_serve_admission_memory_queued_total{otel_scope_name="registry-proxy-service"} 64',
].join('\n')

t.test('the gate figures are read from a Prometheus answer, counters by their own name', async (t) => {
  t.same(parseGate(TEXT, 7), { at: 7, budgetBytes: 150994944, chargedBytes: 1048576, brakeLevel: 1, pausedNow: 12, waiting: 3, pauses: 490, overdraws: 17767 })
})

t.test('a figure the answer lacks reads NaN', async (t) => {
  const reading = parseGate('service_serve_admission_memory_budget_bytes 5\n', 0)
  t.equal(reading.budgetBytes, 5)
  t.ok(Number.isNaN(reading.pauses))
})
