/**
 * Issue 30, "Must show": a rolling restart of the 3 proxies of the mirror
 * tier (test/fleet/fleet-rig.ts) under steady load refuses no connection
 * and fails no request for clients that follow `Connection: close`. As in
 * test/server/rolling-restart.test.ts, whose approach this reuses: the
 * round-robin balancer of test/peers/readiness-balancer.ts drops a backend
 * while its /readyz fails, and undici clients without retries send requests
 * through it (test/helpers/closing-load.ts), six on kept-alive connections (reconnecting after a closing
 * answer) and two on a new connection per request. Here the proxies also
 * enqueue mirror jobs on SQS for what they serve, and each one restarts on
 * its own port (SIGTERM, exit 0, started again, back in rotation) before
 * the next one stops. The lame-duck period is 3 s, above the balancer's
 * worst time to drop a backend (2 x 200 ms + a 500 ms probe timeout).
 *
 * Figures are printed as a tap comment (`# scenario 5: ...`). Every process
 * is killed by its process group at teardown (test/helpers/service-process.ts).
 */
import t from 'tap'
import { startLoad, type LoadFigures } from '../helpers/closing-load.js'
import { ReadinessBalancer } from '../peers/readiness-balancer.js'
import { BOOT_TIMEOUT_MS, sleep, startFleet, tarballPath } from './fleet-rig.js'

const DELAY_SECONDS = 3
const PROBES = { probeIntervalMs: 200, failureThreshold: 2, probeTimeoutMs: 500 }
const KEPT_ALIVE_CLIENTS = 6
const FRESH_CONNECTION_CLIENTS = 2
const PAUSE_MS = 40
/** Packuments and tarballs alike: both legs of the proxy. */
const PATHS = ['alpha', 'bravo', 'charlie', 'delta'].flatMap((n) => [`/js/fleet-roll-${n}`, `/js${tarballPath(`fleet-roll-${n}`)}`])

t.test('a rolling restart of the mirror tier under steady load', { timeout: 400_000 }, async (t) => {
  const fleet = await startFleet(t, { maxReceiveCount: 3, drainDelaySeconds: DELAY_SECONDS })
  const balancer = new ReadinessBalancer(PROBES)
  const origin = `http://127.0.0.1:${await balancer.listen()}`
  t.teardown(() => balancer.close())
  for (const proxy of fleet.proxies) balancer.add(proxy.port)
  await Promise.all(fleet.proxies.map((proxy) => balancer.waitInRotation(proxy.port, BOOT_TIMEOUT_MS)))

  const before = balancer.counts
  const started = Date.now()
  const steps: string[] = []
  const load = startLoad(origin, PATHS, { keptAliveClients: KEPT_ALIVE_CLIENTS, freshConnectionClients: FRESH_CONNECTION_CLIENTS, pauseMs: PAUSE_MS })
  let figures: LoadFigures
  try {
    await sleep(500)
    for (const proxy of fleet.proxies) {
      const signalled = Date.now()
      proxy.run.child.kill('SIGTERM')
      t.same(await proxy.run.exited, { code: 0, signal: null }, `proxy on ${proxy.port} drained and exited 0`)
      const exited = Date.now()
      balancer.remove(proxy.port)
      await fleet.restartProxy(proxy.index)
      balancer.add(proxy.port)
      await balancer.waitInRotation(proxy.port, BOOT_TIMEOUT_MS)
      steps.push(`exit after ${((exited - signalled) / 1000).toFixed(1)} s, back in rotation ${((Date.now() - exited) / 1000).toFixed(1)} s later`)
    }
    await sleep(500)
  } finally {
    figures = await load.stop()
  }
  const after = balancer.counts
  const refused = after.refused - before.refused
  const noBackend = after.noBackend - before.noBackend
  t.comment(`scenario 5: ${figures.sent} requests, ${figures.ok} ok, ${figures.failed} failed, ${refused} connections refused, ${noBackend} without a backend, `
    + `${figures.closing} answers with Connection: close, ${((Date.now() - started) / 1000).toFixed(1)} s (${steps.join('; ')})`)
  t.ok(figures.sent > 100, `a steady load ran through the restart (${figures.sent} requests)`)
  t.ok(figures.closing > 0, 'clients were told to reconnect')
  t.equal(refused, 0, '0 connections refused')
  t.equal(figures.failed, 0, `0 requests failed${figures.failures.length > 0 ? `: ${figures.failures.slice(0, 10).join('; ')}` : ''}`)
  t.equal(noBackend, 0, 'a backend was always in rotation')
})
