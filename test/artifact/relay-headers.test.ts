/**
 * The relay's header allowlist (issue 11 item 2, relay half): whatever
 * headers an upstream client hands the artifact route (here a client that
 * filtered nothing), only RELAYED_HEADERS reach the client, on a relayed
 * body, a HEAD and a 304 alike; a poisoned value among them is dropped.
 * Defence in depth behind the upstream parser and its own safe subset.
 */
import t from 'tap'
import { ArtifactBody, type ArtifactBodySource, type ArtifactSink } from '../../engine/upstream/http1/artifact-body.js'
import type { ArtifactResponse } from '../../engine/upstream/http1/artifact-response.js'
import type { UpstreamClient } from '../../engine/upstream/upstream-client.js'
import { RELAYED_HEADERS } from '../../server/http/relay.js'
import { startArtifactRoute } from './harness.js'

const BODY = Buffer.from('tgz!')

/** Everything an upstream might send, valid and not. */
const HOSTILE: Record<string, string> = {
  'content-length': String(BODY.byteLength),
  'content-type': 'application/octet-stream',
  etag: '"e"',
  'last-modified': 'Thu, 01 Jan 2020 00:00:00 GMT',
  'set-cookie': 'evil=1',
  location: 'http://evil.invalid/',
  'x-powered-by': 'upstream',
  'accept-ranges': 'bytes',
  'content-range': `bytes 0-3/${BODY.byteLength}`,
  'strict-transport-security': 'max-age=1',
  vary: 'Cookie',
  'cache-control': 'max-age=1\r\nset-cookie: evil=2',
}

/** Hands the sink the bytes in one view, then the end; what an upstream connection does for a small body. */
class BytesSource implements ArtifactBodySource {
  readonly #bytes: Uint8Array
  constructor(bytes: Uint8Array) { this.#bytes = bytes }
  attach(sink: ArtifactSink): void {
    queueMicrotask(() => {
      if (sink.data(this.#bytes)) sink.end()
    })
  }
  proceed(): void {}
  want(): void {}
  abort(): void {}
}

/** A private client that passes the upstream's headers on unfiltered. */
function careless(status: number): UpstreamClient {
  const fake = {
    artifactUrl: (name: string, file: string) => new URL(`http://127.0.0.1:9/${name}/-/${file}`),
    openArtifact: async (_url: URL, options: { method?: string }): Promise<ArtifactResponse> => ({
      statusCode: status,
      headers: HOSTILE as ArtifactResponse['headers'],
      body: options.method === 'HEAD' || status === 304 ? null : new ArtifactBody(new BytesSource(BODY)),
    }),
  }
  return fake as unknown as UpstreamClient
}

const EXPECTED = {
  'content-type': 'application/octet-stream',
  etag: '"e"',
  'last-modified': 'Thu, 01 Jan 2020 00:00:00 GMT',
}

t.test('only the relayed headers reach the client, whatever the upstream client hands the route', async (t) => {
  const ok = await startArtifactRoute(t, { privateClient: careless(200) })
  const answers = {
    GET: await ok.get('/js/a/-/a-1.0.0.tgz'),
    HEAD: await ok.head('/js/a/-/a-1.0.0.tgz'),
  }
  const notModified = await startArtifactRoute(t, { privateClient: careless(304) })
  const conditional = await notModified.get('/js/a/-/a-1.0.0.tgz', { 'if-none-match': '"e"' })

  for (const [what, res] of Object.entries({ ...answers, '304': conditional })) {
    t.equal(res.status, what === '304' ? 304 : 200, `${what}: status`)
    for (const [name, value] of Object.entries(EXPECTED)) t.equal(res.headers[name], value, `${what}: ${name} relayed`)
    for (const name of Object.keys(HOSTILE)) {
      if (name === 'content-length' || (RELAYED_HEADERS as readonly string[]).includes(name) && name !== 'cache-control') continue
      t.equal(res.headers[name], undefined, `${what}: no ${name}`)
    }
    t.equal(res.headers['cache-control'], undefined, `${what}: the poisoned cache-control dropped`)
  }
  t.equal(answers.GET.headers['content-length'], String(BODY.byteLength), 'GET: the length uWS sent')
  t.ok(answers.GET.body.equals(BODY), 'GET: the bytes')
  t.equal(answers.HEAD.headers['content-length'], String(BODY.byteLength), 'HEAD: the upstream length')
  t.equal(answers.HEAD.body.byteLength, 0, 'HEAD: no body')
  t.equal(conditional.headers['content-length'], undefined, '304: no length (an undici client fails a 304 with one)')
})
