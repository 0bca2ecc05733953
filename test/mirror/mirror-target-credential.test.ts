/**
 * A mirror target that names a credential (`mounts.<m>.mirror.credential`,
 * issue 13): each lookup and publish carries the token the source mints at
 * that moment (a rotated token is picked up), and a credential refusal is a
 * transient target failure (the job is retried), never a request without
 * authorization.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { ServiceError, isServiceError } from '../../engine/errors.js'
import { MirrorTarget } from '../../engine/mirror/mirror-target.js'
import { BearerToken } from '../../engine/secret.js'

const seen: { method: string, authorization: string | undefined }[] = []
const server = createServer((req, res) => {
  seen.push({ method: req.method ?? '', authorization: req.headers.authorization })
  req.resume()
  req.on('end', () => {
    res.writeHead(req.method === 'GET' ? 404 : 201, { 'content-type': 'application/json' })
    res.end('{}')
  })
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise((resolve) => server.close(resolve)))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

t.test('each request carries the token minted for it', async (t) => {
  let n = 0
  const target = new MirrorTarget({ url, maxDocumentBytes: 1024 * 1024, credential: { token: async () => new BearerToken(`minted-${++n}`) } })
  t.teardown(() => target.close())
  t.same(await target.lookup('pkg', '1.0.0'), { kind: 'absent' })
  async function* body(): AsyncGenerator<string> { yield '{}' }
  t.equal((await target.publish('pkg', body())).status, 201)
  t.same(seen.map((s) => s.authorization), ['Bearer minted-1', 'Bearer minted-2'])
})

t.test('a credential refusal is a transient target failure; nothing is sent', async (t) => {
  seen.length = 0
  const target = new MirrorTarget({ url, maxDocumentBytes: 1024 * 1024, credential: { token: async () => { throw new ServiceError('CREDENTIAL_BREAKER_OPEN') } } })
  t.teardown(() => target.close())
  const error = await target.lookup('pkg', '1.0.0').then(() => undefined, (e: unknown) => e)
  t.ok(isServiceError(error, 'UPSTREAM_UNAVAILABLE'), 'retried as a transient failure')
  t.same(seen, [], 'no request without authorization')
})
