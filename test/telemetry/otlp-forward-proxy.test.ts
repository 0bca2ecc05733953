/**
 * The OTLP exporters through the forward proxy (issue 32 item 3): with
 * `egress.proxy` set, every export of the three signals reaches the
 * collector through a CONNECT tunnel of a real proxy on 127.0.0.1
 * (test/upstream/connect-proxy.ts); with the collector in NO_PROXY, none
 * does.
 */
import t from 'tap'
import { startTelemetry } from '../../engine/telemetry/otel-telemetry.js'
import { forwardProxyOf, type ForwardProxySettings } from '../../engine/upstream/forward-proxy.js'
import { proxiedAgents } from '../../engine/upstream/proxied-agents.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { emitEverySignalAndShutDown } from '../helpers/emit-signals.js'
import { startConnectProxy } from '../upstream/connect-proxy.js'
import { startServer } from '../upstream/servers.js'

/** The Agents the service passes for these settings (server/cli/main.ts egressAgentsFor). */
function agentsFor(settings: ForwardProxySettings): ReturnType<typeof proxiedAgents> | undefined {
  const forwardProxy = forwardProxyOf(settings, {})
  return forwardProxy === undefined ? undefined : proxiedAgents(forwardProxy)
}

for (const [how, noProxy] of [['through the proxy', undefined], ['with the collector in NO_PROXY', ['127.0.0.1']]] as const) {
  t.test(`the three signals are exported ${how}`, async (t) => {
    const collector = await startServer(t, (req, res) => { req.resume(); req.on('end', () => res.end()) })
    const proxy = await startConnectProxy(t)
    const telemetry = await startTelemetry({
      identity: { service: 's', env: 'e', version: '1', host: 'h' },
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin, OTEL_METRIC_EXPORT_INTERVAL: '600000' },
      logger: new RecordingLogger(),
      role: 'proxy',
      egressAgents: agentsFor({ url: proxy.url, environment: false, ...(noProxy === undefined ? {} : { noProxy: [...noProxy] }) }),
    })
    await emitEverySignalAndShutDown(telemetry)
    t.same(collector.seen.map((s) => s.url).sort(), ['/v1/logs', '/v1/metrics', '/v1/traces'], 'every signal reached the collector')
    if (noProxy === undefined) {
      t.ok(proxy.targets.length >= 1, 'the proxy opened tunnels')
      t.same(new Set(proxy.targets), new Set([`127.0.0.1:${collector.port}`]), 'to the collector')
      t.equal(collector.connections(), proxy.targets.length, 'every connection the collector accepted was a tunnel')
    } else {
      t.equal(proxy.targets.length, 0, 'the proxy heard nothing')
      t.ok(collector.connections() >= 1)
    }
  })
}
