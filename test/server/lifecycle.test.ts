/**
 * The graceful drain on a real child process (SPEC.md 3.1, 7.2): a request
 * in flight when SIGTERM arrives completes, /readyz turns 503 while /livez
 * stays 200 and responses carry `Connection: close`, new connections are
 * refused, the process exits 0; a second signal ends it at once. With a
 * lame-duck period (`server.drainDelaySeconds`; the helper sets 0 unless a
 * test asks), new connections are answered until `listener closed`.
 */
import t, { type Test } from 'tap'
import { Client, request } from 'undici'
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'

const document = (name: string): string => JSON.stringify({
  name,
  versions: { '1.0.0': { name, version: '1.0.0', dist: { tarball: `https://127.0.0.1/${name}/-/${name}-1.0.0.tgz`, integrity: 'sha512-AAAA' } } },
  'dist-tags': { latest: '1.0.0' },
  time: { created: '2020-01-01T00:00:00.000Z', modified: '2020-01-01T00:00:00.000Z', '1.0.0': '2020-01-01T00:00:00.000Z' },
})

async function start(t: Test, ca: TestCa, upstream: MisbehavingUpstream, env: Record<string, string> = {}): Promise<{ run: ServiceRun; url: string }> {
  const port = await freePort()
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstream.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]',
    ...env,
  })
  await run.waitForOutput('proxy listening')
  return { run, url: `http://127.0.0.1:${port}` }
}

function upstreamCount(upstream: MisbehavingUpstream, path: string): number {
  return upstream.requests.filter((r) => r.url === path).length
}

/**
 * Waits until the upstream has seen more requests for `path` than `before`.
 * The subtests share one upstream, so an earlier subtest's request for the same path must not count: SIGTERM sent before
 * this request reached the proxy would find nothing in flight, the drain
 * would finish at once and the held connection would be reset.
 */
async function upstreamSawMore(upstream: MisbehavingUpstream, path: string, before: number): Promise<void> {
  for (let i = 0; i < 200 && upstreamCount(upstream, path) <= before; i++) await new Promise((r) => setTimeout(r, 50))
  if (upstreamCount(upstream, path) <= before) throw new Error(`the upstream never saw ${path}`)
}

t.test('drain', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  upstream.script('/slow-pkg', { kind: 'slow', body: document('slow-pkg'), firstByteDelayMs: 2000 })

  t.test('in-flight work finishes, new connections are refused, exit 0', async (t) => {
    const { run, url } = await start(t, ca, upstream)
    const held = new Client(url, { keepAliveTimeout: 60_000 })
    t.teardown(() => held.destroy())
    const ready = await held.request({ path: '/readyz', method: 'GET' })
    t.equal(ready.statusCode, 200)
    await ready.body.dump()

    const before = upstreamCount(upstream, '/slow-pkg')
    const inFlight = request(`${url}/js/slow-pkg`)
    await upstreamSawMore(upstream, '/slow-pkg', before)
    run.child.kill('SIGTERM')
    await run.waitForOutput('drain started')

    const draining = await held.request({ path: '/readyz', method: 'GET' })
    t.equal(draining.statusCode, 503, '/readyz is 503 while draining')
    t.equal(draining.headers['connection'], 'close', 'responses carry Connection: close')
    t.match(await draining.body.json(), { status: 'not_ready', mounts: { js: 'draining' } })

    const refused = await request(`${url}/livez`).then(() => 'answered', (error: NodeJS.ErrnoException) => error.code)
    t.equal(refused, 'ECONNREFUSED', 'the listen socket no longer accepts')

    const finished = await inFlight
    t.equal(finished.statusCode, 200, 'the request in flight completes')
    t.match(await finished.body.json(), { name: 'slow-pkg' })
    const { code } = await run.exited
    t.equal(code, 0)
    t.match(run.stdout(), /drain completed/)
  })

  t.test('/livez stays 200 while draining', async (t) => {
    const { run, url } = await start(t, ca, upstream)
    const held = new Client(url, { keepAliveTimeout: 60_000 })
    t.teardown(() => held.destroy())
    await (await held.request({ path: '/livez', method: 'GET' })).body.dump()
    const before = upstreamCount(upstream, '/slow-pkg')
    const inFlight = request(`${url}/js/slow-pkg`).catch(() => undefined)
    await upstreamSawMore(upstream, '/slow-pkg', before)
    run.child.kill('SIGTERM')
    await run.waitForOutput('drain started')
    const live = await held.request({ path: '/livez', method: 'GET' })
    t.equal(live.statusCode, 200)
    await live.body.dump()
    await inFlight
    t.equal((await run.exited).code, 0)
  })

  t.test('lame duck: new connections answered with Connection: close until the listener closes, then refused; exit 0', async (t) => {
    const { run, url } = await start(t, ca, upstream, { SERVICE_SERVER__DRAIN_DELAY_SECONDS: '1.5' })
    run.child.kill('SIGTERM')
    await run.waitForOutput('drain started')
    t.match(run.stdout(), /"delaySeconds":1\.5/)
    const ready = await request(`${url}/readyz`)
    t.equal(ready.statusCode, 503, '/readyz is 503 at once')
    t.equal(ready.headers['connection'], 'close')
    await ready.body.dump()
    const live = await request(`${url}/livez`)
    t.equal(live.statusCode, 200, 'a new connection is still accepted and answered')
    t.equal(live.headers['connection'], 'close')
    await live.body.dump()
    await run.waitForOutput('listener closed')
    const refused = await request(`${url}/livez`).then(() => 'answered', (error: NodeJS.ErrnoException) => error.code)
    t.equal(refused, 'ECONNREFUSED', 'refused once the period is over')
    t.same(await run.exited, { code: 0, signal: null })
    t.match(run.stdout(), /drain completed/)
  })

  t.test('a second signal stops at once', async (t) => {
    upstream.script('/very-slow-pkg', { kind: 'slow', body: document('very-slow-pkg'), firstByteDelayMs: 60_000 })
    const { run, url } = await start(t, ca, upstream)
    const before = upstreamCount(upstream, '/very-slow-pkg')
    const inFlight = request(`${url}/js/very-slow-pkg`).catch((error: Error) => error)
    await upstreamSawMore(upstream, '/very-slow-pkg', before)
    run.child.kill('SIGTERM')
    await run.waitForOutput('drain started')
    run.child.kill('SIGTERM')
    const { code } = await run.exited
    t.equal(code, 3, 'the hard stop bypasses the drain')
    await inFlight
  })
})
