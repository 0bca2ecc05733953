/**
 * The egress guard on its own (address ranges, URL checks, lookup after
 * resolution, tarball authority), then through a real UpstreamClient
 * against https servers made with the test CA.
 */
import t from 'tap'
import type { LookupAddress } from 'node:dns'
import { isServiceError, type ServiceError } from '../../engine/errors.js'
import { EgressGuard, INTERNAL_ADDRESS_LOG, checkTarballAuthority, embeddedIpv4, internalRangeOf } from '../../engine/upstream/egress-guard.js'
import { METADATA_FETCH_FAILED } from '../../engine/upstream/upstream-client.js'
import { makeTestCa, type TestCa } from '../../bench/peers/tls.js'
import { codeOf, makeClient, startServer } from './servers.js'
import { RecordingLogger } from '../doubles/recording-logger.js'

function syncCode(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return isServiceError(e) ? e.code : `not a ServiceError: ${String(e)}`
  }
  return 'admitted'
}

const PUBLIC = new URL('https://public.test/')

t.test('internal ranges are refused on the untrusted side, public addresses pass', async (t) => {
  const guard = new EgressGuard({ upstreamUrl: PUBLIC, trusted: false })
  const internal = [
    '127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '100.127.255.255', '0.0.0.0', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1',
    '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1',
    '::ffff:10.0.0.1', '64:ff9b::a00:1', '::127.0.0.1', '[::1]',
  ]
  const external = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']
  for (const a of internal) t.equal(guard.isInternal(a), true, `${a} is internal`)
  for (const a of external) t.equal(guard.isInternal(a), false, `${a} is not internal`)
  t.equal(syncCode(() => guard.checkAddress('10.0.0.1')), 'EGRESS_ADDRESS_INTERNAL')
  t.equal(syncCode(() => guard.checkAddress('8.8.8.8')), 'admitted')
})

t.test('allowInternalRanges exempts, including through IPv4-mapped addresses', async (t) => {
  const guard = new EgressGuard({ upstreamUrl: PUBLIC, trusted: false, allowInternalRanges: ['127.0.0.0/8', 'fd00::/8'] })
  t.equal(guard.isInternal('127.0.0.1'), false)
  t.equal(guard.isInternal('::ffff:127.0.0.1'), false)
  t.equal(guard.isInternal('fd00::5'), false)
  t.equal(guard.isInternal('::1'), true, 'IPv6 loopback is not in the exempt list')
  t.equal(guard.isInternal('10.0.0.1'), true)
  t.equal(syncCode(() => new EgressGuard({ upstreamUrl: PUBLIC, trusted: false, allowInternalRanges: ['127.0.0.0/33'] })), 'CONFIG_INVALID')
  t.equal(syncCode(() => new EgressGuard({ upstreamUrl: PUBLIC, trusted: false, allowInternalRanges: ['nonsense'] })), 'CONFIG_INVALID')
  t.equal(embeddedIpv4('::ffff:c0a8:101'), '192.168.1.1')
  t.equal(embeddedIpv4('2606:4700::1111'), undefined)
})

t.test('the trusted side is exempt from the internal-range block but pinned to its origin', async (t) => {
  const guard = new EgressGuard({ upstreamUrl: new URL('http://127.0.0.1:4873/npm/'), trusted: true })
  t.equal(syncCode(() => guard.checkAddress('127.0.0.1')), 'admitted')
  t.equal(syncCode(() => guard.checkUrl(new URL('http://127.0.0.1:4873/npm/x/-/x-1.0.0.tgz'))), 'admitted')
  t.equal(syncCode(() => guard.checkUrl(new URL('http://127.0.0.1:4874/x'))), 'EGRESS_REFUSED', 'another port')
  t.equal(syncCode(() => guard.checkUrl(new URL('http://other.test:4873/x'))), 'EGRESS_REFUSED', 'another host')
  t.equal(syncCode(() => guard.checkUrl(new URL('http://u:p@127.0.0.1:4873/x'))), 'EGRESS_REFUSED', 'userinfo')
})

t.test('the untrusted side is https only, on the allowlist, without userinfo', async (t) => {
  t.equal(syncCode(() => new EgressGuard({ upstreamUrl: new URL('http://public.test/'), trusted: false })), 'CONFIG_INVALID')
  const guard = new EgressGuard({ upstreamUrl: PUBLIC, trusted: false, allowHosts: ['files.public.test'] })
  t.equal(syncCode(() => guard.checkUrl(new URL('https://public.test/left-pad'))), 'admitted')
  t.equal(syncCode(() => guard.checkUrl(new URL('https://PUBLIC.test:8443/left-pad'))), 'admitted', 'host match ignores case and port')
  t.equal(syncCode(() => guard.checkUrl(new URL('https://files.public.test/a.tgz'))), 'admitted', 'an allowed extra host')
  t.equal(syncCode(() => guard.checkUrl(new URL('http://public.test/left-pad'))), 'EGRESS_REFUSED', 'plain http')
  t.equal(syncCode(() => guard.checkUrl(new URL('https://evil.test/left-pad'))), 'EGRESS_REFUSED', 'not on the allowlist')
  t.equal(syncCode(() => guard.checkUrl(new URL('https://a:b@public.test/'))), 'EGRESS_REFUSED', 'userinfo')
  const literal = new EgressGuard({ upstreamUrl: new URL('https://127.0.0.1:8443/'), trusted: false })
  t.equal(syncCode(() => literal.checkUrl(new URL('https://127.0.0.1:8443/x'))), 'EGRESS_ADDRESS_INTERNAL', 'a literal internal address')
})

function fakeResolver(answer: LookupAddress[]): NonNullable<ConstructorParameters<typeof EgressGuard>[0]['resolve']> {
  return ((_host: string, _options: unknown, callback: (err: Error | null, addresses: LookupAddress[]) => void) => {
    queueMicrotask(() => callback(null, answer))
  }) as unknown as NonNullable<ConstructorParameters<typeof EgressGuard>[0]['resolve']>
}

function lookupOnce(guard: EgressGuard, all: boolean): Promise<{ err: unknown, address: unknown, family: unknown }> {
  return new Promise((resolve) => {
    guard.lookup('public.test', { all }, (err, address, family) => resolve({ err, address, family }))
  })
}

t.test('lookup judges the resolved addresses, after resolution', async (t) => {
  const toLoopback = new EgressGuard({ upstreamUrl: PUBLIC, trusted: false, resolve: fakeResolver([{ address: '127.0.0.1', family: 4 }]) })
  const refused = await lookupOnce(toLoopback, false)
  t.ok(isServiceError(refused.err, 'EGRESS_ADDRESS_INTERNAL'), 'a public name resolving to loopback is refused')
  const mixed = new EgressGuard({
    upstreamUrl: PUBLIC, trusted: false,
    resolve: fakeResolver([{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.8', family: 4 }]),
  })
  t.ok(isServiceError((await lookupOnce(mixed, true)).err, 'EGRESS_ADDRESS_INTERNAL'), 'a mixed answer is refused whole')
  const fine = new EgressGuard({
    upstreamUrl: PUBLIC, trusted: false,
    resolve: fakeResolver([{ address: '2606:4700::1111', family: 6 }, { address: '93.184.216.34', family: 4 }]),
  })
  const one = await lookupOnce(fine, false)
  t.same([one.err, one.address, one.family], [null, '2606:4700::1111', 6])
  const all = await lookupOnce(fine, true)
  t.same(all.address, [{ address: '2606:4700::1111', family: 6 }, { address: '93.184.216.34', family: 4 }])
  const trusted = new EgressGuard({ upstreamUrl: new URL('http://private.test/'), trusted: true, resolve: fakeResolver([{ address: '10.0.0.8', family: 4 }]) })
  t.equal((await lookupOnce(trusted, false)).address, '10.0.0.8', 'the trusted side may resolve inside')
})

t.test('an internal address is a 502 naming host, address, range and the admitting key, warned once per host', async (t) => {
  const logger = new RecordingLogger()
  const guard = new EgressGuard({
    upstreamUrl: PUBLIC, trusted: false, logger,
    allowInternalRangesKey: 'mounts.js.upstreams.public.allowInternalRanges',
    resolve: fakeResolver([{ address: '10.1.2.3', family: 4 }]),
  })
  const first = await lookupOnce(guard, false)
  const second = await lookupOnce(guard, false)
  t.ok(isServiceError(first.err, 'EGRESS_ADDRESS_INTERNAL'))
  const err = first.err as ServiceError
  t.equal(err.status, 502, 'a configuration problem, not a policy verdict')
  t.equal(err.message, 'the upstream host public.test resolves to 10.1.2.3, in the internal range 10.0.0.0/8, which the egress policy refuses; '
    + 'if that address is intended, list the range in mounts.js.upstreams.public.allowInternalRanges')
  t.ok(isServiceError(second.err, 'EGRESS_ADDRESS_INTERNAL'), 'refused again')
  const warned = logger.find(INTERNAL_ADDRESS_LOG)
  t.equal(warned.length, 1, 'one warning for the host, however many requests')
  t.same(warned[0]?.data, { host: 'public.test', address: '10.1.2.3', range: '10.0.0.0/8', setting: 'mounts.js.upstreams.public.allowInternalRanges' })
  t.equal(warned[0]?.level, 'warn')
  t.equal(internalRangeOf('::ffff:192.168.1.1'), '192.168.0.0/16', 'a mapped address names its IPv4 range')
  t.equal(internalRangeOf('fd12::1'), 'fc00::/7')
  t.equal(internalRangeOf('8.8.8.8'), undefined)
  const policy = syncCode(() => guard.checkUrl(new URL('https://evil.test/x')))
  t.equal(policy, 'EGRESS_REFUSED', 'a policy refusal keeps its own code (403)')
})

t.test('tarball authority: another host or port is refused unless the policy respects it', async (t) => {
  const up = new URL('https://public.test/')
  const cases: Array<[url: string, respect: boolean, want: string]> = [
    ['https://public.test/left-pad/-/left-pad-1.3.0.tgz', false, 'admitted'],
    ['https://public.test:443/left-pad/-/left-pad-1.3.0.tgz', false, 'admitted'],
    ['https://PUBLIC.test/a.tgz', false, 'admitted'],
    ['https://public.test:8443/a.tgz', false, 'TARBALL_HOST_REFUSED'],
    ['http://public.test/a.tgz', false, 'TARBALL_HOST_REFUSED'],
    ['https://cdn.public.test/a.tgz', false, 'TARBALL_HOST_REFUSED'],
    ['https://cdn.public.test/a.tgz', true, 'admitted'],
    ['https://public.test:8443/a.tgz', true, 'admitted'],
    ['not a url', false, 'TARBALL_HOST_REFUSED'],
  ]
  for (const [url, respect, want] of cases) {
    t.equal(syncCode(() => checkTarballAuthority(url, up, respect)), want, `${url} respect=${String(respect)}`)
  }
  t.equal(checkTarballAuthority('https://public.test/a.tgz', up, false).pathname, '/a.tgz')
})

t.test('through the client, against real https servers', async (t) => {
  const ca: TestCa = await makeTestCa()
  t.teardown(() => ca.remove())
  const doc = JSON.stringify({ name: 'left-pad' })
  const up = await startServer(t, (_req, res) => { res.end(doc) }, ca)

  t.test('a public upstream at 127.0.0.1 is refused unless 127.0.0.0/8 is exempt', async (t) => {
    const blocked = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem })
    t.equal(await codeOf(blocked.client.fetchDocument('left-pad')), 'EGRESS_ADDRESS_INTERNAL')
    t.equal(blocked.counters.get('egress'), 1)
    t.equal(blocked.logger.find(METADATA_FETCH_FAILED)[0]?.level, 'error')
    const allowed = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
    const got = await allowed.client.fetchDocument('left-pad')
    t.equal(got.kind, 'document')
    t.equal(up.seen.length, 1, 'the refused request never reached the server')
  })

  t.test('a name resolving to loopback (localhost) is refused after resolution', async (t) => {
    const before = up.seen.length
    const { client } = makeClient(t, { url: `https://localhost:${up.port}/`, trusted: false, caPem: ca.caPem })
    t.equal(await codeOf(client.fetchDocument('left-pad')), 'EGRESS_ADDRESS_INTERNAL')
    t.equal(up.seen.length, before, 'nothing reached the server')
  })

  t.test('an untrusted certificate is refused without the CA and accepted with it', async (t) => {
    const without = makeClient(t, { url: up.origin, trusted: false, allowInternalRanges: ['127.0.0.0/8'] })
    const err = await without.client.fetchDocument('left-pad').catch((e: unknown) => e)
    t.ok(isServiceError(err, 'UPSTREAM_UNAVAILABLE'), 'refused')
    t.equal(isServiceError(err) ? err.data?.['reason'] : undefined, 'certificate')
    const withFile = makeClient(t, { url: up.origin, trusted: false, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] })
    t.equal((await withFile.client.fetchDocument('left-pad')).kind, 'document', 'caFile adds the test CA')
    t.equal(syncCode(() => makeClient(t, { url: up.origin, trusted: false, caFile: `${ca.dir}/missing.pem` })), 'BOOT_UNBUILDABLE')
  })

  t.test('the public side is https only and never authenticates', async (t) => {
    t.equal(syncCode(() => makeClient(t, { url: `http://127.0.0.1:${up.port}/`, trusted: false })), 'CONFIG_INVALID')
    const { client } = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
    const before = up.seen.length
    const { BearerToken } = await import('../../engine/secret.js')
    const res = await client.openArtifact(new URL(`${up.origin}/a/-/a-1.0.0.tgz`), { method: 'GET', bearer: new BearerToken('client-cred') })
    res.body?.destroy()
    t.equal(up.seen[before]?.headers.authorization, undefined, 'the client credential is not sent')
    t.equal(await codeOf(client.openArtifact(new URL(`http://127.0.0.1:${up.port}/a.tgz`), { method: 'GET' })), 'EGRESS_REFUSED', 'plain http')
    t.equal(await codeOf(client.openArtifact(new URL('https://elsewhere.test/a.tgz'), { method: 'GET' })), 'EGRESS_REFUSED',
      'a host off the allowlist')
  })

  t.test('the tarball-host policy holds on the public artifact leg', async (t) => {
    const other = await startServer(t, (_req, res) => { res.end('tgz') }, ca)
    const crossPort = new URL(`${other.origin}/a/-/a-1.0.0.tgz`)
    const strict = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'] })
    t.equal(await codeOf(strict.client.openArtifact(crossPort, { method: 'GET' })), 'TARBALL_HOST_REFUSED', 'another port is refused by default')
    const respectful = makeClient(t, {
      url: up.origin, trusted: false, caPem: ca.caPem, allowInternalRanges: ['127.0.0.0/8'], respectUpstreamTarballHost: true,
    })
    const res = await respectful.client.openArtifact(crossPort, { method: 'HEAD' })
    t.equal(res.statusCode, 200, 'admitted when the policy respects the upstream tarball host')
    t.equal(other.seen.length, 1)
    const offList = makeClient(t, { url: up.origin, trusted: false, caPem: ca.caPem, respectUpstreamTarballHost: true })
    t.equal(await codeOf(offList.client.openArtifact(new URL('https://cdn.test/a.tgz'), { method: 'GET' })), 'EGRESS_REFUSED',
      'an admitted authority still needs the allowlist')
    t.equal(await codeOf(offList.client.openArtifact(crossPort, { method: 'GET' })), 'EGRESS_ADDRESS_INTERNAL',
      'and the internal-range block')
  })

  t.test('a trusted https upstream with the CA is reached at 127.0.0.1', async (t) => {
    const { client } = makeClient(t, { url: up.origin, trusted: true, caPem: ca.caPem })
    t.equal((await client.fetchDocument('left-pad')).kind, 'document')
  })
})
