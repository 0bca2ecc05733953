/**
 * `service mirror` exports its credential metrics like the proxy does
 * (SPEC.md 6.3): with a mirror target that names a credential, the
 * Prometheus exposition of the built worker has `service.credential.refresh`
 * for every provider and result from boot, at zero, beside its mirror jobs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import YAML from 'yaml'
import { startSqs } from '../../bench/peers/sqs.js'
import { freePort } from '../helpers/ports.js'
import { runService } from '../helpers/service-process.js'

t.test('service mirror: credential series from boot', async (t) => {
  const sqs = await startSqs({ maxReceiveCount: 3 })
  t.teardown(() => sqs.stop())
  const dir = await mkdtemp(join(tmpdir(), 'mirror-metrics-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const [port, metricsPort, targetPort] = [await freePort(), await freePort(), await freePort()]
  const configFile = join(dir, 'config.yaml')
  await writeFile(configFile, YAML.stringify({
    server: { host: '127.0.0.1', port },
    runtime: { cores: 1 },
    observability: { telemetry: 'on' },
    credentials: [{ name: 'mirror-target', provider: 'registry', token: 'not-a-real-token' }],
    mounts: {
      js: {
        upstreams: { public: { url: 'https://upstream.invalid/' } },
        mirror: { target: `http://127.0.0.1:${targetPort}/`, credential: 'mirror-target' },
        rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }],
      },
    },
    queue: { kind: 'sqs', url: sqs.queueUrl, region: sqs.region, endpoint: sqs.endpoint },
  }))
  const worker = runService(t, ['mirror', '--config', configFile], {
    AWS_ACCESS_KEY_ID: sqs.accessKeyId, AWS_SECRET_ACCESS_KEY: sqs.secretAccessKey, AWS_REGION: sqs.region,
    OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
    OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none',
  })
  await worker.waitForOutput('telemetry: metrics listener ready', 60_000)
  await worker.waitForOutput('mirror worker listening', 60_000)
  const exposition = await (await request(`http://127.0.0.1:${metricsPort}/metrics`)).body.text()
  const series = (name: string): string[] => exposition.split('\n').filter((l) => l.startsWith(`${name}{`)).map((l) => l.replace(/,?otel_scope_\w+="[^"]*"/g, '').replace('{,', '{'))
  t.same(series('service_credential_refresh_total').sort(), [
    'service_credential_refresh_total{provider="managedRepo",result="failure"} 0',
    'service_credential_refresh_total{provider="managedRepo",result="success"} 0',
    'service_credential_refresh_total{provider="registry",result="failure"} 0',
    'service_credential_refresh_total{provider="registry",result="success"} 0',
    'service_credential_refresh_total{provider="selfHosted",result="failure"} 0',
    'service_credential_refresh_total{provider="selfHosted",result="success"} 0',
  ], 'every provider and result from boot, at zero (the eager boot mint is no refresh, SPEC.md 5.5)')
  t.same(series('service_credential_token_ttl_seconds'), [], 'a static credential reports no expiry')
  worker.child.kill('SIGTERM')
  await worker.exited
})
