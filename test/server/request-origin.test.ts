/**
 * `{base_url}` per request when `server.baseUrl` is unset (issue 32 item 5,
 * server/http/request-origin.ts): the Host the client used, or a trusted
 * reverse proxy's X-Forwarded-Host and -Proto, checked against the
 * listener's own names and ports and `server.allowedHosts`.
 */
import t from 'tap'
import { parseHostAndPort } from '../../engine/config/host-and-port.js'
import { isServiceError } from '../../engine/errors.js'
import { listenerNames, RequestOrigin, type OriginSource } from '../../server/http/request-origin.js'

const request = (headers: Record<string, string>, remoteAddress = '192.0.2.7'): OriginSource => ({
  header: (name) => headers[name],
  remoteAddress,
})

const origin = (over: Partial<ConstructorParameters<typeof RequestOrigin>[0]> = {}): RequestOrigin => new RequestOrigin({
  configured: undefined,
  fallback: 'http://localhost:4873',
  ownNames: listenerNames('0.0.0.0', 'build-host', { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true, netmask: '255.0.0.0', mac: '', cidr: null }], eth0: [{ address: '10.1.2.3', family: 'IPv4', internal: false, netmask: '255.0.0.0', mac: '', cidr: null }, { address: 'fe80::1', family: 'IPv6', internal: false, netmask: 'ffff::', mac: '', cidr: null, scopeid: 2 }] }),
  ownPorts: [4873],
  allowedHosts: [],
  trustedProxies: [],
  ...over,
})

const refused = (fn: () => unknown): boolean => {
  try {
    fn()
    return false
  } catch (error) {
    return isServiceError(error, 'HOST_NOT_ALLOWED') && error.status === 400
  }
}

t.test('host and port: canonical forms only', async (t) => {
  t.same(parseHostAndPort('LocalHost:4873'), { host: 'localhost', port: 4873 })
  t.same(parseHostAndPort('[::1]:8080'), { host: '[::1]', port: 8080 })
  t.same(parseHostAndPort('registry.example'), { host: 'registry.example', port: undefined })
  for (const bad of ['', 'a b', 'evil.example@localhost', 'localhost/x', 'localhost:0', 'localhost:99999', '127.1', '[0::1]', 'h\u00e9.example', 'localhost:', '[::1']) {
    t.equal(parseHostAndPort(bad), undefined, JSON.stringify(bad))
  }
})

t.test('the listener\'s own names: loopback, host name, interface addresses, on its own ports', async (t) => {
  const o = origin()
  t.equal(o.baseUrlOf(request({ host: '127.0.0.1:4873' })), 'http://127.0.0.1:4873')
  t.equal(o.baseUrlOf(request({ host: 'localhost:4873' })), 'http://localhost:4873')
  t.equal(o.baseUrlOf(request({ host: '[::1]:4873' })), 'http://[::1]:4873')
  t.equal(o.baseUrlOf(request({ host: 'Build-Host:4873' })), 'http://build-host:4873', 'lower-cased')
  t.equal(o.baseUrlOf(request({ host: '10.1.2.3:4873' })), 'http://10.1.2.3:4873')
  t.ok(refused(() => o.baseUrlOf(request({ host: '127.0.0.1:9999' }))), 'another port of a loopback name')
  t.ok(refused(() => o.baseUrlOf(request({ host: 'localhost' }))), 'port 80 is not the listener\'s')
  t.ok(refused(() => o.baseUrlOf(request({ host: 'evil.example:4873' }))), 'a forged host')
  t.ok(refused(() => o.baseUrlOf(request({ host: 'evil.example/x' }))), 'not a host at all')
  t.equal(o.baseUrlOf(request({})), 'http://localhost:4873', 'no Host (HTTP/1.0): the derived default')
  t.equal(origin({ configured: 'https://registry.example' }).baseUrlOf(request({ host: 'evil.example' })), 'https://registry.example', 'a configured base wins, whatever the Host')
})

t.test('server.allowedHosts: a name on any port, or host:port exactly', async (t) => {
  const o = origin({ allowedHosts: ['proxy.test', 'mapped.example:8080'] })
  t.equal(o.baseUrlOf(request({ host: 'proxy.test' })), 'http://proxy.test')
  t.equal(o.baseUrlOf(request({ host: 'proxy.test:9000' })), 'http://proxy.test:9000')
  t.equal(o.baseUrlOf(request({ host: 'mapped.example:8080' })), 'http://mapped.example:8080')
  t.ok(refused(() => o.baseUrlOf(request({ host: 'mapped.example:8081' }))))
})

t.test('X-Forwarded-* only from server.trustedProxies', async (t) => {
  const o = origin({ allowedHosts: ['registry.example'], trustedProxies: ['10.0.0.0/8', '::1'] })
  const forwarded = { host: '127.0.0.1:4873', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'registry.example, inner.example' }
  t.equal(o.baseUrlOf(request(forwarded, '10.9.9.9')), 'https://registry.example', 'the first element, from a trusted peer')
  t.equal(o.baseUrlOf(request(forwarded, '::ffff:10.9.9.9')), 'https://registry.example', 'an IPv4-mapped peer address')
  t.equal(o.baseUrlOf(request(forwarded, '0000:0000:0000:0000:0000:0000:0000:0001')), 'https://registry.example', 'an IPv6 peer written in full')
  t.equal(o.baseUrlOf(request(forwarded, '192.0.2.1')), 'http://127.0.0.1:4873', 'from anyone else the fields are ignored')
  t.ok(refused(() => o.baseUrlOf(request({ ...forwarded, 'x-forwarded-host': 'evil.example' }, '10.9.9.9'))), 'a trusted proxy\'s host is held to the list too')
  t.equal(o.baseUrlOf(request({ host: 'registry.example', 'x-forwarded-proto': 'gopher' }, '10.9.9.9')), 'http://registry.example', 'an unknown scheme is ignored')
})
