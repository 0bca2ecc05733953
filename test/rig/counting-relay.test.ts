import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Agent, request } from 'undici'
import { CountingRelay } from '../../bench/scenarios/install-bytes.js'

t.test('a chunked request body is followed, so the requests after it on the connection are still seen', async (t) => {
  const bodies: string[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString('utf8') })
    req.on('end', () => {
      bodies.push(body)
      res.writeHead(req.method === 'PUT' ? 201 : 404, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const relay = await CountingRelay.start((server.address() as AddressInfo).port)
  const agent = new Agent({ connections: 1 })
  t.teardown(async () => {
    await agent.close()
    await relay.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  async function* streamed(): AsyncGenerator<string> {
    yield '{"name":'
    yield '"x","data":"'
    yield 'y'.repeat(70_000)
    yield '"}'
  }
  const put = await request(`${relay.origin}/x`, { method: 'PUT', body: Readable.from(streamed()), dispatcher: agent, headers: { 'content-type': 'application/json' } })
  await put.body.dump()
  const get = await request(`${relay.origin}/y`, { dispatcher: agent, headers: { accept: 'application/vnd.npm.install-v1+json' } })
  await get.body.dump()
  const count = relay.take()
  t.equal(count.connections, 1, 'one keep-alive connection')
  t.same(count.exchanges.map((e) => [e.method, e.path, e.status]), [['PUT', '/x', 201], ['GET', '/y', 404]])
  t.equal(count.exchanges[1]?.accept, 'application/vnd.npm.install-v1+json')
  t.equal(bodies[0]?.length, 70_000 + '{"name":"x","data":""}'.length, 'the body reached the server whole')
  t.ok(relay.lastActivityAt > 0)
})
