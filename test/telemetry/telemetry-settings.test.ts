/**
 * Where telemetry goes (SPEC.md 4.5, 5.7, 6.3): VENDOR_AGENT_HOST wins over
 * OTEL_EXPORTER_OTLP_ENDPOINT, the default is node-local, headers never
 * echo, VENDOR_API_KEY and VENDOR_SITE change nothing.
 */
import t from 'tap'
import { describeTelemetrySettings, readTelemetrySettings } from '../../engine/telemetry/telemetry-settings.js'

t.test('endpoint precedence', async (t) => {
  t.equal(readTelemetrySettings({}).endpoint, 'http://localhost:4318')
  t.equal(readTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).endpoint, 'http://collector:4318')
  t.equal(readTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', VENDOR_AGENT_HOST: 'agent' }).endpoint, 'http://agent:4318', 'VENDOR_* wins')
  t.equal(readTelemetrySettings({ VENDOR_AGENT_HOST: 'agent:9999' }).endpoint, 'http://agent:9999')
  t.equal(readTelemetrySettings({ VENDOR_AGENT_HOST: '[::1]' }).endpoint, 'http://[::1]:4318')
  const bad = readTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })
  t.equal(bad.endpoint, 'http://localhost:4318', 'an endpoint that is not an http(s) URL falls back to the node-local default')
  t.equal(bad.problems.length, 1)
  const userinfo = readTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:s3cret@collector:4318' })
  t.equal(userinfo.endpoint, 'http://localhost:4318', 'a credential in the URL is refused')
  t.notMatch(JSON.stringify(userinfo.problems), /s3cret/, 'and never echoed')
})

t.test('VENDOR_API_KEY and VENDOR_SITE have no effect', async (t) => {
  t.same(readTelemetrySettings({ VENDOR_API_KEY: 'k', VENDOR_SITE: 'site.example' }), readTelemetrySettings({}))
})

t.test('headers are read, and redacted in the echo', async (t) => {
  const settings = readTelemetrySettings({ OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20s3cret,x-team=a' })
  t.same(settings.headers, { authorization: 'Bearer s3cret', 'x-team': 'a' })
  const echo = JSON.stringify(describeTelemetrySettings(settings))
  t.notMatch(echo, /s3cret/)
  t.match(echo, /"authorization":"\[redacted\]"/)
  const malformed = readTelemetrySettings({ OTEL_EXPORTER_OTLP_HEADERS: 'novalue,=x%ZZs3cret' })
  t.notMatch(JSON.stringify(malformed.problems), /s3cret/, 'a malformed entry is reported without its text')
})

t.test('exporter selection and prometheus listener', async (t) => {
  const d = readTelemetrySettings({})
  t.same([d.metricsOtlp, d.metricsPrometheus, d.traces, d.logs], [true, false, true, true], 'metrics push over OTLP by default')
  t.equal(d.prometheusHost, 'localhost')
  t.equal(d.prometheusPort, 9464)
  const p = readTelemetrySettings({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '9500', OTEL_TRACES_EXPORTER: 'none' })
  t.same([p.metricsOtlp, p.metricsPrometheus, p.traces, p.prometheusPort], [false, true, false, 9500])
  const bad = readTelemetrySettings({ OTEL_METRICS_EXPORTER: 'statsd', OTEL_EXPORTER_PROMETHEUS_PORT: '0', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })
  t.equal(bad.problems.length, 3, 'each unusable value is one boot warning')
  t.equal(bad.prometheusPort, 9464)
  t.equal(bad.protocol, 'http/protobuf')
})
