/**
 * OTEL_RESOURCE_ATTRIBUTES caps (SPEC.md 6.3): 8192 bytes in total, 4096 per
 * attribute, 180 attributes; own identity first, then the operator's in key
 * order; every key that did not fit is named.
 */
import t from 'tap'
import { capResourceAttributes, MAX_ATTRIBUTES } from '../../engine/telemetry/resource-attributes.js'

const identity = { service: 'svc', env: 'prod', version: '1.2.3', host: 'h' }

t.test('identity first, then the operator in key order', async (t) => {
  const capped = capResourceAttributes(identity, 'zeta=1,alpha=2,service.name=other,team=a%2Cb')
  t.same(Object.keys(capped.attributes), ['service.name', 'service.version', 'deployment.environment.name', 'alpha', 'team', 'zeta'])
  t.equal(capped.attributes['service.name'], 'svc', 'the resolved identity, not the operator attribute, names the service')
  t.equal(capped.attributes['team'], 'a,b', 'percent-decoded')
  t.same(capped.rejected, [])
})

t.test('an attribute over 4096 bytes is left out; smaller later ones still fit', async (t) => {
  const capped = capResourceAttributes(identity, `big=${'x'.repeat(4094)},small=1`)
  t.same(capped.rejected, ['big'])
  t.equal(capped.attributes['small'], '1')
  const fits = capResourceAttributes(identity, `big=${'x'.repeat(4093)}`)
  t.same(fits.rejected, [], 'key and value of exactly 4096 bytes fit')
})

t.test('8192 bytes in total, multi-byte characters counted as UTF-8', async (t) => {
  // Three attributes of 4000 bytes: two fit (identity is small), the third would pass 8192.
  const value = 'é'.repeat(1998) // 3996 bytes
  const capped = capResourceAttributes(identity, `a1=${value},a2=${value},a3=${value},b=1`)
  t.same(capped.rejected, ['a3'])
  t.equal(capped.attributes['b'], '1')
})

t.test('180 attributes at most, identity included', async (t) => {
  const pairs = Array.from({ length: 200 }, (_, i) => `k${String(i).padStart(3, '0')}=v`).join(',')
  const capped = capResourceAttributes(identity, pairs)
  t.equal(Object.keys(capped.attributes).length, MAX_ATTRIBUTES)
  t.equal(capped.rejected.length, 200 - (MAX_ATTRIBUTES - 3))
  t.equal(capped.rejected[0], 'k177', 'the keys past the cap, in key order')
})
