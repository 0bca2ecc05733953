import { readFileSync } from 'node:fs'
import t from 'tap'
import { comparePep440, comparePep440Strings, formatPep440, parsePep440 } from '../../engine/advisory/artifact/pep440.js'
import { DATA, pysecSamples, zipRecords, PYPI_MAL_ZIP } from './fixtures.js'

/** Versions named by the files of real PyPI Simple pages (django, requests, urllib3). */
function simplePageVersions(): string[] {
  const out = new Set<string>()
  for (const p of ['django', 'requests', 'urllib3']) {
    const html = readFileSync(`${DATA}/pypi-simple/pep503-html/dependabot-core/pypi_simple_response_${p}.html`, 'utf8')
    for (const m of html.matchAll(/>([A-Za-z0-9_.]+)-(\d[^<]*?)(?:\.tar\.gz|\.zip|-py[^<]*\.whl|-cp[^<]*\.whl)</g)) out.add(m[2] as string)
  }
  return [...out]
}

t.test('normalises the spellings PEP 440 allows', async (t) => {
  const cases: Array<[string, string]> = [
    ['1.0', '1.0'], ['v1.0', '1.0'], ['1.0-alpha1', '1.0a1'], ['1.0.ALPHA.1', '1.0a1'], ['1.0beta2', '1.0b2'],
    ['1.0c1', '1.0rc1'], ['1.0pre1', '1.0rc1'], ['1.0preview1', '1.0rc1'], ['1.0RC1', '1.0rc1'], ['1.0a', '1.0a0'],
    ['1.0-1', '1.0.post1'], ['1.0.post', '1.0.post0'], ['1.0-r4', '1.0.post4'], ['1.0rev4', '1.0.post4'],
    ['1.0-dev', '1.0.dev0'], ['1.0.dev-3', '1.0.dev3'], ['1!2.0', '1!2.0'], ['01.002', '1.2'],
    ['1.0+Ubuntu-1', '1.0+ubuntu.1'], ['1.0+abc_007', '1.0+abc.7'], [' 0.0.9 ', '0.0.9'], ['1.0b2.post345.dev456', '1.0b2.post345.dev456'],
  ]
  for (const [input, canonical] of cases) {
    const v = parsePep440(input)
    t.ok(v, `${input} parses`)
    if (v !== undefined) t.equal(formatPep440(v), canonical, input)
  }
  for (const bad of ['', 'abc', '1.0.', '1..0', '2019-09-12', '0.2.0-n653', '4.36.-1', '1.0+', '1.0+abc..d']) {
    t.equal(parsePep440(bad), undefined, `${JSON.stringify(bad)} does not parse`)
  }
})

t.test('orders the PEP 440 example sequence', async (t) => {
  // The ordering example of PEP 440 "Summary of permitted suffixes and relative ordering", plus local labels.
  const ordered = [
    '1.dev0', '1.0.dev456', '1.0a1', '1.0a2.dev456', '1.0a12.dev456', '1.0a12', '1.0b1.dev456', '1.0b2',
    '1.0b2.post345.dev456', '1.0b2.post345', '1.0rc1.dev456', '1.0rc1', '1.0', '1.0+abc.5', '1.0+abc.7', '1.0+5',
    '1.0.post456.dev34', '1.0.post456', '1.0.15', '1.1.dev1', '1!0.1',
  ]
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      const c = comparePep440Strings(ordered[i] as string, ordered[j] as string)
      t.equal(c, Math.sign(i - j), `${ordered[i]} vs ${ordered[j]}`)
    }
  }
  t.equal(comparePep440Strings('1.0', '1.0.0'), 0, 'trailing zeros do not count')
  t.equal(comparePep440Strings('1.0.0.0', '1'), 0)
  t.equal(comparePep440Strings('1.0+abc', '1.0+ABC'), 0, 'local labels ignore case')
  t.equal(comparePep440Strings('1.0+1', '1.0+abc'), 1, 'numeric local segments sort after alphanumeric ones')
  t.equal(comparePep440Strings('1.0+1.0', '1.0+1'), 1, 'a longer local label sorts after its prefix')
  t.equal(comparePep440Strings('99999999999999999999.1', '99999999999999999999.0'), 1, 'numbers of any size')
  t.equal(comparePep440Strings('x', '1.0'), undefined)
})

t.test('real versions from PyPI Simple pages parse and sort consistently', async (t) => {
  const versions = simplePageVersions()
  t.ok(versions.length > 300, `${versions.length} versions`)
  const parsed = versions.map((v) => parsePep440(v))
  t.equal(parsed.filter((p) => p === undefined).length, 0, 'every file version is PEP 440')
  const sorted = versions.map((v) => parsePep440(v)!).sort(comparePep440).map(formatPep440)
  const pos = (v: string): number => sorted.indexOf(formatPep440(parsePep440(v)!))
  t.ok(pos('1.10a1') < pos('1.10b1') && pos('1.10b1') < pos('1.10rc1') && pos('1.10rc1') < pos('1.10'))
  t.ok(pos('1.8c1') < pos('1.8'), 'c is a release candidate')
  t.ok(pos('1.9.13') < pos('1.10a1') && pos('1.11.29') < pos('2.0a1'))
})

t.test('real version strings in advisories: PYSEC samples and the trailing-space MAL record', async (t) => {
  let total = 0
  let unparseable = 0
  for (const r of pysecSamples()) {
    for (const a of r.affected ?? []) {
      for (const v of a.versions ?? []) { total++; if (parsePep440(v) === undefined) unparseable++ }
      for (const range of a.ranges ?? []) {
        if (range.type !== 'ECOSYSTEM') continue
        for (const e of range.events ?? []) for (const v of Object.values(e)) {
          total++
          if (v !== '0' && parsePep440(v as string) === undefined) unparseable++
        }
      }
    }
  }
  t.ok(total > 1000, `${total} version strings`)
  t.ok(unparseable < total / 100, `${unparseable} of ${total} do not parse`)
  const [mal] = await zipRecords(PYPI_MAL_ZIP, (n) => n.endsWith('/admcheck/MAL-2024-4732.json'))
  const listed = mal?.affected?.[0]?.versions ?? []
  t.ok(listed.includes('0.0.9 '), 'the record lists "0.0.9 " with its trailing space')
  t.equal(comparePep440Strings('0.0.9 ', '0.0.9'), 0, 'it equals 0.0.9')
})
