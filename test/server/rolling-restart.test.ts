/**
 * A rolling restart under steady load refuses nothing (issue 30 item 5,
 * "Must show"): three proxy processes (the built service) on their own
 * ports, a scripted public upstream, one round-robin balancer in front that
 * drops a backend while its /readyz fails (test/peers/readiness-balancer.ts,
 * which says why not nginx), and clients that follow `Connection: close`
 * (test/helpers/closing-load.ts, no retries: six on kept-alive connections,
 * reconnecting after a closing answer, and two on a new connection per request).
 *
 * Each proxy in turn gets SIGTERM and exits 0, then its replacement, on a
 * port of its own (a new pod address), joins the rotation before the next
 * one stops. The replacements are booted ahead, with the first fleet and
 * before the load starts, and kept out of rotation until their turn: a boot
 * takes 20 to 30 s on the shared 2-core machine when others load it, and
 * booting each inside the restart tripled the test's time there. With the
 * lame-duck period: 0 connections refused, 0 requests failed.
 *
 * Then one proxy without the period (delay 0, the drain as it was) is
 * restarted the same way under the same load, and requests fail: its
 * listener closes at the signal while the balancer still sends it new
 * connections until its probes fail (refused), and its clients' kept-alive
 * connections, which no answer has told to close, are cut under their next
 * request when it exits (or answered 503 while it releases its upstream
 * clients). How many of each depends on which client reconnects where, so
 * only their sum is asserted.
 *
 * Every figure is printed as a tap comment (`# restart of ...`). Bounded:
 * each boot, drain and rotation change has its own timeout, the whole test
 * 5 minutes, and every proxy is killed by its pid at teardown
 * (test/helpers/service-process.ts).
 */
import t, { type Test } from 'tap'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { startLoad, type LoadFigures } from '../helpers/closing-load.js'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'
import { scriptRegistry, type FixtureVersion } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { ReadinessBalancer, type BalancerCounts } from '../peers/readiness-balancer.js'

/** The lame-duck period under test: above the balancer's worst time to drop a backend (2 x 200 ms + a 500 ms probe timeout), with room for a loaded machine. */
const DELAY_SECONDS = 3
const PROBES = { probeIntervalMs: 200, failureThreshold: 2, probeTimeoutMs: 500 }
/** Clients on kept-alive connections (the ones a rolling update can cut), and clients on a new connection per request (the ones a closed listener refuses). */
const KEPT_ALIVE_CLIENTS = 6
const FRESH_CONNECTION_CLIENTS = 2
/** Each client's pause between two requests: a steady load the shared test machine can carry beside three proxies. */
const PAUSE_MS = 40
/** Seven boots at once on the shared 2-core machine, loaded by others: one alone took 17 s at a load average of 18. */
const BOOT_TIMEOUT_MS = 150_000

const PACKAGES: readonly FixtureVersion[] = ['alpha', 'bravo', 'charlie', 'delta'].map((name) => ({ name, version: '1.0.0' }))
/** Packuments and tarballs alike: both legs of the proxy. */
const PATHS = PACKAGES.flatMap(({ name, version }) => [`/js/${name}`, `/js/${name}/-/${name}-${version}.tgz`])

interface Proxy {
  readonly port: number
  readonly run: ServiceRun
}

interface RestartFigures extends LoadFigures {
  readonly balancer: BalancerCounts
  readonly seconds: number
  /** Per proxy: seconds from SIGTERM to its exit, and from then until its replacement is in rotation. */
  readonly steps: readonly string[]
}

async function startProxy(t: Test, ca: TestCa, upstream: MisbehavingUpstream, delaySeconds: number): Promise<Proxy> {
  const port = await freePort()
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    // Clients address the balancer, not this listener: its name is one the proxy answers as (docs/deploy.md).
    SERVICE_SERVER__ALLOWED_HOSTS: '["127.0.0.1"]',
    SERVICE_SERVER__SHUTDOWN_DRAIN_TIMEOUT: '15',
    SERVICE_SERVER__DRAIN_DELAY_SECONDS: String(delaySeconds),
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstream.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
  })
  await run.waitForOutput('proxy listening', BOOT_TIMEOUT_MS)
  return { port, run }
}

/**
 * Restarts the first `replacements.length` proxies of `fleet` in turn under
 * load: SIGTERM, exit 0, then its replacement (booted, out of rotation) in
 * rotation before the next stops. The fleet's entries are replaced in place.
 */
async function rollingRestart(t: Test, fleet: Proxy[], replacements: readonly Proxy[], balancer: ReadinessBalancer, origin: string): Promise<RestartFigures> {
  const before = balancer.counts
  const started = performance.now()
  const steps: string[] = []
  const load = startLoad(origin, PATHS, { keptAliveClients: KEPT_ALIVE_CLIENTS, freshConnectionClients: FRESH_CONNECTION_CLIENTS, pauseMs: PAUSE_MS })
  let figures: LoadFigures
  try {
    // Every client has its kept-alive connection before the first stop.
    await new Promise((resolve) => setTimeout(resolve, 500))
    for (let i = 0; i < replacements.length; i++) {
      const old = fleet[i] as Proxy
      const signalled = performance.now()
      old.run.child.kill('SIGTERM')
      const exit = await old.run.exited
      const exitedAt = performance.now()
      t.same(exit, { code: 0, signal: null }, `proxy on ${old.port} drained and exited 0`)
      balancer.remove(old.port)
      const replacement = replacements[i] as Proxy
      balancer.add(replacement.port)
      await balancer.waitInRotation(replacement.port, BOOT_TIMEOUT_MS)
      fleet[i] = replacement
      steps.push(`exit after ${((exitedAt - signalled) / 1000).toFixed(1)} s, replacement in rotation ${((performance.now() - exitedAt) / 1000).toFixed(1)} s later`)
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
  } finally {
    figures = await load.stop()
  }
  const after = balancer.counts
  return {
    ...figures,
    seconds: (performance.now() - started) / 1000,
    steps,
    balancer: {
      forwarded: after.forwarded - before.forwarded,
      refused: after.refused - before.refused,
      noBackend: after.noBackend - before.noBackend,
      otherErrors: after.otherErrors,
    },
  }
}

function report(name: string, f: RestartFigures): string {
  return `restart ${name}: ${f.sent} requests sent, ${f.ok} ok, ${f.failed} failed, ${f.balancer.refused} connections refused `
    + `(${f.balancer.forwarded} forwarded, ${f.balancer.noBackend} without a backend), ${f.closing} answers with Connection: close, ${f.seconds.toFixed(1)} s (${f.steps.join('; ')})`
}

t.test('a rolling restart of 3 proxies under steady load', { timeout: 300_000 }, async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  await scriptRegistry(upstream, PACKAGES)

  const balancer = new ReadinessBalancer(PROBES)
  const origin = `http://127.0.0.1:${await balancer.listen()}`
  t.teardown(() => balancer.close())

  // The first fleet runs with the period; its replacements without, so that the second restart shows the drain as it was.
  const booted = await Promise.all([DELAY_SECONDS, DELAY_SECONDS, DELAY_SECONDS, 0, 0, 0, 0].map((delay) => startProxy(t, ca, upstream, delay)))
  const fleet = booted.slice(0, 3)
  for (const proxy of fleet) balancer.add(proxy.port)
  await Promise.all(fleet.map((proxy) => balancer.waitInRotation(proxy.port, BOOT_TIMEOUT_MS)))

  const withDelay = await rollingRestart(t, fleet, booted.slice(3, 6), balancer, origin)
  t.comment(report(`of 3 proxies with a ${DELAY_SECONDS} s lame-duck period`, withDelay))
  t.ok(withDelay.sent > 100, `a steady load ran through the restart (${withDelay.sent} requests)`)
  t.ok(withDelay.closing > 0, 'clients were told to reconnect')
  t.equal(withDelay.balancer.refused, 0, 'no connection refused')
  t.equal(withDelay.failed, 0, `no request failed${withDelay.failures.length > 0 ? `: ${withDelay.failures.slice(0, 10).join('; ')}` : ''}`)
  t.equal(withDelay.balancer.noBackend, 0, 'a backend was always in rotation')

  // One restart is enough to show it.
  const withoutDelay = await rollingRestart(t, fleet, booted.slice(6), balancer, origin)
  t.comment(report('of 1 proxy without a lame-duck period (delay 0)', withoutDelay))
  if (withoutDelay.failures.length > 0) t.comment(`failures without the period: ${withoutDelay.failures.slice(0, 10).join('; ')}`)
  t.ok(withoutDelay.sent > 100, `the same load ran through the restart without the period (${withoutDelay.sent} requests)`)
  t.ok(withoutDelay.failed + withoutDelay.balancer.refused > 0, 'without the period, the restart fails requests: what the period removes')
})
