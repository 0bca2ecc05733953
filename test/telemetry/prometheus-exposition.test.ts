/**
 * `OTEL_METRICS_EXPORTER=prometheus` on the built service (SPEC.md 4.5, 6.3):
 * a listener of its own, every SPEC.md 6.3 series of the proxy from boot at
 * zero, the exposition valid for `promtool check metrics`, a real Prometheus
 * server scraping it (queried through its HTTP API for a counter, a gauge and
 * a histogram), `/metrics` on the proxy port a 404, a scrape adding nothing
 * to `http.server.*`, and a port that cannot be bound an error log, not a
 * failed start.
 *
 * Needs Debian's `prometheus` package (test/setup,
 * run by .ci/run).
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { request } from 'undici'
import { freePort } from '../helpers/ports.js'
import { prometheusEnv, runService, type ServiceRun } from '../helpers/service-process.js'

const hasPrometheus = spawnSync('promtool', ['--version']).status === 0 && spawnSync('prometheus', ['--version']).status === 0

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await request(url)
  return { status: res.statusCode, text: await res.body.text() }
}

async function startProxy(t: Test, metricsPort: number): Promise<{ run: ServiceRun; url: string }> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'telemetry-prom-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_QUEUE__PATH: join(dir, 'queue'),
    SERVICE_STORE__PATH: join(dir, 'store'),
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
    ...prometheusEnv(metricsPort),
  })
  await run.waitForOutput('proxy listening')
  return { run, url: `http://127.0.0.1:${port}` }
}

/** The value of one exposition line whose name and labels contain every fragment. */
function sample(exposition: string, name: string, ...fragments: string[]): number | undefined {
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (fragments.every((f) => line.includes(f))) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

t.test('the exposition of a running proxy', { skip: hasPrometheus ? false : 'promtool/prometheus missing: run test/setup' }, async (t) => {
  const metricsPort = await freePort()
  const { run, url } = await startProxy(t, metricsPort)
  await run.waitForOutput('telemetry: metrics listener ready')
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`

  t.equal((await get(`${url}/metrics`)).status, 404, '/metrics on the proxy port answers 404 like any unmounted path')
  t.equal((await get(`${url}/livez`)).status, 200)
  t.equal((await get(`${url}/livez`)).status, 200)
  t.equal((await get(`${url}/js/-/ping`)).status, 200)
  t.equal((await get(`${url}/js/.bad-name`)).status, 404, 'a bad package name: 404 before any upstream')

  const first = await get(metricsUrl)
  t.equal(first.status, 200)
  const text = first.text
  // Every SPEC.md 6.3 series the proxy runs exists from boot, at zero where nothing happened.
  for (const result of ['hit', 'miss', 'collapsed']) {
    t.equal(sample(text, 'service_metadata_cache_requests_total', `result="${result}"`), 0, `full ${result} at zero`)
    t.equal(sample(text, 'service_metadata_cache_version_requests_total', `result="${result}"`), 0, `version ${result} at zero`)
    t.equal(sample(text, 'service_metadata_cache_assembled_requests_total', `result="${result}"`), 0, `assembled ${result} at zero`)
  }
  for (const name of ['service_metadata_cache_resident_bytes', 'service_metadata_cache_version_resident_bytes', 'service_metadata_cache_assembled_resident_bytes', 'service_metadata_cache_entries',
    'service_serve_admission_memory_charged_bytes', 'service_serve_admission_memory_brake_level', 'service_serve_admission_memory_waiting', 'service_serve_admission_memory_paused_now',
    'service_serve_admission_memory_queued_total', 'service_serve_admission_memory_shed_total', 'service_serve_admission_memory_pauses_total', 'service_serve_admission_memory_overdraws_total']) {
    t.equal(sample(text, name), 0, `${name} at zero`)
  }
  t.ok((sample(text, 'service_serve_admission_memory_budget_bytes') ?? 0) > 0, 'the budget is reported')
  t.equal(sample(text, 'service_artifact_read_buffers_lent'), 0, 'no large read buffer lent before any artifact')
  t.equal(sample(text, 'service_artifact_read_buffers_kept'), 0, 'none kept either')
  t.ok((sample(text, 'service_artifact_read_buffers_limit') ?? 0) >= 8, 'the plan\'s bound on large read buffers is reported')
  t.equal(sample(text, 'service_upstream_fetch_errors_total', 'cause="upstream_status"'), 0)
  t.equal(sample(text, 'service_mirror_jobs_processed_total', 'result="discarded"'), undefined, 'no mirror configured: no mirror series')
  t.match(text, /target_info\{[^}]*service_name="registry-proxy"/, 'the resource describes the service')

  const livez = (s: string): number | undefined => sample(s, 'http_server_request_duration_seconds_count', 'http_route="/livez"', 'http_request_method="GET"', 'http_response_status_code="200"')
  t.equal(livez(text), 2, 'the two probes are timed under their route template')
  t.notOk(text.includes('http_route="/metrics"'), 'a raw path never becomes a route')
  t.equal(sample(text, 'http_server_request_duration_seconds_count', 'http_route="/js/-/ping"', 'http_response_status_code="200"'), 1, 'the mount names its route template')
  t.equal(sample(text, 'http_server_request_duration_seconds_count', 'http_route="/js/{package}"', 'http_response_status_code="404"'), 1, 'a packument request under /js/{package}, never its raw path')
  t.notOk(text.includes('.bad-name'), 'the raw name is nowhere in the exposition')
  t.equal(sample(text, 'http_server_request_duration_seconds_count', 'http_route="/*"', 'http_response_status_code="404"'), 1, 'the 404 is timed under the fallback template')
  const second = await get(metricsUrl)
  t.equal(livez(second.text), 2, 'a scrape adds nothing to http.server.*')

  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  t.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`)

  // A real Prometheus server scrapes it.
  const dir = await mkdtemp(join(tmpdir(), 'prometheus-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const webPort = await freePort()
  await writeFile(join(dir, 'prometheus.yml'), [
    'global: { scrape_interval: 1s, evaluation_interval: 1s }',
    'scrape_configs:',
    '  - job_name: service',
    `    static_configs: [ { targets: [ "127.0.0.1:${metricsPort}" ] } ]`,
    '',
  ].join('\n'))
  const prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${webPort}`], { stdio: 'ignore' })
  const exited = new Promise((resolve) => prometheus.on('exit', resolve))
  t.teardown(async () => {
    if (prometheus.exitCode === null && prometheus.signalCode === null) {
      prometheus.kill('SIGKILL')
      await exited
    }
  })
  const query = async (expr: string): Promise<unknown[]> => {
    try {
      const res = await get(`http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(expr)}`)
      if (res.status !== 200) return []
      return (JSON.parse(res.text) as { data: { result: unknown[] } }).data.result
    } catch {
      return [] // not up yet
    }
  }
  const queries = {
    counter: 'service_serve_admission_memory_shed_total{job="service"}',
    gauge: 'service_serve_admission_memory_budget_bytes{job="service"}',
    histogram: 'http_server_request_duration_seconds_count{job="service",http_route="/livez"}',
  }
  const found: Record<string, unknown[]> = {}
  for (let i = 0; i < 120 && Object.keys(found).length < 3; i++) {
    for (const [kind, expr] of Object.entries(queries)) {
      if (found[kind] !== undefined) continue
      const result = await query(expr)
      if (result.length > 0) found[kind] = result
    }
    if (Object.keys(found).length < 3) await new Promise((r) => setTimeout(r, 500))
  }
  for (const kind of Object.keys(queries)) t.ok(found[kind] !== undefined && (found[kind] as unknown[]).length === 1, `Prometheus has the ${kind} series`)
  const histogramValue = Number(((found['histogram']?.[0] as { value?: [number, string] } | undefined)?.value ?? [])[1])
  t.equal(histogramValue, 2, 'scrapes by Prometheus added nothing to the probe count')
})

t.test('a metrics port that cannot be bound is an error log, not a failed start', async (t) => {
  const holder = createServer()
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())))
  const taken = (holder.address() as { port: number }).port
  const { run, url } = await startProxy(t, taken)
  await run.waitForOutput('telemetry: metrics listener cannot listen')
  const line = run.stdout().split('\n').find((l) => l.includes('telemetry: metrics listener cannot listen')) ?? '{}'
  const record = JSON.parse(line) as { status?: string; data?: { port?: number } }
  t.equal(record.status, 'error')
  t.equal(record.data?.port, taken)
  t.equal((await get(`${url}/readyz`)).status, 200, 'the proxy serves')
})
