/**
 * The PEP 658 `.metadata` relay of the `/py` mount (issue 32 item 6): bounded
 * by `limits.maxCoreMetadataBytes` (default 16 MiB), declared or counted,
 * and refused when the upstream answers something that is visibly not core
 * metadata (an HTML error page, JSON) instead of passing it through.
 */
import { createHash } from 'node:crypto'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import t from 'tap'
import { makeTestCa } from '../../bench/peers/tls.js'
import { startTestProxy } from '../helpers/proxy.js'

const MiB = 1024 * 1024
const DEFAULT_BOUND = 16 * MiB

interface Served { readonly type: string; readonly body: Buffer; readonly chunked?: boolean }

t.test('the .metadata relay: bounded, and never an HTML page', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const routes = new Map<string, Served>()
  const pub = createHttpsServer({ key: ca.keyPem, cert: ca.certPem }, (req, res) => {
    const hit = routes.get(req.url ?? '')
    if (hit === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no')
      return
    }
    if (hit.chunked === true) {
      // No content-length: the relay can only count.
      res.writeHead(200, { 'content-type': hit.type })
      for (let i = 0; i < hit.body.byteLength; i += MiB) res.write(hit.body.subarray(i, i + MiB))
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': hit.type, 'content-length': String(hit.body.byteLength) }).end(hit.body)
  })
  await new Promise<void>((resolve) => pub.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { pub.closeAllConnections(); pub.close(() => resolve()) }))
  const base = `https://127.0.0.1:${(pub.address() as AddressInfo).port}`

  const metadata = Buffer.from('Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n')
  const html = Buffer.from('<!DOCTYPE html><html><body>Service temporarily unavailable</body></html>')
  const oversized = Buffer.alloc(DEFAULT_BOUND + 1, 0x41)
  const served: Record<string, Served> = {
    '1.0': { type: 'application/octet-stream', body: metadata },
    '1.1': { type: 'text/html; charset=utf-8', body: html },
    '1.2': { type: 'application/octet-stream', body: oversized },
    '1.3': { type: 'application/octet-stream', body: oversized, chunked: true },
    '1.4': { type: 'text/plain', body: metadata },
  }
  const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex')
  const old = '2020-01-01T00:00:00.000000Z'
  const files = Object.entries(served).map(([version, metadataFile]) => {
    const sdist = Buffer.from(`demo ${version}`)
    routes.set(`/files/demo-${version}.tar.gz`, { type: 'application/octet-stream', body: sdist })
    routes.set(`/files/demo-${version}.tar.gz.metadata`, metadataFile)
    return { filename: `demo-${version}.tar.gz`, url: `${base}/files/demo-${version}.tar.gz`, hashes: { sha256: sha256(sdist) }, 'upload-time': old, 'core-metadata': { sha256: sha256(metadataFile.body) } }
  })
  routes.set('/simple/demo/', { type: 'application/vnd.pypi.simple.v1+json', body: Buffer.from(JSON.stringify({ meta: { 'api-version': '1.1' }, name: 'demo', files })) })

  const proxy = await startTestProxy(t, {
    document: {
      mounts: {
        py: {
          upstreams: { public: { url: `${base}/simple/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } },
          rules: [{ rule: 'AllowIfOlderThan', seconds: 86_400 }],
        },
      },
    },
  })
  const page = (await proxy.get('/py/simple/demo/', { accept: 'application/vnd.pypi.simple.v1+json' })).json() as { files: { filename: string, url: string }[] }
  const metadataPath = (version: string): string => `${new URL(page.files.find((f) => f.filename === `demo-${version}.tar.gz`)?.url ?? '').pathname}.metadata`

  // What the client receives, or how its connection ended.
  const fetchMetadata = async (version: string): Promise<{ status: number, type: string | undefined, bytes: number } | { failed: string }> => {
    try {
      const res = await request(`${proxy.url}${metadataPath(version)}`)
      const body = Buffer.from(await res.body.arrayBuffer())
      return { status: res.statusCode, type: res.headers['content-type'] as string | undefined, bytes: body.byteLength }
    } catch (error) {
      return { failed: (error as Error).message }
    }
  }

  t.match(await fetchMetadata('1.0'), { status: 200, bytes: metadata.byteLength }, 'core metadata as an octet stream')
  t.match(await fetchMetadata('1.4'), { status: 200, type: 'text/plain', bytes: metadata.byteLength }, 'core metadata as text/plain')

  const page503 = await proxy.get(metadataPath('1.1'))
  t.equal(page503.status, 503, 'an HTML page is not passed through')
  t.match(page503.body.toString(), /"error":"[^"]*not core metadata/)

  const declared = await proxy.get(metadataPath('1.2'))
  t.equal(declared.status, 500, 'a declared length over the bound: refused before any byte')
  t.match(declared.body.subarray(0, 512).toString(), /"error":"[^"]*limits\.maxCoreMetadataBytes/)

  const counted = await fetchMetadata('1.3')
  t.ok('failed' in counted || counted.bytes <= DEFAULT_BOUND, `a counted length over the bound: cut, never relayed whole (${JSON.stringify(counted)})`)

  t.match(proxy.logger.records.filter((r) => r.message === 'artifact relay anomalous').map((r) => r.data), [{ reason: 'content_type' }], 'the HTML page is logged once')
})
