/**
 * The Grafana dashboard (deploy/grafana) queries only series the exposition
 * has: every metric name in its expressions is a catalog instrument under
 * its Prometheus name (`_total` for counters) or one of the HTTP histograms.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { readBuildInfo } from '../../engine/build-info.js'
import { METRIC_CATALOG } from '../../engine/telemetry/metric-catalog.js'

t.test('every dashboard query names an exported series', async (t) => {
  const dashboard = JSON.parse(readFileSync(join(readBuildInfo().root, 'deploy/grafana/registry-proxy-service.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] }
  const known = new Set<string>(['target_info'])
  for (const spec of METRIC_CATALOG) known.add(spec.name.replace(/\./g, '_') + (spec.kind === 'counter' ? '_total' : ''))
  for (const histogram of ['http_server_request_duration_seconds', 'http_client_request_duration_seconds']) {
    for (const suffix of ['_bucket', '_count', '_sum']) known.add(histogram + suffix)
  }
  const used = new Set<string>()
  for (const panel of dashboard.panels) for (const target of panel.targets) for (const name of target.expr.match(/\b(?:service|http)_[a-z_]+(?=[{[(\s])/g) ?? []) used.add(name)
  t.ok(used.size >= 15, `the dashboard uses ${used.size} series`)
  for (const name of used) t.ok(known.has(name), `${name} is exported`)
})
