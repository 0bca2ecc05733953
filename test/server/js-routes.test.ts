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
  // npm unpublish's writes (libnpmpublish): made at the publication target, 501.
  ['DELETE', '/js/@acme%2fpkg/-rev/3-abc', { kind: 'metadata_change', package: '@acme%2fpkg' }],
  ['PUT', '/js/lodash/-rev/3-abc', { kind: 'metadata_change', package: 'lodash' }],
  ['DELETE', '/js/@acme/pkg/-/pkg-1.0.0.tgz/-rev/4-def', { kind: 'metadata_change', package: '@acme%2fpkg' }],
  ['GET', '/js/lodash/-rev/3-abc', { kind: 'not_found' }],
  ['DELETE', '/js/lodash/-rev/', { kind: 'not_found' }],
  ['DELETE', '/js/lodash', { kind: 'not_found' }],
  ['GET', '/js/-/why/lodash/4.17.21', { kind: 'why', package: 'lodash', version: '4.17.21' }],
  ['GET', '/js/-/why/@types/node/20.0.0', { kind: 'why', package: '@types%2fnode', version: '20.0.0' }],
  ['GET', '/js/-/why/@types%2Fnode/20.0.0', { kind: 'why', package: '@types%2Fnode', version: '20.0.0' }],
  ['PUT', '/js/-/why/lodash/4.17.21', { kind: 'not_found' }],
  ['GET', '/js/-/why/lodash', { kind: 'not_found' }],
  ['GET', '/js/-/why/lodash/1.0.0/extra', { kind: 'not_found' }],
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
