/**
 * Content coding choice (RFC 9110 12.5.3), the coded ETag, and the coding
 * itself (issue 17 item 1).
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { codedEtag, compressBody, negotiateCoding } from '../../engine/packument/content-coding.js'

t.test('Accept-Encoding as clients send it, q-values, wildcards and exclusions', async (t) => {
  const table: [string | undefined, string][] = [
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip, deflate', 'gzip'], // npm (minipass-fetch)
    ['gzip, deflate, br', 'br'], // undici's fetch, browsers
    ['br;q=0.5, gzip', 'gzip'],
    ['gzip;q=0.5', 'gzip'], // identity unlisted is the least preferred
    ['gzip;q=0.5, identity', 'identity'],
    ['identity;q=0, gzip;q=0.2', 'gzip'],
    ['*', 'br'],
    ['*;q=0.3, gzip;q=0.4', 'gzip'],
    ['*;q=0', 'identity'], // nothing acceptable: identity anyway, never 406
    ['identity;q=0, *;q=0', 'identity'],
    ['gzip;q=0, br;q=0', 'identity'],
    ['x-gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['deflate', 'identity'],
    ['gzip;q=2', 'identity'], // a malformed weight is not a preference
    ['gzip;q=abc, br;q=0.1', 'br'],
    [' br ; q=1.0 , gzip ; q=1 ', 'br'],
  ]
  for (const [header, expected] of table) t.equal(negotiateCoding(header), expected, JSON.stringify(header))
})

t.test('each coding has its own ETag; weakness kept', async (t) => {
  t.equal(codedEtag('"abc"', 'gzip'), '"abc-gzip"')
  t.equal(codedEtag('"abc"', 'br'), '"abc-br"')
  t.equal(codedEtag('W/"abc"', 'br'), 'W/"abc-br"')
  t.equal(codedEtag('"abc"', 'identity'), '"abc"')
})

t.test('the coded bytes decode to the body', async (t) => {
  const body = Buffer.from(JSON.stringify({ versions: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`1.0.${i}`, { dist: { tarball: `x/${i}` } }])) }))
  const gz = compressBody(body, 'gzip')
  const br = compressBody(body, 'br')
  t.same(gunzipSync(gz), body)
  t.same(brotliDecompressSync(br), body)
  t.ok(gz.byteLength < body.byteLength / 4 && br.byteLength < body.byteLength / 4, 'smaller by far')
})
