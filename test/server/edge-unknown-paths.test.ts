/**
 * With edge tokens, every path under a mount needs one, unknown paths
 * included (docs/security.md "Edge tokens", issue 32 item 6): 401 before any
 * route is matched, on the main port and the compatibility port alike; with
 * the token, an unknown path is the 404 it is.
 */
import t from 'tap'
import { request } from 'undici'
import { OFFLINE_JS_MOUNT, startTestProxy } from '../helpers/proxy.js'
import { freePort } from '../helpers/ports.js'

const TOKEN = 'edge-token-unknown-paths-0123'
const PY_MOUNT = { upstreams: { public: { url: 'https://upstream.invalid/' } }, rules: [{ rule: 'AllowIfOlderThan', seconds: 86_400 }] }
const UNKNOWN = ['/js', '/js/', '/js/-/nope', '/js/-/npm/v1/nope', '/js/a/b/c/d', '/js/x/-rev/1', '/py', '/py/', '/py/nope', '/py/simple/']

t.test('unknown paths under a mount answer 401 without a token, on both ports', async (t) => {
  const compatPort = await freePort()
  const proxy = await startTestProxy(t, { document: { server: { edgeTokens: [TOKEN], compatPort }, mounts: { ...OFFLINE_JS_MOUNT, py: PY_MOUNT } } })
  for (const origin of [proxy.url, `http://127.0.0.1:${compatPort}`]) {
    for (const path of UNKNOWN) {
      for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
        const res = await request(`${origin}${path}`, { method: method as 'GET' })
        await res.body.dump()
        t.equal(res.statusCode, 401, `${origin === proxy.url ? 'main' : 'compat'} ${method} ${path}`)
      }
    }
  }
  const known = await request(`${proxy.url}/js/-/nope`, { headers: { authorization: `Bearer ${TOKEN}` } })
  await known.body.dump()
  t.equal(known.statusCode, 404, 'with the token, an unknown path is a 404')
})
