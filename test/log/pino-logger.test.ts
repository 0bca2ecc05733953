import { PassThrough } from 'node:stream'
import t from 'tap'
import { resolveIdentity } from '../../engine/log/identity.js'
import { createProcessLogger, renderConsole } from '../../engine/log/pino-logger.js'
import { BearerToken, REDACTED } from '../../engine/secret.js'
import { TraceContext } from '../../engine/telemetry/trace-context.js'

function capture(): { stream: PassThrough; lines: () => Record<string, unknown>[]; text: () => string } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk) => { text += String(chunk) })
  return {
    stream,
    text: () => text,
    lines: () => text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

const identity = { service: 'svc', env: 'prod', version: '9.9.9', host: 'node-1' }
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('one JSON object per line with exactly the SPEC.md 2.10 fields', async (t) => {
  const out = capture()
  const trace = new TraceContext()
  const log = createProcessLogger({ identity, level: 'info', format: 'json', trace, destination: out.stream })
  log.info('hello', { package: 'lodash', count: 2 })
  trace.inSpan(() => log.warn('inside a span'))
  await settle()
  const [plain, spanned] = out.lines()
  t.same(Object.keys(plain ?? {}).sort(), ['data', 'env', 'katip', 'message', 'service', 'status', 'timestamp', 'version'])
  t.match(plain, { status: 'info', message: 'hello', service: 'svc', env: 'prod', version: '9.9.9', data: { package: 'lodash', count: 2 }, katip: { host: 'node-1' } })
  t.match(String(plain?.['timestamp']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'RFC 3339 UTC')
  t.notOk('dd' in (plain ?? {}), 'no trace ids outside a span')
  t.match(spanned, { status: 'warn', dd: { trace_id: /^[0-9a-f]{32}$/, span_id: /^[0-9a-f]{16}$/ } })
})

t.test('typed bearer tokens render as the redacted placeholder wherever they appear', async (t) => {
  const out = capture()
  const log = createProcessLogger({ identity, level: 'debug', format: 'json', destination: out.stream })
  const token = new BearerToken('s3cr3t-value')
  log.error('upstream refused', { token, nested: { deeper: [token] } })
  await settle()
  t.notMatch(out.text(), /s3cr3t-value/)
  t.match(out.lines()[0], { data: { token: REDACTED, nested: { deeper: [REDACTED] } } })
  t.equal(String(token), REDACTED)
  t.equal(`${token}`, REDACTED)
})

t.test('the level floor', async (t) => {
  const out = capture()
  const log = createProcessLogger({ identity, level: 'warn', format: 'json', destination: out.stream })
  log.debug('d')
  log.info('i')
  log.warn('w')
  log.error('e')
  await settle()
  t.same(out.lines().map((l) => l['status']), ['warn', 'error'])
  t.equal(log.isLevelEnabled('info'), false)
})

t.test('console format is for humans', async (t) => {
  const out = capture()
  const log = createProcessLogger({ identity, level: 'info', format: 'console', destination: out.stream })
  log.info('listening', { port: 4873 })
  await settle()
  t.match(out.text(), /^\d{4}-\d\d-\d\dT\S+Z INFO  listening {2}port=4873\n$/)
  t.equal(renderConsole('not json'), 'not json')
})

t.test('identity: VENDOR_* wins over OTEL_*; the build version when none is set', async (t) => {
  t.match(resolveIdentity({}, '1.2.3'), { version: '1.2.3' })
  t.match(resolveIdentity({ OTEL_SERVICE_NAME: 'otel', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=staging,service.version=4.0.0' }, '1.2.3'),
    { service: 'otel', env: 'staging', version: '4.0.0' })
  t.match(resolveIdentity({ VENDOR_SERVICE: 'v', VENDOR_ENV: 've', VENDOR_VERSION: '5', OTEL_SERVICE_NAME: 'otel' }, '1.2.3'),
    { service: 'v', env: 've', version: '5' })
})
