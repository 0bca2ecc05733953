import t from 'tap'
import { countRequests } from '../../bench/peers/public-fixture-registry.js'
import { classifyPrivate, goalOf, median } from '../../bench/scenarios/install-time.js'
import type { WireExchange } from '../../bench/scenarios/install-bytes.js'

const exchange = (method: string, path: string, status: number, accept?: string): WireExchange => ({
  method, path, status, accept, acceptEncoding: undefined, forwardedAcceptEncoding: undefined, contentType: undefined, contentEncoding: undefined, bytes: 1,
})

t.test('the private registry requests are told apart: the proxy leg, the mirror worker, the rest', async (t) => {
  const counted = classifyPrivate([
    exchange('GET', '/left-pad', 404, 'application/json'),
    exchange('GET', '/@babel%2fcore', 200, 'application/json'),
    exchange('GET', '/left-pad/-/left-pad-1.3.0.tgz', 404),
    exchange('GET', '/@babel/core/-/core-7.0.0.tgz', 200),
    exchange('GET', '/left-pad', 404, 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8'),
    exchange('PUT', '/left-pad', 201),
    exchange('PUT', '/-/user/org.couchdb.user:x', 201),
    exchange('GET', '/-/ping', 200),
  ])
  t.same(counted, { total: 8, packuments: { 404: 1, 200: 1 }, tarballs: { 404: 1, 200: 1 }, mirrorLookups: 1, publishes: 1, other: 2 })
})

t.test('the public registry access log is counted by kind', async (t) => {
  t.same(countRequests([
    'GET /react 200 1000 "application/json"',
    'GET /react 200 100 "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"',
    'GET /react 304 0 "application/json"',
    'GET /react/-/react-18.3.1.tgz 200 300 "*/*"',
    'GET /nope 404 20 "application/json"',
    'POST /-/npm/v1/security/advisories/bulk 404 0 "*/*"',
    '',
  ]), { full: 1, abbreviated: 1, notModified: 1, tarballs: 1, notFound: 1, other: 1, bytes: 1420 })
})

t.test('medians, and a failed round makes the figure unknown rather than better', async (t) => {
  t.equal(median([3, 1, 2]), 2)
  t.equal(median([4, 1, 2, 3]), 2.5)
  t.ok(Number.isNaN(median([1, Number.NaN, 3])))
  t.ok(Number.isNaN(median([])))
})

t.test('the goals of the issue: cold within 1.2x Verdaccio cold, warm and after a restart within Verdaccio warm', async (t) => {
  t.same(goalOf('cold'), { baseline: 'verdaccio', goodness: 1 / 1.2, text: '<= 1.2x verdaccio cold' })
  t.same(goalOf('warm'), { baseline: 'verdaccio', goodness: 1, text: '<= 1.0x verdaccio warm' })
  t.same(goalOf('after restart'), { baseline: 'verdaccio warm', goodness: 1, text: '<= 1.0x verdaccio warm' })
})
