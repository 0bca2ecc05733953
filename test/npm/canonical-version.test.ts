import t from 'tap'
import semver from 'semver'
import { canonicalVersion } from '../../engine/npm/canonical-version.js'
import { fuzzBudget, seededRandom } from '../helpers/fuzz.js'
import { readPackument, REAL_PACKUMENTS } from '../packument/helpers.js'

/** What npm's picker reads a key as: semver's loose parser, nothing else. */
const bySemver = (key: string): string | undefined => semver.parse(key, { loose: true })?.version ?? undefined

t.test('canonical keys, aliases and keys nothing reads', async (t) => {
  for (const key of ['1.0.0', '0.0.0', '1.0.0-rc.1', '1.8.0-dev.20151117', '1.0.0-0', '1.0.0-x-y.0a', '999999999999999.0.0']) t.equal(canonicalVersion(key), key, `${key} is canonical`)
  for (const [key, version] of [['01.0.0', '1.0.0'], ['1.00.0', '1.0.0'], ['=1.0.0', '1.0.0'], ['v1.0.0', '1.0.0'], [' 1.0.0', '1.0.0'], ['1.0.0+b', '1.0.0'], ['1.0.0-01', '1.0.0-1'], ['1.0.0rc1', '1.0.0-rc1']] as const) {
    t.equal(canonicalVersion(key), version, `${JSON.stringify(key)} names ${version}`)
  }
  for (const key of ['1.0', 'banana', '', '__proto__', 'V1.0.0', '99999999999999999.0.0', `1.0.0-${'a'.repeat(300)}`]) t.equal(canonicalVersion(key), undefined, `${JSON.stringify(key.slice(0, 20))} names no version`)
})

t.test('the fast path answers as semver\'s loose parser does: every key of the real packuments, and random ones', async (t) => {
  let keys = 0
  for (const { file } of REAL_PACKUMENTS) {
    const versions = Object.keys((JSON.parse(readPackument(file).toString('utf8')) as { versions: object }).versions)
    const differ = versions.filter((key) => canonicalVersion(key) !== bySemver(key))
    t.same(differ, [], `${file}: ${versions.length} keys`)
    keys += versions.length
  }
  const { seed, deadline, maxCases } = fuzzBudget({ seconds: 1, seed: 0xc4_0001 })
  const rnd = seededRandom(seed)
  const pieces = ['0', '1', '9', '00', '01', '10', '999999999999999', '9999999999999999', '.', '.', '-', '+', 'a', 'rc', 'x-', 'v', '=', ' ', 'b', '-0', '.0']
  const differ: string[] = []
  let cases = 0
  while (Date.now() < deadline && cases < maxCases) {
    cases++
    let key = ''
    for (let n = 1 + Math.floor(rnd() * 9); n > 0; n--) key += pieces[Math.floor(rnd() * pieces.length)]
    if (canonicalVersion(key) !== bySemver(key) && differ.length < 10) differ.push(key)
  }
  t.same(differ, [], `${keys} real keys and ${cases} random ones (seed ${seed})`)
})
