/**
 * The AWS SDK clients through the forward proxy (issue 32 item 3,
 * engine/upstream/proxied-agents.ts): the mirror queue (SqsQueue) on the
 * real SQS peer and the object store (S3ObjectStore) on the real S3 peer,
 * each behind a counting TCP relay, with the CONNECT proxy of
 * connect-proxy.ts. With the proxy configured, every connection the peer
 * accepts is one of the proxy's tunnels (the relay's count equals the
 * proxy's); with the peer in NO_PROXY, none is. The peers are on loopback,
 * an internal range: the operator's own endpoints are not judged by the
 * egress policy. The https Agent is shown on a test-CA server, and the
 * Dredger's inventory (an undici Agent over the same tunnel) on a plain one.
 */
import t, { type Test } from 'tap'
import { request as httpsRequest } from 'node:https'
import { connect as netConnect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { Readable } from 'node:stream'
import { NpmInventory } from '../../engine/dredger/npm-inventory.js'
import { SqsQueue } from '../../engine/queue/sqs-queue.js'
import { createS3Client, S3ObjectStore } from '../../engine/store/s3-object-store.js'
import { forwardProxyOf, type ForwardProxy } from '../../engine/upstream/forward-proxy.js'
import { proxiedAgents } from '../../engine/upstream/proxied-agents.js'
import { startSqs } from '../../bench/peers/sqs.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startS3 } from '../peers/s3.js'
import { startConnectProxy } from './connect-proxy.js'
import { startServer } from './servers.js'

interface Relay {
  readonly port: number
  /** TCP connections accepted so far. */
  connections(): number
}

/** A TCP relay to `port` that counts the connections it accepts: what the peer behind it was reached by. */
async function startRelay(t: Test, port: number): Promise<Relay> {
  let connections = 0
  const sockets = new Set<Socket>()
  const track = (socket: Socket): void => { sockets.add(socket); socket.on('close', () => sockets.delete(socket)) }
  const server: Server = createServer((client) => {
    connections++
    track(client)
    const upstream = netConnect({ host: '127.0.0.1', port })
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  return { port: (server.address() as AddressInfo).port, connections: () => connections }
}

function proxyFor(url: string, noProxy: string[] = []): ForwardProxy {
  const proxy = forwardProxyOf({ url, noProxy, environment: false }, {})
  if (proxy === undefined) throw new Error('no forward proxy')
  return proxy
}

const sqs = await startSqs()
t.teardown(() => sqs.stop())
const s3 = await startS3()
t.teardown(() => s3.stop())

// SqsQueue takes its credentials from the SDK's default chain, as in production.
const keys = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] }
process.env['AWS_ACCESS_KEY_ID'] = sqs.accessKeyId
process.env['AWS_SECRET_ACCESS_KEY'] = sqs.secretAccessKey
t.teardown(() => {
  if (keys.id === undefined) delete process.env['AWS_ACCESS_KEY_ID']
  else process.env['AWS_ACCESS_KEY_ID'] = keys.id
  if (keys.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY']
  else process.env['AWS_SECRET_ACCESS_KEY'] = keys.secret
})

async function sqsRoundTrip(t: Test, forwardProxy: ForwardProxy | undefined, relay: Relay): Promise<void> {
  const endpoint = `http://127.0.0.1:${relay.port}`
  const queue = new SqsQueue({ url: `${endpoint}/123456789012/${sqs.queueName}`, region: sqs.region, endpoint, forwardProxy })
  t.teardown(() => queue.close())
  const body = `job-${Math.random()}`
  await queue.send(body)
  const [message] = await queue.receive({ max: 1, visibilitySeconds: 30 })
  t.equal(message?.body, body, 'the message went and came back')
  if (message !== undefined) await queue.delete(message.receiptHandle)
}

async function s3RoundTrip(t: Test, forwardProxy: ForwardProxy | undefined, relay: Relay): Promise<void> {
  const client = createS3Client({ region: s3.region, endpoint: `http://127.0.0.1:${relay.port}`, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }, agents: forwardProxy === undefined ? undefined : proxiedAgents(forwardProxy) })
  t.teardown(() => client.destroy())
  const store = new S3ObjectStore({ client, bucket: s3.bucket, prefix: 'proxied/' })
  const key = `object-${Math.random()}`
  await store.put(key, Readable.from([Buffer.from('through the tunnel')]), {})
  const read = await store.get(key)
  const parts: Buffer[] = []
  for await (const chunk of read?.stream ?? []) parts.push(Buffer.from(chunk as Uint8Array))
  t.equal(Buffer.concat(parts).toString(), 'through the tunnel', 'the object went and came back')
}

const ROUND_TRIPS = { SQS: sqsRoundTrip, S3: s3RoundTrip } as const

for (const [peer, roundTrip] of Object.entries(ROUND_TRIPS)) {
  t.test(`${peer}: with a forward proxy, every connection to the endpoint is a CONNECT tunnel`, async (t) => {
    const proxy = await startConnectProxy(t)
    const relay = await startRelay(t, peer === 'SQS' ? Number(new URL(sqs.endpoint).port) : Number(new URL(s3.endpoint).port))
    await roundTrip(t, proxyFor(proxy.url), relay)
    t.ok(proxy.targets.length >= 1, 'the proxy opened a tunnel')
    t.same(new Set(proxy.targets), new Set([`127.0.0.1:${relay.port}`]), 'every tunnel asked for the endpoint, by the name it was configured with')
    t.equal(relay.connections(), proxy.targets.length, 'the endpoint accepted no connection but the tunnels')
    t.same(proxy.plain, [], 'no absolute-form request')
  })

  t.test(`${peer}: with the endpoint in NO_PROXY, it is reached directly`, async (t) => {
    const proxy = await startConnectProxy(t)
    const relay = await startRelay(t, peer === 'SQS' ? Number(new URL(sqs.endpoint).port) : Number(new URL(s3.endpoint).port))
    // By host:port for one, by a CIDR range for the other.
    await roundTrip(t, proxyFor(proxy.url, peer === 'SQS' ? [`127.0.0.1:${relay.port}`] : ['127.0.0.0/8']), relay)
    t.equal(proxy.targets.length, 0, 'the proxy heard nothing')
    t.ok(relay.connections() >= 1, 'the endpoint was reached directly')
  })
}

t.test('SQS: a proxy that refuses the tunnel fails the call, and nothing reaches the endpoint', async (t) => {
  const proxy = await startConnectProxy(t, { refuseWith: 403 })
  const relay = await startRelay(t, Number(new URL(sqs.endpoint).port))
  const endpoint = `http://127.0.0.1:${relay.port}`
  const queue = new SqsQueue({ url: `${endpoint}/123456789012/${sqs.queueName}`, region: sqs.region, endpoint, forwardProxy: proxyFor(proxy.url), sendTimeoutMs: 5_000 })
  t.teardown(() => queue.close())
  await t.rejects(queue.send('refused'), { code: 'QUEUE_FAILURE' })
  t.ok(proxy.targets.length >= 1, 'the tunnel was asked for')
  t.equal(relay.connections(), 0)
})

t.test('the https Agent: TLS to the endpoint over the tunnel, its name and certificate checked', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const server = await startServer(t, (_req, res) => { res.end('secure') }, ca)
  const proxy = await startConnectProxy(t)
  const { httpAgent, httpsAgent } = proxiedAgents(proxyFor(proxy.url))
  t.teardown(() => { httpAgent.destroy(); httpsAgent.destroy() })
  const get = (): Promise<string> => new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: server.port, path: '/', agent: httpsAgent, ca: ca.caPem }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => resolve(Buffer.concat(parts).toString()))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
  t.equal(await get(), 'secure')
  t.equal(await get(), 'secure', 'a second request on the kept-alive tunnel')
  t.same(proxy.targets, [`127.0.0.1:${server.port}`], 'one tunnel, kept alive')
  t.equal(server.connections(), 1, 'one TLS connection, through it')
})

t.test('the Dredger\'s inventory reads through the tunnel, and directly when NO_PROXY names it', async (t) => {
  const registry = await startServer(t, (_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ name: 'left-pad', _rev: '1-a', versions: { '1.0.0': {}, '1.1.0': {} } }))
  })
  for (const [how, noProxy, tunnels] of [['through the proxy', [], 1], ['in NO_PROXY', ['127.0.0.1'], 0]] as const) {
    const proxy = await startConnectProxy(t)
    const inventory = new NpmInventory({ name: 'mirror_target', url: registry.origin, maxDocumentBytes: 1 << 20, forwardProxy: proxyFor(proxy.url, [...noProxy]) })
    t.teardown(() => inventory.close())
    t.same(await inventory.versions('left-pad'), ['1.0.0', '1.1.0'], `${how}: the versions read`)
    t.equal(proxy.targets.length, tunnels, `${how}: ${tunnels} tunnel(s)`)
  }
  t.equal(registry.connections(), 2, 'one connection each: the tunnelled one and the direct one')
})
