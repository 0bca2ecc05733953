/**
 * Table tests from pypa/packaging's own vectors (tests/test_version.py and
 * tests/test_specifiers.py): the sorted VERSIONS list, normalisations,
 * invalid versions, Specifier.contains with prereleases=True, the
 * pre-release detection table and the filter defaults.
 */
import t from 'tap'

import { comparePep440, formatPep440, parsePep440 } from '../../engine/advisory/artifact/pep440.js'
import { parseSpecifierClause, parseSpecifierSet, type Pep440SpecifierSet } from '../../engine/policy/pep440-specifier.js'

const VERSIONS = [
  '1.0.dev0', '1.0.dev456', '1.0.dev456+local', '1.0a0', '1.0a0.post0.dev0', '1.0a0.post0', '1.0a1.dev1', '1.0a1.dev1+local',
  '1.0a1', '1.0a1+local', '1.0b0', '1.0b1.dev456', '1.0b2', '1.0b2.post345.dev456', '1.0b2.post345', '1.0b2-346', '1.0rc0',
  '1.0rc1.dev1', '1.0c1', '1.0rc2', '1.0', '1.0.post0.dev0', '1.0.post0', '1.0.post456.dev34', '1.0.post456', '1.0.post456+local',
  '1.0.1.dev1', '1.0.1a1', '1.0.1', '1.0.1+local', '1.0.1.post1', '1.1.dev1', '1.2+a', '1.2+abc', '1.2+abcdef', '1.2+def', '1.2+0',
  '1.2+1', '1.2+1.abc', '1.2+1.1', '1.2+1.1.0', '1.2+2', '1.2+123', '1.2+123456', '1.2.r32+123456', '1.2.rev33+123456',
]
const ALL = [...VERSIONS, ...VERSIONS.map((v) => `1!${v}`)]

function must(v: string) {
  const p = parsePep440(v)
  if (p === undefined) throw new Error(`unparsable ${v}`)
  return p
}

/** A test title in printable ASCII: a raw U+2029 would break the TAP stream. */
function label(s: string): string {
  return JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function set(text: string): Pep440SpecifierSet {
  const s = parseSpecifierSet(text)
  if (typeof s === 'string') throw new Error(s)
  return s
}

t.test('packaging VERSIONS: every pair ordered as listed', async (t) => {
  let wrong = 0
  for (let i = 0; i < ALL.length; i++) {
    for (let j = 0; j < ALL.length; j++) {
      const got = Math.sign(comparePep440(must(ALL[i] as string), must(ALL[j] as string)))
      // 1.0rc1.dev1 < 1.0c1 == 1.0rc1 < 1.0rc2; no two entries of the list are equal.
      if (got !== Math.sign(i - j)) {
        wrong++
        t.fail(`${ALL[i]} vs ${ALL[j]}: ${got}`)
      }
    }
  }
  t.equal(wrong, 0)
})

t.test('packaging normalisations', async (t) => {
  const cases: [string, string][] = [
    ['1.0dev', '1.0.dev0'], ['1.0.dev', '1.0.dev0'], ['1.0-dev1', '1.0.dev1'], ['1.0DEV', '1.0.dev0'], ['1.0a', '1.0a0'],
    ['1.0.a1', '1.0a1'], ['1.0-alpha1', '1.0a1'], ['1.0ALPHA', '1.0a0'], ['1.0b', '1.0b0'], ['1.0.beta1', '1.0b1'],
    ['1.0-BETA', '1.0b0'], ['1.0c', '1.0rc0'], ['1.0.c1', '1.0rc1'], ['1.0-rc', '1.0rc0'], ['1.0RC1', '1.0rc1'],
    ['1.0post', '1.0.post0'], ['1.0-post1', '1.0.post1'], ['1.0r', '1.0.post0'], ['1.0rev', '1.0.post0'], ['1.0.r1', '1.0.post1'],
    ['1.0-5', '1.0.post5'], ['1.0-r5', '1.0.post5'], ['1.0-rev5', '1.0.post5'], ['1.0+AbC', '1.0+abc'], ['1.01', '1.1'],
    ['1.0a05', '1.0a5'], ['1.0c056', '1.0rc56'], ['1.0.post000', '1.0.post0'], ['1.1.dev09000', '1.1.dev9000'], ['00!1.2', '1.2'],
    ['0100!0.0', '100!0.0'], ['v1.0', '1.0'], ['   v1.0\t\n', '1.0'], ['\u202f1.0\t\u2029\n ', '1.0'],
    ['1.0b2.post345.dev456', '1.0b2.post345.dev456'], ['7!1.0.post456.dev34', '7!1.0.post456.dev34'], ['0!1.0.4+8.0', '1.0.4+8.0'],
    ['1.2+123abc456', '1.2+123abc456'],
  ]
  for (const [input, normal] of cases) t.equal(formatPep440(must(input)), normal, label(input))
})

t.test('packaging invalid versions', async (t) => {
  for (const v of ['french toast', '1.0+a+', '1.0++', '1.0+_foobar', '1.0+foo&asd', '1.0+1+1', '1. 0', '1 .0', '1. 0a1', '1 .0a1',
    '1.0 a1', '1.0a 1', '\u0660\u0661\u0662.\u0663\u0664\u0665.\u0666\u0667\u0668\u0669', '.', '..', '1..0', '1.0.', '.1.0', '1..2.3', '1.0+\u0130']) {
    t.equal(parsePep440(v), undefined, label(v))
  }
})

t.test('packaging invalid specifiers', async (t) => {
  for (const s of ['2.0', '=>2.0', '==', '~=1.0+5', '>=1.0+deadbeef', '<=1.0+abc123', '>1.0+watwat', '<1.0+1.0', '~=1.0.*', '>=1.0.*',
    '<=1.0.*', '>1.0.*', '<1.0.*', '==1.0.*+5', '!=1.0.*+deadbeef', '==2.0a1.*', '!=2.0a1.*', '==2.0.post1.*', '!=2.0.post1.*',
    '==2.0.dev1.*', '!=2.0.dev1.*', '==1.0+5.*', '!=1.0+deadbeef.*', '==1.0.*.5', '~=1', '==1.0.dev1.*', '==1.2+\u0130']) {
    t.type(parseSpecifierClause(s), 'string', label(s))
  }
  for (const s of ['~=2.0', '==2.1.*', '==2.1.0.3', '!=2.2.*', '!=2.2.0.5', '<=5', '>=7.9a1', '<1.0.dev1', '>2.0.post1', '< 2', '===lolwat']) {
    t.type(parseSpecifierClause(s), 'object', s)
  }
})

// (version, specifier, expected) from test_specifiers.py test_specifiers (prereleases=True, i.e. contains()).
const CONTAINS: [string, string, boolean][] = [
  ['2.0', '==2', true], ['2.0', '==2.0', true], ['2.0', '==2.0.0', true], ['2.0+deadbeef', '==2', true], ['2.0+deadbeef', '==2.0', true],
  ['2.0+deadbeef', '==2.0.0', true], ['2.0+deadbeef', '==2+deadbeef', true], ['2.0+deadbeef', '==2.0+deadbeef', true],
  ['2.0+deadbeef', '==2.0.0+deadbeef', true], ['2.0+deadbeef.0', '==2.0.0+deadbeef.00', true],
  ['2.dev1', '==2.*', true], ['2a1', '==2.*', true], ['2a1.post1', '==2.*', true], ['2b1', '==2.*', true], ['2b1.dev1', '==2.*', true],
  ['2c1', '==2.*', true], ['2c1.post1.dev1', '==2.*', true], ['2c1.post1.dev1', '==2.0.*', true], ['2rc1', '==2.*', true],
  ['2rc1', '==2.0.*', true], ['2', '==2.*', true], ['2', '==2.0.*', true], ['2', '==2.0.0.*', true], ['2', '==0!2.*', true],
  ['0!2', '==2.*', true], ['2.0', '==2.*', true], ['2.0.0', '==2.*', true], ['2.0.0.0', '==2.0.*', true], ['2.1+local.version', '==2.1.*', true],
  ['2.1', '!=2', true], ['2.1', '!=2.0', true], ['2.0.1', '!=2', true], ['2.0.1', '!=2.0', true], ['2.0.1', '!=2.0.0', true],
  ['2.0', '!=2.0+deadbeef', true], ['2.0', '!=3.*', true], ['2.1', '!=2.0.*', true], ['3', '!=2.0.0.*', true], ['2.1.0.0', '!=2.0.*', true],
  ['2.0', '>=2', true], ['2.0', '>=2.0', true], ['2.0', '>=2.0.0', true], ['2.0.post1', '>=2', true], ['2.0.post1.dev1', '>=2', true],
  ['3', '>=2', true], ['3.0.0a8', '>=3.0.0a7', true],
  ['2.0', '<=2', true], ['2.0', '<=2.0', true], ['2.0', '<=2.0.0', true], ['2.0.dev1', '<=2', true], ['2.0a1', '<=2', true],
  ['2.0a1.dev1', '<=2', true], ['2.0b1', '<=2', true], ['2.0b1.post1', '<=2', true], ['2.0c1', '<=2', true],
  ['2.0c1.post1.dev1', '<=2', true], ['2.0rc1', '<=2', true], ['1', '<=2', true], ['3.0.0a7', '<=3.0.0a8', true],
  ['3', '>2', true], ['2.1', '>2.0', true], ['2.0.1', '>2', true], ['2.1.post1', '>2', true], ['2.1+local.version', '>2', true],
  ['3.0.0a8', '>3.0.0a7', true], ['1', '<2', true], ['2.0', '<2.1', true], ['2.0.dev0', '<2.1', true], ['3.0.0a7', '<3.0.0a8', true],
  ['1', '~=1.0', true], ['1.0.1', '~=1.0', true], ['1.1', '~=1.0', true], ['1.9999999', '~=1.0', true], ['1.1', '~=1.0a1', true],
  ['2022.01.01', '~=2022.01.01', true], ['2!1.0', '~=2!1.0', true], ['2!1.0', '==2!1.*', true], ['2!1.0', '==2!1.0', true],
  ['2!1.0', '!=1.0', true], ['2!1.0.0', '==2!1.0.0.0.*', true], ['2!1.0.0', '==2!1.0.*', true], ['2!1.0.0', '==2!1.*', true],
  ['1.0', '!=2!1.0', true], ['1.0', '<=2!0.1', true], ['2!1.0', '>=2.0', true], ['1.0', '<2!0.1', true], ['2!1.0', '>2.0', true],
  ['2.0.5', '>2.0dev', true], ['1.0+local', '>1.0.dev1', true], ['4.1.0a2.dev1235+local', '>4.1.0a2.dev1234', true],
  ['1.0a2+local', '>1.0a1', true], ['1.0b2+local', '>1.0b1', true], ['1.0rc2+local', '>1.0rc1', true], ['1.0.post2+local', '>1.0.post1', true],
  ['1.0.dev2+local', '>1.0.dev1', true], ['1.0a1.dev2+local', '>1.0a1.dev1', true], ['1.0.post1.dev2+local', '>1.0.post1.dev1', true],
  ['2.1', '==2', false], ['2.1', '==2.0', false], ['2.1', '==2.0.0', false], ['2.0', '==2.0+deadbeef', false], ['2.0', '==3.*', false],
  ['2.1', '==2.0.*', false], ['3', '==2.0.0.*', false], ['2.1.0.0', '==2.0.*', false], ['2.0', '!=2', false], ['2.0', '!=2.0', false],
  ['2.0', '!=2.0.0', false], ['2.0+deadbeef', '!=2', false], ['2.0+deadbeef', '!=2.0', false], ['2.0+deadbeef', '!=2.0.0', false],
  ['2.0+deadbeef', '!=2+deadbeef', false], ['2.0+deadbeef', '!=2.0+deadbeef', false], ['2.0+deadbeef', '!=2.0.0+deadbeef', false],
  ['2.0+deadbeef.0', '!=2.0.0+deadbeef.00', false], ['2.dev1', '!=2.*', false], ['2a1', '!=2.*', false], ['2a1.post1', '!=2.*', false],
  ['2b1', '!=2.*', false], ['2b1.dev1', '!=2.*', false], ['2c1', '!=2.*', false], ['2c1.post1.dev1', '!=2.*', false],
  ['2c1.post1.dev1', '!=2.0.*', false], ['2rc1', '!=2.*', false], ['2rc1', '!=2.0.*', false], ['2', '!=2.*', false], ['2', '!=2.0.*', false],
  ['2', '!=2.0.0.*', false], ['2.0', '!=2.*', false], ['2.0.0', '!=2.*', false], ['2.0.0.0', '!=2.0.*', false],
  ['2.0.dev1', '>=2', false], ['2.0a1', '>=2', false], ['2.0a1.dev1', '>=2', false], ['2.0b1', '>=2', false], ['2.0b1.post1', '>=2', false],
  ['2.0c1', '>=2', false], ['2.0c1.post1.dev1', '>=2', false], ['2.0rc1', '>=2', false], ['1', '>=2', false],
  ['2.0.post1', '<=2', false], ['2.0.post1.dev1', '<=2', false], ['3', '<=2', false],
  ['1', '>2', false], ['2.0.dev1', '>2', false], ['2.0a1', '>2', false], ['2.0a1.post1', '>2', false], ['2.0b1', '>2', false],
  ['2.0b1.dev1', '>2', false], ['2.0c1', '>2', false], ['2.0c1.post1.dev1', '>2', false], ['2.0rc1', '>2', false], ['2.0', '>2', false],
  ['2.0.post1', '>2', false], ['2.0.post1.dev1', '>2', false], ['2.0+local.version', '>2', false],
  ['4.1.0a2.dev1234+local', '>4.1.0a2.dev1234', false], ['1.0a1+local', '>1.0a1', false], ['1.0b1+local', '>1.0b1', false],
  ['1.0rc1+local', '>1.0rc1', false], ['1.0.post1+local', '>1.0.post1', false], ['1.0.dev1+local', '>1.0.dev1', false],
  ['1.0a1.dev1+local', '>1.0a1.dev1', false], ['1.0.post1.dev1+local', '>1.0.post1.dev1', false],
  ['2.0.dev1', '<2', false], ['2.0a1', '<2', false], ['2.0a1.post1', '<2', false], ['2.0b1', '<2', false], ['2.0b2.dev1', '<2', false],
  ['2.0c1', '<2', false], ['2.0c1.post1.dev1', '<2', false], ['2.0rc1', '<2', false], ['2.0', '<2', false], ['2.post1', '<2', false],
  ['2.post1.dev1', '<2', false], ['3', '<2', false], ['2.0', '~=1.0', false], ['1.1.0', '~=1.0.0', false], ['1.1.post1', '~=1.0.0', false],
  ['1.0', '~=2!1.0', false], ['2!1.0', '~=1.0', false], ['2!1.0', '==1.0', false], ['1.0', '==2!1.0', false], ['2!1.0', '==1.0.0.*', false],
  ['1.0', '==2!1.0.0.*', false], ['2!1.0', '==1.*', false], ['1.0', '==2!1.*', false], ['2!1.0', '!=2!1.0', false],
  // test_specifier_prereleases / post-base and earliest-pre-release rules.
  ['2.0a1', '<2.0', false], ['2.0a1', '<2.0a2', true], ['1.0.dev0', '>1.0.dev1', false], ['1.0.dev2', '>1.0.dev1', true],
  ['1.0.post0', '>1.0.dev1', true], ['1.0.post1', '>1.0.dev1', true], ['1.0.post0', '>1.0.dev0', true], ['1.0.post0', '>1.0a1', true],
  ['1.0.post0', '>1.0b1', true], ['1.0.post0', '>1.0rc1', true], ['1.0a1.post0', '>1.0a1', false], ['1.0b2.post0', '>1.0b2', false],
  ['1.0rc1.post0', '>1.0rc1', false], ['1.0a2.post0', '>1.0a1', true], ['1.0b2.post0', '>1.0b1', true], ['1.0', '>1.0.dev1', true],
  ['1.0a1', '>1.0.dev1', true], ['1.1', '>1.0.dev1', true], ['1.0.post0', '>1.0', false], ['1.0.post1', '>1.0', false],
  ['2.0.post0', '>1.0', true], ['0.9.post0', '>1.0', false], ['1.1.post0', '>1.0.dev1', true], ['0.9.post0', '>1.0.dev1', false],
  ['1.0.post1.dev0', '<1.0.post1', false], ['1.0.post0.dev0', '<1.0.post0', false], ['1.0.dev0', '<1.0.post1', true],
  ['1.0a1', '<1.0.post1', true], ['1.0rc1', '<1.0.post1', true], ['1.0.dev0', '<1.0.post0', true], ['1.0a1', '<1.0.post0', true],
  ['1.0b1', '<1.0.post0', true], ['1.0rc2', '<1.0.post0', true], ['1.0.post0.dev0', '<1.0.post1', true],
  ['1.0.post1.dev0', '<1.0.post2', true], ['1.0', '<1.0.post1', true], ['1.0.post0', '<1.0.post1', true], ['0.9', '<1.0.post1', true],
  ['1.0', '<1.0.post0', true],
  // test_invalid_version and test_arbitrary_equality.
  ['not a valid version', '==1.0', false], ['not a valid version', '==1.*', false], ['not a valid version', '>=1.0', false],
  ['not a valid version', '~=1.0', false], ['not a valid version', '!=1.0', false], ['not a valid version', '!=1.*', false],
  ['invalid', '===invalid', true], ['invalid', '===foobar', false], ['1.0.0', '===1.0', false], ['1.0', '===1.0', true],
  ['1.0+downstream1', '===1.0', false], ['1.0a1', '===1.0A1', true], ['lolwat', '===LoLWaT', true], ['1.01', '===1.1', false],
]

t.test('packaging Specifier.contains table (prereleases=True)', async (t) => {
  for (const [version, spec, expected] of CONTAINS) t.equal(set(spec).contains(version), expected, `${version} in ${spec}`)
})

t.test('pre-release exclusion by default (filter)', async (t) => {
  const id = (s: string): string => s
  t.same(set('>=1.2.3').filter(['1.2', '1.3', '1.5a1'], id), ['1.3'], 'final present: pre-release left out')
  t.same(set('>=1.2.3').filter(['1.2', '1.5a1'], id), ['1.5a1'], 'only a pre-release matches: kept')
  t.same(set('>=1.2.3').filter(['1.3', '1.5a1'], id, { prereleases: true }), ['1.3', '1.5a1'])
  t.same(set('>=1.2.3').filter(['1.2', '1.5a1'], id, { prereleases: false }), [], 'explicitly refused')
  t.same(set('>=2.0.dev1').filter(['2.0', '2.0a1'], id), ['2.0', '2.0a1'], 'a clause naming a pre-release admits them')
  t.same(set('!=1.0.dev1').filter(['1.0', '2.0a1'], id), ['1.0'], '!= never asks for pre-releases')
  t.same(set('').filter(['1.0', '2.0a1', 'junk'], id), ['1.0', 'junk'], 'empty set: any final; an unparsable name passes only as packaging keeps it')
  t.same(set('==2.0.*').filter(['2.0.dev1'], id), ['2.0.dev1'])
  t.same(set('>=1.0,<2.0').filter(['0.9', '1.0', '1.5', '2.0a1', '2.0'], id), ['1.0', '1.5'])
  t.equal(set(' >=1.0 , != 1.5.* ').toString(), '>=1.0,!=1.5.*')
  t.type(parseSpecifierSet('>=1.0,,<2'), 'string', 'empty clause refused')
})
