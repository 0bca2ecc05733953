/**
 * The forward proxy (issue 32 item 3): NO_PROXY matching, the settings from
 * the configuration and the environment, then a real UpstreamClient through
 * a real CONNECT proxy on 127.0.0.1 (connect-proxy.ts) to https and http
 * servers made with the test CA: documents and artifacts tunnel to the
 * judged address, NO_PROXY goes direct, the egress policy still refuses a
 * target before the proxy hears of it, and every proxy failure is a typed
 * upstream error naming the proxy without its credential.
 */
import t from 'tap'
import { createServer, type Server } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { isServiceError } from '../../engine/errors.js'
import { BearerToken } from '../../engine/secret.js'
import { NoProxyList } from '../../engine/upstream/no-proxy.js'
import { forwardProxyOf, type ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import { METADATA_FETCH_FAILED } from '../../engine/upstream/upstream-client.js'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { codeOf, makeClient, startServer, text } from './servers.js'
import { startConnectProxy } from './connect-proxy.js'

const PROXY_SETTINGS = { environment: true } as const

function configProblem(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e) ? `${e.code}: ${e.message}` : `not a ServiceError: ${String(e)}`
  }
  return 'admitted'
}

async function readAll(body: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of body) parts.push(Buffer.from(chunk as Uint8Array))
  return Buffer.concat(parts)
}

t.test('NO_PROXY: hosts and the names under them, ports, * and IP literals', async (t) => {
  const list = NoProxyList.parse(' registry.internal, .corp.test,*.mirror.test ,10.0.0.5 cache.test:8443, [::1]:4873 ')
  t.equal(list.bypasses('registry.internal', 443), true)
  t.equal(list.bypasses('npm.registry.internal', 443), true, 'a name under the host')
  t.equal(list.bypasses('xregistry.internal', 443), false, 'a suffix that is not a label')
  t.equal(list.bypasses('corp.test', 80), true, '.corp.test matches the domain itself')
  t.equal(list.bypasses('a.b.corp.test', 80), true)
  t.equal(list.bypasses('x.mirror.test', 80), true, '*.mirror.test')
  t.equal(list.bypasses('10.0.0.5', 443), true)
  t.equal(list.bypasses('110.0.0.5', 443), false, 'an IP literal is matched whole')
  t.equal(list.bypasses('cache.test', 8443), true)
  t.equal(list.bypasses('cache.test', 443), false, 'another port')
  t.equal(list.bypasses('[::1]', 4873), true)
  t.equal(list.bypasses('public.test', 443), false)
  t.equal(NoProxyList.parse('*').bypasses('anything.test', 1), true)
  t.equal(NoProxyList.parse(undefined).bypasses('anything.test', 1), false)
})

t.test('NO_PROXY: CIDR ranges match targets written as addresses in them, never names', async (t) => {
  const list = new NoProxyList(['10.0.0.0/8, 127.0.0.0/8', '::1/128 [fd00::]/8', '192.168.1.0/33', '172.16.0.0/x'])
  t.equal(list.bypasses('10.2.3.4', 443), true)
  t.equal(list.bypasses('10.0.0.0', 80), true, 'the range\'s own address')
  t.equal(list.bypasses('11.0.0.1', 443), false)
  t.equal(list.bypasses('127.0.0.1', 4873), true, 'any port')
  t.equal(list.bypasses('[::1]', 4873), true, 'a bracketed IPv6 target')
  t.equal(list.bypasses('::2', 443), false)
  t.equal(list.bypasses('fd12::1', 443), true, 'a bracketed range')
  t.equal(list.bypasses('::ffff:10.0.0.1', 443), true, 'an IPv4-mapped address counts as its IPv4 one')
  t.equal(list.bypasses('localhost', 443), false, 'a name is not resolved to be matched')
  t.equal(list.bypasses('192.168.1.5', 443), false, 'a prefix its family does not allow matches nothing')
  t.equal(list.bypasses('172.16.0.1', 443), false, 'nor does a malformed one')
  t.same(list.entries, ['10.0.0.0/8', '127.0.0.0/8', '::1/128', '[fd00::]/8', '192.168.1.0/33', '172.16.0.0/x'], 'named at boot as given')
})

t.test('settings: the key wins, then the lower-case variable, then the upper-case one', async (t) => {
  const env = {
    https_proxy: 'http://lower:3128', HTTPS_PROXY: 'http://upper:3128', HTTP_PROXY: 'plainproxy:8080',
    NO_PROXY: 'registry.internal',
  }
  const fromEnv = forwardProxyOf(PROXY_SETTINGS, env) as ForwardProxy
  t.same(fromEnv.describe(), { https: 'http://lower:3128', http: 'http://plainproxy:8080', noProxy: ['registry.internal'] })
  t.equal(fromEnv.routeFor('https:', 'registry.internal', 443), undefined, 'NO_PROXY goes direct')
  t.equal(fromEnv.routeFor('https:', 'public.test', 443)?.label, 'http://lower:3128')
  t.equal(fromEnv.routeFor('http:', 'public.test', 80)?.label, 'http://plainproxy:8080')
  t.equal(forwardProxyOf({ environment: false }, env), undefined, 'environment: false reads no variable')
  t.equal(forwardProxyOf(PROXY_SETTINGS, {}), undefined, 'nothing set: direct')

  const keyed = forwardProxyOf({ url: 'http://proxy.internal:3128', noProxy: ['a.test'], environment: true }, env) as ForwardProxy
  t.same(keyed.describe(), { https: 'http://proxy.internal:3128', http: 'http://proxy.internal:3128', noProxy: ['a.test'] })

  const withUserinfo = forwardProxyOf(PROXY_SETTINGS, { HTTPS_PROXY: 'http://us%40er:p%3Ass@proxy.internal:3128' }) as ForwardProxy
  const route = withUserinfo.routeFor('https:', 'public.test', 443)
  t.equal(route?.label, 'http://proxy.internal:3128', 'the label never carries the credential')
  t.equal(route?.credential?.reveal(), 'us@er:p:ss', 'the variable\'s userinfo becomes the secret')
  t.equal(JSON.stringify(withUserinfo.describe()).includes('p:ss'), false)

  t.match(configProblem(() => forwardProxyOf({ url: 'http://u:p@proxy.internal:3128', environment: true }, {})), /^CONFIG_INVALID: egress.proxy.url: .*credential/)
  t.match(configProblem(() => forwardProxyOf({ url: 'https://proxy.internal:3128', environment: true }, {})), /^CONFIG_INVALID: egress.proxy.url: .*http:\/\//)
  t.match(configProblem(() => forwardProxyOf(PROXY_SETTINGS, { HTTPS_PROXY: 'http://proxy.internal:3128/path' })), /^CONFIG_INVALID: environment HTTPS_PROXY/)
})

t.test('through a real CONNECT proxy', async (t) => {
  const ca: TestCa = await makeTestCa()
  t.teardown(() => ca.remove())
  const tarball = Buffer.alloc(3 * 1024 * 1024 + 17, 0x5a)
  const up = await startServer(t, (req, res) => {
    if ((req.url ?? '').endsWith('.tgz')) { res.setHeader('content-length', tarball.byteLength); res.end(tarball); return }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ name: 'left-pad' }))
  }, ca)
  const localhost = `https://localhost:${up.port}/`
  const artifact = new URL(`${localhost}left-pad/-/left-pad-1.0.0.tgz`)
  const judged = `127.0.0.1:${up.port}`
  const proxyOf = (url: string, extra: { credential?: string, noProxy?: string[] } = {}): ForwardProxy => forwardProxyOf({
    url, environment: false, ...(extra.noProxy === undefined ? {} : { noProxy: extra.noProxy }),
    ...(extra.credential === undefined ? {} : { credential: new BearerToken(extra.credential) }),
  }, {}) as ForwardProxy

  t.test('documents and artifacts tunnel to the judged address; the name stays in Host and TLS', async (t) => {
    const proxy = await startConnectProxy(t)
    const before = up.seen.length
    const { client } = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url) })
    const doc = await client.fetchDocument('left-pad')
    t.equal(doc.kind === 'document' ? text(doc.chunks) : doc.kind, '{"name":"left-pad"}')
    const res = await client.openArtifact(artifact, { method: 'GET' })
    t.equal(res.statusCode, 200)
    // Read slowly, so the tunnelled connection's reads meet backpressure.
    const body = res.body
    if (body === null) { t.fail('no body'); return }
    let received = 0
    const chunks: Buffer[] = []
    for await (const chunk of body) {
      chunks.push(Buffer.from(chunk as Uint8Array))
      received += (chunk as Uint8Array).byteLength
      if (chunks.length % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    }
    t.equal(received, tarball.byteLength)
    t.equal(Buffer.compare(Buffer.concat(chunks), tarball), 0, 'the artifact bytes verbatim')
    // A kept-alive tunnelled connection serves the next artifact.
    const again = await client.openArtifact(artifact, { method: 'GET' })
    t.equal((again.body === null ? Buffer.alloc(0) : await readAll(again.body)).byteLength, tarball.byteLength)
    t.same(proxy.targets, [judged, judged], 'one tunnel for documents, one for artifacts, both to the judged address')
    t.same(proxy.plain, [], 'no absolute-form request')
    t.equal(up.seen.length - before, 3)
    t.equal(up.seen[before]?.headers.host, `localhost:${up.port}`, 'Host keeps the name')
  })

  t.test('a plain http private upstream tunnels too, asking for its name', async (t) => {
    const proxy = await startConnectProxy(t)
    const plain = await startServer(t, (_req, res) => { res.end('{"name":"left-pad"}') })
    const { client } = makeClient(t, { url: `http://localhost:${plain.port}/`, trusted: true, forwardProxy: proxyOf(proxy.url) })
    t.equal((await client.fetchDocument('left-pad')).kind, 'document')
    const res = await client.openArtifact(new URL(`http://localhost:${plain.port}/left-pad/-/left-pad-1.0.0.tgz`), { method: 'GET' })
    t.equal(res.body === null ? '' : (await readAll(res.body)).toString(), '{"name":"left-pad"}')
    t.same(proxy.targets, [`localhost:${plain.port}`, `localhost:${plain.port}`], 'the trusted side asks for the name')
  })

  t.test('NO_PROXY goes direct', async (t) => {
    const proxy = await startConnectProxy(t)
    const { client } = makeClient(t, {
      url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url, { noProxy: ['localhost'] }),
    })
    t.equal((await client.fetchDocument('left-pad')).kind, 'document')
    const res = await client.openArtifact(artifact, { method: 'HEAD' })
    t.equal(res.statusCode, 200)
    t.same(proxy.targets, [], 'the proxy heard nothing')
  })

  t.test('a target the egress policy refuses is refused before the proxy hears of it', async (t) => {
    const proxy = await startConnectProxy(t)
    const { client } = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, forwardProxy: proxyOf(proxy.url) })
    t.equal(await codeOf(client.fetchDocument('left-pad')), 'EGRESS_ADDRESS_INTERNAL', 'an internal address without allowInternalRanges')
    t.equal(await codeOf(client.openArtifact(artifact, { method: 'GET' })), 'EGRESS_ADDRESS_INTERNAL')
    t.equal(await codeOf(client.openArtifact(new URL('https://elsewhere.test/a.tgz'), { method: 'GET' })), 'EGRESS_REFUSED', 'off the allowlist')
    t.equal(await codeOf(client.openArtifact(new URL(`https://localhost:${up.port + 1}/a/-/a-1.0.0.tgz`), { method: 'GET' })), 'TARBALL_HOST_REFUSED', 'another port')
    t.same(proxy.targets, [], 'the proxy never saw a refused target')
  })

  t.test('the credential is sent as Proxy-Authorization: Basic; a wrong one is EGRESS_PROXY_REFUSED 407', async (t) => {
    const proxy = await startConnectProxy(t, { credential: 'fleet:s3cret' })
    const good = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url, { credential: 'fleet:s3cret' }) })
    t.equal((await good.client.fetchDocument('left-pad')).kind, 'document')
    const res = await good.client.openArtifact(artifact, { method: 'HEAD' })
    t.equal(res.statusCode, 200)
    t.equal(proxy.authorizations[0], `Basic ${Buffer.from('fleet:s3cret').toString('base64')}`)

    const bad = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url, { credential: 'fleet:wrong' }) })
    const err = await bad.client.fetchDocument('left-pad').catch((e: unknown) => e)
    t.ok(isServiceError(err, 'EGRESS_PROXY_REFUSED'), 'documents')
    t.equal(isServiceError(err) ? err.status : 0, 502)
    t.match(isServiceError(err) ? err.data : {}, { proxy: proxy.url, status: 407, target: judged })
    const line = bad.logger.find(METADATA_FETCH_FAILED)[0]
    t.match(line?.data, { code: 'EGRESS_PROXY_REFUSED', proxy: proxy.url, proxyStatus: 407 }, 'logged, naming the proxy and its answer')
    t.equal(bad.counters.get('connection'), 1)
    t.equal(JSON.stringify([err, bad.logger.find(METADATA_FETCH_FAILED)]).includes('wrong'), false, 'no credential in the error or the log')
    t.equal(await codeOf(bad.client.openArtifact(artifact, { method: 'GET' })), 'EGRESS_PROXY_REFUSED', 'artifacts')
    const none = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url) })
    t.equal(await codeOf(none.client.fetchDocument('left-pad')), 'EGRESS_PROXY_REFUSED', 'no credential at all')
  })

  t.test('a proxy that refuses the target (403, 502) is EGRESS_PROXY_REFUSED', async (t) => {
    for (const status of [403, 502]) {
      const proxy = await startConnectProxy(t, { refuseWith: status })
      const { client } = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(proxy.url) })
      const err = await client.openArtifact(artifact, { method: 'GET' }).catch((e: unknown) => e)
      t.ok(isServiceError(err, 'EGRESS_PROXY_REFUSED'), `${status}`)
      t.equal(isServiceError(err) ? err.data?.['status'] : 0, status)
    }
  })

  t.test('an unreachable proxy is EGRESS_PROXY_UNREACHABLE; a silent one EGRESS_PROXY_TIMEOUT 504', async (t) => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const deadPort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const dead = makeClient(t, { url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(`http://127.0.0.1:${deadPort}`) })
    const err = await dead.client.fetchDocument('left-pad').catch((e: unknown) => e)
    t.ok(isServiceError(err, 'EGRESS_PROXY_UNREACHABLE'))
    t.match(isServiceError(err) ? err.data : {}, { proxy: `http://127.0.0.1:${deadPort}`, code: 'ECONNREFUSED' })
    t.equal(await codeOf(dead.client.openArtifact(artifact, { method: 'GET' })), 'EGRESS_PROXY_UNREACHABLE')

    const held = new Set<Socket>()
    const silent: Server = createServer((socket) => { held.add(socket) })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => { for (const s of held) s.destroy(); silent.close(() => resolve()) }))
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
    const slow = makeClient(t, {
      url: localhost, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], forwardProxy: proxyOf(silentUrl), timeouts: { connectMs: 300 },
    })
    const late = await slow.client.fetchDocument('left-pad').catch((e: unknown) => e)
    t.ok(isServiceError(late, 'EGRESS_PROXY_TIMEOUT'), 'documents')
    t.equal(isServiceError(late) ? late.status : 0, 504)
    t.equal(slow.counters.get('timeout'), 1)
    t.equal(await codeOf(slow.client.openArtifact(artifact, { method: 'GET' })), 'EGRESS_PROXY_TIMEOUT', 'artifacts')
  })
})

t.test('the mirror target and the publish target are written through the proxy, asking for their names', async (t) => {
  const { MirrorTarget } = await import('../../engine/mirror/mirror-target.js')
  const { PublishTarget } = await import('../../engine/publish/publish-target.js')
  const target = await startServer(t, (req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.method === 'GET') { res.statusCode = 404; res.end('{}'); return }
      res.setHeader('content-type', 'application/json')
      res.end('{"ok":true}')
    })
  })
  const forward = await startConnectProxy(t)
  const proxy = forwardProxyOf({ environment: true }, { HTTP_PROXY: forward.url }) as ForwardProxy
  const mirror = new MirrorTarget({ url: `http://localhost:${target.port}/`, maxDocumentBytes: 1024 * 1024, forwardProxy: proxy })
  t.teardown(() => mirror.close())
  t.same(await mirror.lookup('left-pad', '1.0.0'), { kind: 'absent' })
  t.equal((await mirror.publish('left-pad', (async function * () { yield Buffer.from('{}') })())).status, 200)
  const publish = new PublishTarget({ url: `http://localhost:${target.port}/`, token: undefined, proxyId: 'proxy-test', forwardProxy: proxy })
  t.teardown(() => publish.close())
  const answer = await publish.publish('left-pad', Buffer.from('{}'), AbortSignal.timeout(10_000))
  t.equal(answer.status, 200)
  t.equal(target.seen.length, 3)
  t.ok(forward.targets.length >= 1 && forward.targets.every((a) => a === `localhost:${target.port}`), `tunnels to the target by name: ${forward.targets.join(', ')}`)

  const direct = forwardProxyOf({ environment: true }, { HTTP_PROXY: forward.url, NO_PROXY: 'localhost' }) as ForwardProxy
  const before = forward.targets.length
  const bypass = new MirrorTarget({ url: `http://localhost:${target.port}/`, maxDocumentBytes: 1024 * 1024, forwardProxy: direct })
  t.teardown(() => bypass.close())
  t.same(await bypass.lookup('left-pad', '1.0.0'), { kind: 'absent' })
  t.equal(forward.targets.length, before, 'NO_PROXY: direct')
})
