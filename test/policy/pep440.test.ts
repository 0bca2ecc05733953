import t from 'tap'

import { identityMatcher } from '../../engine/policy/identity-matcher.js'
import { parsePep440Specifier } from '../../engine/policy/pep440-specifier.js'
import { comparePep440, parsePep440 } from '../../engine/advisory/artifact/pep440.js'

function cmp(a: string, b: string): number {
  const pa = parsePep440(a)
  const pb = parsePep440(b)
  if (pa === undefined || pb === undefined) throw new Error(`unparsable ${a} or ${b}`)
  return Math.sign(comparePep440(pa, pb))
}

t.test('PEP 440 ordering (the PEP\'s own example sequence)', async (t) => {
  const ordered = [
    '1.0.dev456', '1.0a1', '1.0a2.dev456', '1.0a12.dev456', '1.0a12', '1.0b1.dev456', '1.0b2', '1.0b2.post345.dev456',
    '1.0b2.post345', '1.0rc1.dev456', '1.0rc1', '1.0', '1.0+abc.5', '1.0+abc.7', '1.0+5', '1.0.post456.dev34', '1.0.post456', '1.0.15', '1.1.dev1',
  ]
  for (let i = 0; i + 1 < ordered.length; i++) {
    t.equal(cmp(ordered[i] as string, ordered[i + 1] as string), -1, `${ordered[i]} < ${ordered[i + 1]}`)
  }
})

t.test('PEP 440 normal forms compare equal', async (t) => {
  for (const [a, b] of [['1.0', '1.0.0'], ['v1.0', '1.0'], ['1.0alpha1', '1.0a1'], ['1.0-1', '1.0.post1'], ['1.0.RC.1', '1.0rc1'], ['0!1.0', '1.0'], ['01.002', '1.2'], ['1.0c1', '1.0rc1']]) {
    t.equal(cmp(a as string, b as string), 0, `${a} == ${b}`)
  }
  t.equal(cmp('99999999999999999999.0', '99999999999999999998.0'), 1, 'numbers past 2^53')
  t.equal(cmp('1!0.1', '2.0'), 1, 'epoch first')
  t.equal(parsePep440('not-a-version'), undefined)
})

t.test('PEP 440 specifier sets', async (t) => {
  const cases: [string, string, boolean][] = [
    ['1.0', '1.0.0', true],
    ['==1.2.*', '1.2.9', true],
    ['==1.2.*', '1.3', false],
    ['!=1.2.*', '1.3', true],
    ['~=1.4.2', '1.4.5', true],
    ['~=1.4.2', '1.5.0', false],
    ['~=1.4.2', '1.4.1', false],
    ['>=1.0,<2.0', '1.9rc1', true],
    ['<2.0', '2.0rc1', false],
    ['<2.0rc2', '2.0rc1', true],
    ['>1.0', '1.0.post1', false],
    ['>1.0', '1.0+local', false],
    ['>1.0', '1.0.1', true],
    ['<=1.0', '1.0+local', true],
    ['==1.0', '1.0+local', true],
    ['==1.0+local', '1.0', false],
    ['===1.0-foo', '1.0-FOO', true],
    ['>=1.0', 'garbage', false],
  ]
  for (const [spec, version, expected] of cases) {
    const s = parsePep440Specifier(spec)
    if (typeof s === 'string') { t.fail(`${spec}: ${s}`); continue }
    t.equal(s.matches(version), expected, `${version} in ${spec}: ${expected}`)
  }
  for (const bad of ['>=1.*', '~=1', '==1.0a1.*', '>=1.0+local', 'what is this', '>=']) {
    t.type(parsePep440Specifier(bad), 'string', `${bad} is refused`)
  }
})

t.test('a py denial matches every version packaging reads as inside its range (the earlier matcher let these through)', async (t) => {
  const cases: [string, string][] = [
    ['>1.0a1', '1.0.post0'],
    ['>1.0a1', '1.0'],
    ['>1.0.dev1', '1.0+local'],
    ['<1.0.post1', '1.0a1'],
    ['<1.0.post1', '1.0.dev0'],
  ]
  for (const [spec, version] of cases) {
    const s = parsePep440Specifier(spec)
    if (typeof s === 'string') { t.fail(`${spec}: ${s}`); continue }
    t.ok(s.matches(version), `${version} is inside ${spec}`)
    const matcher = identityMatcher('py', 'Some_Pkg', spec)
    t.ok(typeof matcher !== 'string' && matcher.matches('some-pkg', version), `DenyIdentity some-pkg ${spec} denies ${version}`)
  }
  t.type(parsePep440Specifier(''), 'string', 'an empty specifier is refused')
})
