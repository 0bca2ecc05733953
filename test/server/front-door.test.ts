import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { freePort } from '../helpers/ports.js'
import { OFFLINE_JS_MOUNT, startTestProxy } from '../helpers/proxy.js'
import { FrontDoor } from '../../server/http/front-door.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

t.test('fixed routes of the /js mount (SPEC.md 4.1)', async (t) => {
  const proxy = await startTestProxy(t)

  const ping = await proxy.get('/js/-/ping')
  t.equal(ping.status, 200)
  t.match(ping.headers['content-type'], /^application\/json/)
  t.same(ping.json(), {})

  const search = await proxy.get('/js/-/v1/search?text=x')
  t.equal(search.status, 501)
  t.match(search.headers['content-type'], /^application\/json/)
  t.type((search.json() as { error: unknown }).error, 'string')

  for (const [method, path] of [
    ['GET', '/js/-/package/lodash/dist-tags'],
    ['GET', '/js/-/package/@scope%2Fname/dist-tags'],
    ['PUT', '/js/-/package/lodash/dist-tags/beta'],
    ['DELETE', '/js/-/package/lodash/dist-tags/beta'],
    ['PUT', '/js/-/package/@scope/name/dist-tags/beta'],
  ] as const) {
    const res = await proxy.fetch(method, path, method === 'PUT' ? { body: '"1.0.0"', headers: { 'content-type': 'application/json' } } : {})
    t.equal(res.status, 501, `${method} ${path}`)
    t.type((res.json() as { error: unknown }).error, 'string')
  }

  for (const [method, path] of [
    ['GET', '/js/-/whoami'],
    ['POST', '/js/-/ping'],
    ['DELETE', '/js/lodash'],
    ['GET', '/js/lodash/extra/segments'],
    ['GET', '/js/-/package/lodash/dist-tags/x/y'],
    ['GET', '/metrics'],
    ['GET', '/elsewhere'],
    ['GET', '/js/'],
  ] as const) {
    const res = await proxy.fetch(method, path)
    t.equal(res.status, 404, `${method} ${path}`)
    t.match(res.headers['content-type'], /^application\/json/)
    t.same(res.json(), { error: 'not found' })
  }

  const publish = await proxy.fetch('PUT', '/js/lodash', { body: '{}', headers: { 'content-type': 'application/json' } })
  t.equal(publish.status, 405, 'publish without a publication target')
})

t.test('probes: liveness and per-mount readiness (SPEC.md 2.6, 2.7, 3.1)', async (t) => {
  const plain = await startTestProxy(t)
  const live = await plain.get('/livez')
  t.equal(live.status, 200)
  t.same(live.json(), { status: 'ok', lastPoll: null })
  const ready = await plain.get('/readyz')
  t.equal(ready.status, 200)
  t.same(ready.json(), { status: 'ready', mounts: { js: 'ready' } })

  const awaiting = await startTestProxy(t, {
    document: {
      mounts: {
        js: { ...OFFLINE_JS_MOUNT.js, rules: [{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 86400 }] },
        py: { upstreams: { public: { url: 'https://upstream.invalid/' } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 86400 }] },
      },
    },
  })
  const whole = await awaiting.get('/readyz')
  t.equal(whole.status, 200, 'the py mount is ready: the process stays in rotation (SPEC.md 3.1 rule 1)')
  t.same(whole.json(), { status: 'ready', mounts: { js: 'awaiting_advisory_database', py: 'ready' } }, 'the body names each mount')
  const js = await awaiting.get('/readyz/js')
  t.equal(js.status, 503, 'a mount with DenyIfCve awaits the advisory database')
  t.same(js.json(), { status: 'not_ready', mounts: { js: 'awaiting_advisory_database' } })
  t.equal((await awaiting.get('/readyz/py')).status, 200)
  t.equal((await awaiting.get('/readyz/nope')).status, 404)
  const head = await awaiting.fetch('HEAD', '/readyz/js')
  t.equal(head.status, 503, 'HEAD on a probe has GET\'s status')
  t.equal(head.body.byteLength, 0, 'and no body')
  t.equal((await awaiting.fetch('HEAD', '/livez')).status, 200)
  t.equal((await awaiting.get('/livez')).status, 200, 'liveness is the listener alone')
})

t.test('a request that comes back carrying our own hop marker is a loop: 502', async (t) => {
  const proxy = await startTestProxy(t)
  const res = await proxy.get('/js/lodash', { via: `1.1 registry-proxy.127.0.0.1-${proxy.port}` })
  t.equal(res.status, 502)
  const ping = await proxy.get('/js/-/ping', { via: `1.1 registry-proxy.127.0.0.1-${proxy.port}` })
  t.equal(ping.status, 200, 'ping is answered locally and never loops')
})

t.test('server.compatPort: the proxy also answers HTTP/1.0 health checks on its compatibility port', async (t) => {
  const compatPort = await freePort()
  const proxy = await startTestProxy(t, { document: { server: { compatPort } } })
  const socket = connect(compatPort, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  let text = ''
  socket.on('data', (c: Buffer) => { text += c.toString('latin1') })
  socket.write('GET /readyz HTTP/1.0\r\n\r\n')
  await once(socket, 'close')
  t.match(text, /^HTTP\/1\.[01] 200 /, 'answered')
  t.notMatch(text.toLowerCase(), /transfer-encoding: chunked/, 'no chunked encoding for HTTP/1.0')
  t.match(text, /"status":"ready"/)
  t.equal(proxy.config.server.compatPort, compatPort)
})

t.test('remoteAddress is read on first use, outside the handler too, and never from an ended response', async (t) => {
  const door = new FrontDoor({ host: '127.0.0.1', port: 0, logger: new RecordingLogger() })
  const seen: { during?: string, after?: string, unread?: string } = {}
  door.route('get', '/peer', async (ex) => {
    await Promise.resolve() // after the synchronous handler: res is still valid until it ends
    seen.during = ex.remoteAddress
    ex.respond(200, { 'content-type': 'text/plain' }, 'ok')
    seen.after = ex.remoteAddress
  })
  door.route('get', '/unread', (ex) => {
    ex.respond(200, { 'content-type': 'text/plain' }, 'ok')
    seen.unread = ex.remoteAddress
  })
  const port = await door.listen()
  t.teardown(() => door.stopAccepting())
  for (const path of ['/peer', '/unread']) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`)
    t.equal(res.status, 200)
    await res.text()
  }
  t.match(seen.during, /127\.0\.0\.1$/, 'the peer address (uWS may write it IPv4-mapped)')
  t.equal(seen.after, seen.during, 'kept once read')
  t.equal(seen.unread, '', 'an ended response is not asked')
})
