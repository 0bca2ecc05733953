import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import semver from 'semver'
import t from 'tap'
import { comparePep440, parsePep440 } from '../../engine/advisory/artifact/pep440.js'
import { parseNpmVersion } from '../../engine/advisory/artifact/npm-version.js'
import { compareBytes, KeyWriter, writeExactKey, writeVersionKey } from '../../engine/advisory/artifact/version-key.js'
import { DATA } from './fixtures.js'

function key(eco: 'js' | 'py', v: string): Uint8Array | undefined {
  const w = new KeyWriter()
  return writeVersionKey(w, eco, v) ? w.copy() : undefined
}

function cmpKeys(a: Uint8Array, b: Uint8Array): number {
  return Math.sign(compareBytes(a, 0, a.length, b, b.length))
}

function packumentVersions(file: string): string[] {
  const raw = readFileSync(`${DATA}/npm-packuments/raw/${file}`)
  const doc = JSON.parse((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as { versions: Record<string, unknown> }
  return Object.keys(doc.versions)
}

t.test('semver keys order every real version of react, lodash and express as semver does', async (t) => {
  const versions = [...packumentVersions('react.json.gz'), ...packumentVersions('lodash.json'), ...packumentVersions('express.json')]
  t.ok(versions.length > 3000)
  const keyed = versions.map((v) => ({ v, k: key('js', v) }))
  t.equal(keyed.filter((x) => x.k === undefined).length, 0, 'all keys')
  const byKey = [...keyed].sort((a, b) => cmpKeys(a.k!, b.k!)).map((x) => x.v)
  // Loose, as the real lodash packument holds `1.0.0beta`-style versions.
  const bySemver = [...versions].sort((a, b) => semver.compare(a, b, true))
  // Sorting by key and by semver.compare agree wherever semver distinguishes.
  for (let i = 0; i < byKey.length; i++) {
    if (semver.compare(byKey[i] as string, bySemver[i] as string, true) !== 0) {
      t.fail(`order differs at ${i}: ${byKey[i]} vs ${bySemver[i]}`)
      return
    }
  }
  // Random pairs, including pre-releases of react (e.g. 0.0.0-experimental-*, 19.0.0-rc-*).
  let seed = 7
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
  const disagreements: string[] = []
  for (let i = 0; i < 20000; i++) {
    const a = keyed[rnd(keyed.length)]!
    const b = keyed[rnd(keyed.length)]!
    if (cmpKeys(a.k!, b.k!) !== semver.compare(a.v, b.v, true)) disagreements.push(`${a.v} vs ${b.v}`)
  }
  t.same(disagreements, [], '20000 random pairs agree')
})

t.test('semver key details', async (t) => {
  const order = ['0.0.0', '0.0.1', '1.0.0-0', '1.0.0-1', '1.0.0-2', '1.0.0-10', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta',
    '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.1', '1.2.0', '1.10.0', '10.0.0', '9007199254740991.0.0']
  for (let i = 1; i < order.length; i++) t.equal(cmpKeys(key('js', order[i - 1]!)!, key('js', order[i]!)!), -1, `${order[i - 1]} < ${order[i]}`)
  t.equal(cmpKeys(key('js', '1.0.0+build.1')!, key('js', '1.0.0')!), 0, 'build metadata is ignored')
  t.equal(cmpKeys(key('js', '1.90')!, key('js', '1.90.0')!), 0, 'a partial version reads as its lowest release')
  t.equal(parseNpmVersion('1')?.version, '1.0.0')
  // The fast path for plain releases writes what the semver parser would.
  t.same(key('js', '01.002.0003'), key('js', '1.2.3'))
  t.same(key('js', '0.0.0'), key('js', ' 0.0.0 '))
  t.same(key('js', '100000000000000.0.0'), key('js', 'v100000000000000.0.0'))
  t.equal(key('js', '9007199254740992.0.0'), undefined, 'above MAX_SAFE_INTEGER, as semver refuses')
  t.equal(key('js', '1.2.3.4'), undefined)
  t.equal(key('js', '1..3'), undefined)
  // Pre-releases and build metadata through the fast path agree with the parser path.
  t.same(key('js', '1.0.0-rc.01'), key('js', 'v1.0.0-rc.1'), 'numeric identifiers compare by value')
  t.same(key('js', '0.0.0-experimental-2b3d5b359-20230401+sha.1'), key('js', '=0.0.0-experimental-2b3d5b359-20230401'))
  for (const bad of ['1.0.0-', '1.0.0-a..b', '1.0.0+', '1.0.0-a_b', `1.0.0-${'a'.repeat(300)}`]) {
    const k = key('js', bad)
    if (parseNpmVersion(bad) === undefined) t.equal(k, undefined, `${bad.slice(0, 20)} refused as the parser refuses it`)
    else t.equal(cmpKeys(k!, key('js', '1.0.0-0')!), semver.compare(bad, '1.0.0-0', true), `${bad} ordered as the parser reads it`)
  }
  t.equal(key('js', `1.0.0-${'a'.repeat(300)}`), undefined, 'semver refuses strings over 256 characters')
  t.equal(key('js', 'not-a-version'), undefined)
  // "0" reads as 0.0.0, above 0.0.0-experimental-*: which is why the compiler treats introduced "0" as unbounded.
  t.same(key('js', '0'), key('js', '0.0.0'))
  t.equal(cmpKeys(key('js', '0.0.0-experimental-1')!, key('js', '0')!), -1)
})

t.test('PEP 440 keys agree with comparePep440 on real and edge versions', async (t) => {
  const versions = ['1.dev0', '1.0.dev456', '1.0a1', '1.0a2.dev456', '1.0a12.dev456', '1.0a12', '1.0b1.dev456', '1.0b2',
    '1.0b2.post345.dev456', '1.0b2.post345', '1.0rc1.dev456', '1.0rc1', '1.0', '1.0.0', '1.0+abc.5', '1.0+abc.7', '1.0+5',
    '1.0.post456.dev34', '1.0.post456', '1.0.15', '1.1.dev1', '1!0.1', '2.0.post1', '2.0.post1.dev1', '0.0.9 ', '0.0.9',
    '1.10a1', '1.10b1', '1.10', '1.8c1', '3.2rc1', '1.0+abc', '1.0+abc.0', '1.0+0', '1.0+abc.def', '1.0.0.0.0.1']
  for (const a of versions) {
    for (const b of versions) {
      const ka = key('py', a)!
      const kb = key('py', b)!
      t.equal(cmpKeys(ka, kb), comparePep440(parsePep440(a)!, parsePep440(b)!), `${a} vs ${b}`)
    }
  }
})

t.test('exact keys: raw strings for unparseable versions, after every parsed key', async (t) => {
  const w = new KeyWriter()
  t.equal(writeExactKey(w, 'py', '4.36.-1'), false)
  const raw = w.copy()
  t.equal(raw[0], 0xff)
  t.equal(Buffer.from(raw.subarray(1)).toString(), '4.36.-1')
  t.equal(cmpKeys(key('py', '99!99')!, raw), -1)
  t.equal(writeExactKey(w, 'py', ' 0.0.9 '), true)
  t.same(w.copy(), key('py', '0.0.9'))
})
