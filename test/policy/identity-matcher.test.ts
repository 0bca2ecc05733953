import t from 'tap'
import { identityMatcher, type IdentityMatcher } from '../../engine/policy/identity-matcher.js'

function matcher(versions: string): IdentityMatcher {
  const built = identityMatcher('js', 'p', versions)
  if (typeof built === 'string') throw new Error(built)
  return built
}

// npm's picker reads every one of these keys as 1.0.0 (semver, loose: true).
const ALIASES_OF_1_0_0 = ['1.0.0', '01.0.0', '1.00.0', '=1.0.0', 'v1.0.0', '=v1.0.0', ' 1.0.0', '1.0.0+build']

t.test('js: a denial judges a candidate as npm\'s picker reads it (loose semver), for an exact version and a range', async (t) => {
  for (const versions of ['1.0.0', '1.0.0 - 1.0.0', '^1.0.0', '<1.0.1']) {
    const m = matcher(versions)
    for (const alias of ALIASES_OF_1_0_0) t.ok(m.matches('p', alias), `${versions} denies ${JSON.stringify(alias)}`)
    t.notOk(m.matches('other', '01.0.0'), `${versions}: only its own package`)
  }
  t.notOk(matcher('1.0.0').matches('p', '1.0.1'), 'another version is not denied')
  t.notOk(matcher('^1.0.0').matches('p', '01.0.0-rc.1'), 'a prerelease below the range is not in it')
  t.ok(matcher('<2.0.0').matches('p', 'v1.9.9-rc.1'), 'a prerelease inside a range is')
  t.notOk(matcher('^1.0.0').matches('p', 'banana'), 'a key nothing reads matches no range')
  t.ok(matcher('1.0.0').matches('p', '1.0.0'), 'the identical string')
})
