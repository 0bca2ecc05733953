import t from 'tap'
import { matchJsRoute } from '../../server/routes/js-routes.js'

const cases: [string, string, unknown][] = [
  ['GET', '/js/-/ping', { kind: 'ping' }],
  // HEAD is GET without the body (RFC 9110 section 9.3.2): every GET route answers it.
  ['HEAD', '/js/-/ping', { kind: 'ping' }],
  ['HEAD', '/js/-/v1/search', { kind: 'unsupported', what: 'search' }],
  ['HEAD', '/js/-/package/lodash/dist-tags', { kind: 'unsupported', what: 'dist-tags' }],
  ['HEAD', '/js/lodash', { kind: 'packument', package: 'lodash' }],
  ['HEAD', '/js/@types/node', { kind: 'packument', package: '@types%2fnode' }],
  ['HEAD', '/js/lodash/x', { kind: 'not_found' }],
  ['POST', '/js/-/ping', { kind: 'not_found' }],
  ['GET', '/js/-/v1/search', { kind: 'unsupported', what: 'search' }],
  ['GET', '/js/-/package/lodash/dist-tags', { kind: 'unsupported', what: 'dist-tags' }],
  ['PUT', '/js/-/package/@s%2Fn/dist-tags/next', { kind: 'unsupported', what: 'dist-tags' }],
  ['DELETE', '/js/-/package/@s/n/dist-tags/next', { kind: 'unsupported', what: 'dist-tags' }],
  ['GET', '/js/-/package/lodash/dist-tags/next', { kind: 'not_found' }],
  ['GET', '/js/lodash', { kind: 'packument', package: 'lodash' }],
  ['GET', '/js/@types%2Fnode', { kind: 'packument', package: '@types%2Fnode' }],
  ['GET', '/js/@types/node', { kind: 'packument', package: '@types%2fnode' }],
  ['PUT', '/js/@acme/pkg', { kind: 'publish', package: '@acme%2fpkg' }],
  ['GET', '/js/lodash/-/lodash-4.17.21.tgz', { kind: 'artifact', package: 'lodash', filename: 'lodash-4.17.21.tgz' }],
  ['HEAD', '/js/@types%2Fnode/-/node-20.0.0.tgz', { kind: 'artifact', package: '@types%2Fnode', filename: 'node-20.0.0.tgz' }],
  ['GET', '/js/@types/node/-/node-20.0.0.tgz', { kind: 'artifact', package: '@types%2fnode', filename: 'node-20.0.0.tgz' }],
  ['PUT', '/js/lodash/-/lodash-4.17.21.tgz', { kind: 'not_found' }],
  ['GET', '/js/lodash/-/a/b.tgz', { kind: 'not_found' }],
  ['GET', '/js/lodash/x', { kind: 'not_found' }],
  ['GET', '/js/@scope', { kind: 'not_found' }],
  ['GET', '/js', { kind: 'not_found' }],
  ['GET', '/js/', { kind: 'not_found' }],
  ['GET', '/jsx/lodash', { kind: 'not_found' }],
  ['POST', '/js/lodash', { kind: 'not_found' }],
]

for (const [method, path, expected] of cases) {
  t.same(matchJsRoute(method, path), expected, `${method} ${path}`)
}
