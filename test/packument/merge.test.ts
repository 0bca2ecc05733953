import t from 'tap'
import { isDeepStrictEqual } from 'node:util'
import { withholdingError } from '../../engine/packument/merge.js'
import { runPackumentPipeline, type PackumentOutcome, type PackumentRequest } from '../../engine/packument/pipeline.js'
import { referenceMerge } from '../../engine/packument/reference.js'
import type { Decision, VersionFacts } from '../../engine/policy/decision.js'
import { admitAll, admitWhen, chunked, decision, expectCode, packument, readPackument, REAL_PACKUMENTS, utf8 } from './helpers.js'

const BASE = 'http://proxy.test:4873'

function run(
  request: Partial<PackumentRequest> & { packageName: string },
  privateDoc: unknown,
  publicDoc: unknown,
): PackumentOutcome {
  const toChunks = (doc: unknown): Uint8Array[] | undefined =>
    doc === undefined ? undefined : chunked(utf8(typeof doc === 'string' ? doc : JSON.stringify(doc)), 61)
  return runPackumentPipeline(
    { baseUrl: BASE, abbreviated: false, decide: admitAll, ...request },
    toChunks(privateDoc),
    toChunks(publicDoc),
  )
}

function body(outcome: PackumentOutcome): any {
  if (outcome.body === undefined) throw new Error('no body')
  return JSON.parse(Buffer.from(outcome.body).toString('utf8'))
}

t.test('private versions are trusted and win every collision', async (t) => {
  const priv = packument('p', ['1.0.0', '1.1.0'], { readme: 'private readme', _rev: 'private-rev' })
  ;(priv['versions'] as any)['1.1.0'].description = 'the private 1.1.0'
  const pub = packument('p', ['1.0.0', '1.1.0', '1.2.0', '2.0.0'], { readme: 'public readme', homepage: 'https://public.test' })
  const seen: string[] = []
  const outcome = run({ packageName: 'p', decide: (f) => { seen.push(f.version); return f.version === '2.0.0' ? decision('deny') : decision('admit') } }, priv, pub)
  const doc = body(outcome)
  t.same(seen, ['1.2.0', '2.0.0'], 'only public versions the private side lacks are gated')
  t.same(Object.keys(doc.versions), ['1.0.0', '1.1.0', '1.2.0'])
  t.equal(doc.versions['1.1.0'].description, 'the private 1.1.0', 'private manifest wins')
  t.equal(doc.readme, 'private readme', 'private top-level field wins')
  t.equal(doc._rev, 'private-rev')
  t.equal(doc.homepage, 'https://public.test', 'public-only field relayed')
  t.same(outcome.counts, { keptPrivate: 2, keptPublic: 1, withheld: 1, superseded: 2, unservable: 0, dropped: 0 })
  t.same(outcome.selected.map((s) => s.version), ['1.2.0', '2.0.0'], 'selected records are the gated public versions, withheld ones included')
  const published = (pub['time'] as Record<string, string> | undefined)?.['1.2.0']
  t.equal(outcome.selected[0]?.publishedAt, published === undefined ? undefined : Date.parse(published), 'with the upstream publish time')
  t.equal(outcome.withholding, undefined)
})

t.test('tarballs are rewritten; integrity and shasum are kept byte for byte', async (t) => {
  const pub = packument('@scope/pkg', ['1.0.0'])
  const text = JSON.stringify(pub)
    .replace('"integrity":"', '"integrity" : "sha1-\\u0041\\/')
    .replace('"tarball":"https://upstream.test/@scope/pkg/-/pkg-1.0.0.tgz"', '"tarball":"https:\\/\\/upstream.test\\/@scope\\/pkg\\/-\\/pkg-1.0.0.tgz?token=x"')
  const outcome = run({ packageName: '@scope/pkg' }, undefined, text)
  const doc = body(outcome)
  t.equal(doc.versions['1.0.0'].dist.tarball, `${BASE}/js/@scope%2fpkg/-/pkg-1.0.0.tgz`, 'scoped URL form, last path segment, no query')
  const raw = Buffer.from(outcome.body!).toString('utf8')
  t.ok(raw.includes('"integrity" : "sha1-\\u0041\\/'), 'the integrity bytes are untouched, escapes and spacing included')
  t.ok(raw.includes('"shasum":"0123456789abcdef0123456789abcdef01234567"'))
  t.same(outcome.selected, [{
    version: '1.0.0',
    filename: 'pkg-1.0.0.tgz',
    tarball: 'https://upstream.test/@scope/pkg/-/pkg-1.0.0.tgz?token=x',
    integrity: doc.versions['1.0.0'].dist.integrity,
    shasum: '0123456789abcdef0123456789abcdef01234567',
    publishedAt: outcome.selected[0]?.publishedAt,
  }], 'the selected record keeps the authoritative URL')
  const trailing = run({ packageName: 'p', baseUrl: 'http://proxy.test/' }, undefined, packument('p', ['1.0.0']))
  t.equal(body(trailing).versions['1.0.0'].dist.tarball, 'http://proxy.test/js/p/-/p-1.0.0.tgz', 'a trailing slash of the base is not doubled')
})

t.test('latest is repointed to the newest surviving release', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0', '2.0.0-beta.1', '1.2.0', '2.0.0'])
  ;(pub['dist-tags'] as any).next = '2.0.0-beta.1'
  ;(pub['dist-tags'] as any).old = '1.0.0'
  const withheld = run({ packageName: 'p', decide: admitWhen((f) => f.version !== '2.0.0' && f.version !== '1.0.0') }, undefined, pub)
  t.same(body(withheld)['dist-tags'], { latest: '1.2.0', next: '2.0.0-beta.1' }, 'latest moved past the prerelease, the tag of a removed version dropped')
  const onlyPre = run({ packageName: 'p', decide: admitWhen((f) => f.version.includes('beta')) }, undefined, pub)
  t.same(body(onlyPre)['dist-tags'], { latest: '2.0.0-beta.1', next: '2.0.0-beta.1' }, 'with no release, the newest prerelease')
  const priv = packument('p', ['0.9.0'])
  ;(priv['dist-tags'] as any).next = '0.9.0'
  const merged = run({ packageName: 'p' }, priv, pub)
  t.same(body(merged)['dist-tags'], { latest: '2.0.0', next: '0.9.0', old: '1.0.0' }, 'the private tag wins a collision')
})

t.test('time keeps created, modified and the surviving versions', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0', '1.2.0'])
  ;(pub['time'] as any).unpublished = { time: 'x' }
  const outcome = run({ packageName: 'p', decide: admitWhen((f) => f.version !== '1.1.0') }, undefined, pub)
  t.same(Object.keys(body(outcome).time), ['modified', 'created', '1.0.0', '1.2.0'])
})

t.test('the gate sees the upstream publish time, parsed only when read', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0'])
  ;(pub['time'] as any)['1.1.0'] = '2024-02-23T22:24:08.672000+00:00'
  const facts: VersionFacts[] = []
  run({ packageName: 'p', decide: (f) => { facts.push(f); return decision('admit') } }, undefined, pub)
  t.equal(facts[0]!.publishedAt?.toISOString(), '2020-01-02T00:00:00.000Z')
  t.equal(facts[1]!.publishedAt?.toISOString(), '2024-02-23T22:24:08.672Z', 'microseconds and +00:00 parse')
  t.equal(facts[1]!.name, 'p')
  t.equal(facts[1]!.ecosystem, 'js')
})

t.test('the abbreviated form keeps the install fields and time', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0'])
  const versions = pub['versions'] as any
  versions['1.0.0'].scripts = { postinstall: 'node build.js' }
  versions['1.0.0'].bundledDependencies = ['dep']
  versions['1.0.0'].dependencies = { dep: '^1.0.0' }
  versions['1.1.0'].engines = { node: '>=20' }
  versions['1.1.0'].deprecated = 'use 2'
  const outcome = run({ packageName: 'p', abbreviated: true }, undefined, pub)
  const doc = body(outcome)
  t.same(Object.keys(doc), ['name', 'dist-tags', 'modified', 'versions', 'time'])
  t.equal(doc.modified, '2021-01-01T00:00:00.000Z')
  t.same(doc.versions['1.0.0'], {
    name: 'p', version: '1.0.0', dependencies: { dep: '^1.0.0' },
    dist: { ...versions['1.0.0'].dist, tarball: `${BASE}/js/p/-/p-1.0.0.tgz` },
    bundleDependencies: ['dep'], hasInstallScript: true,
  })
  t.same(Object.keys(doc.versions['1.1.0']).sort(), ['deprecated', 'dist', 'engines', 'name', 'version'])
  t.same(Object.keys(doc.time), ['modified', 'created', '1.0.0', '1.1.0'], 'time is kept for the age gates of pnpm and yarn')
})

t.test('when nothing survives, the most recoverable cause wins', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0', '1.2.0'])
  const byVersion = (map: Record<string, Decision>) => (f: VersionFacts) => map[f.version]!
  const denied = run({ packageName: 'p', decide: () => decision('deny') }, undefined, pub)
  t.equal(denied.body, undefined)
  t.same(denied.withholding, { code: 'POLICY_WITHHELD' })
  t.equal(withholdingError(denied.withholding)?.status, 403)
  const expired = run({
    packageName: 'p',
    decide: byVersion({ '1.0.0': decision('deny'), '1.1.0': decision('expired', { ageSeconds: 700000, maxAgeSeconds: 518400 }), '1.2.0': decision('deny') }),
  }, undefined, pub)
  t.same(expired.withholding, { code: 'ADVISORY_EXPIRED', ageSeconds: 700000, maxAgeSeconds: 518400 })
  const error = withholdingError(expired.withholding)!
  t.equal(error.status, 503)
  t.match(error.message, /700000.*518400/, 'the message states the age and the maximum')
  const unavailable = run({
    packageName: 'p',
    decide: byVersion({ '1.0.0': decision('expired'), '1.1.0': decision('unavailable'), '1.2.0': decision('deny') }),
  }, undefined, pub)
  t.same(unavailable.withholding, { code: 'ADVISORY_UNAVAILABLE' })
  t.equal(withholdingError(unavailable.withholding)?.retryAfter, 30)
  const privateSaves = run({ packageName: 'p', decide: () => decision('deny') }, packument('p', ['0.1.0']), pub)
  t.equal(privateSaves.withholding, undefined, 'a private version survives')
  t.same(Object.keys(body(privateSaves).versions), ['0.1.0'])
  const empty = run({ packageName: 'p' }, undefined, packument('p', []))
  t.equal(empty.withholding, undefined, 'no version at all is not a withholding')
  t.same(body(empty).versions, {})
})

t.test('observations carry skipped checks and advisory causes', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0', '1.2.0'])
  const decide = (f: VersionFacts): Decision => {
    if (f.version === '1.0.0') return decision('admit', { skipped: [{ rule: 'DenyIfCve', cause: 'no_database' }], advisory: [{ rule: 'DenyIfCve', cause: 'no_database' }] })
    if (f.version === '1.1.0') return decision('admit', { advisory: [{ rule: 'DenyIfEpss', cause: undefined }] })
    return decision('unavailable', { advisory: [{ rule: 'DenyIfCve', cause: 'expired' }] })
  }
  const outcome = run({ packageName: 'p', decide }, undefined, pub)
  t.same(outcome.observations.map((o) => [o.version, o.decision.verdict]), [['1.0.0', 'admit'], ['1.2.0', 'unavailable']])
  t.same(outcome.advisoryAnswered, ['DenyIfEpss'])
})

t.test('a document for another package is UPSTREAM_WRONG_PACKAGE', async (t) => {
  expectCode(t, () => run({ packageName: 'p' }, undefined, packument('q', ['1.0.0'])), 'UPSTREAM_WRONG_PACKAGE', 'public', { upstream: 'public' })
  expectCode(t, () => run({ packageName: 'p' }, packument('q', ['1.0.0']), undefined), 'UPSTREAM_WRONG_PACKAGE', 'private', { upstream: 'private' })
})

t.test('a public version without a usable tarball is withheld', async (t) => {
  const pub = packument('p', ['1.0.0', '1.1.0'])
  delete (pub['versions'] as any)['1.1.0'].dist.tarball
  const outcome = run({ packageName: 'p' }, undefined, pub)
  t.same(Object.keys(body(outcome).versions), ['1.0.0'])
  t.equal(outcome.counts.unservable, 1)
})

t.test('equal to the JSON.parse reference over the real packuments', async (t) => {
  // A gate that withholds about a third of the versions, and for the larger
  // documents a private side made of a slice of the public one.
  const decide = admitWhen((f) => (f.version.charCodeAt(f.version.length - 1) % 3) !== 0)
  for (const { name, file } of REAL_PACKUMENTS) {
    const bytes = readPackument(file)
    const text = bytes.toString('utf8')
    const full = JSON.parse(text)
    const privateVersions = Object.keys(full.versions).slice(0, 5)
    const priv = JSON.stringify({
      ...full,
      readme: 'private',
      versions: Object.fromEntries(privateVersions.map((v) => [v, { ...full.versions[v], description: 'private build' }])),
      'dist-tags': { latest: privateVersions[privateVersions.length - 1] },
    })
    for (const abbreviated of [false, true]) {
      for (const withPrivate of [false, true]) {
        // The megabyte documents run two of the four combinations, to keep the file fast.
        if (bytes.length > 1e6 && withPrivate === abbreviated) continue
        const request = { packageName: name, baseUrl: BASE, abbreviated, decide }
        const outcome = runPackumentPipeline(request, withPrivate ? [utf8(priv)] : undefined, chunked(bytes, 65536))
        const expected = referenceMerge(request, withPrivate ? priv : undefined, text)
        // isDeepStrictEqual: t.same on ten-megabyte trees takes minutes.
        const same = isDeepStrictEqual(body(outcome), expected)
        t.ok(same, `${file} abbreviated=${abbreviated} private=${withPrivate}`)
        if (!same && bytes.length < 200000) t.same(body(outcome), expected, 'the difference')
      }
    }
  }
})

t.test('escapes, unicode and every chunk boundary render the same document', async (t) => {
  const doc = packument('uni', ['1.0.0', '1.1.0-rc.1', '1.1.0'])
  const versions = doc['versions'] as any
  versions['1.0.0'].description = 'quote " backslash \\ tab \t 中文 😀 \u0001'
  versions['1.1.0'].scripts = { install: 'node-gyp rebuild' }
  versions['1.1.0']['clé'] = { '😀': ['ü'] }
  doc['readme'] = 'ünïcödé readme \u2028'
  const text = JSON.stringify(doc, null, 2).replace('"tarball": "https://upstream.test/uni/-/uni-1.1.0.tgz"', '"tarball": "https:\\/\\/upstream.test\\/\\u00fcn\\u00ef\\/-\\/%C3%BCn%C3%AF-1.1.0.tgz"')
  const bytes = utf8(text)
  for (const abbreviated of [false, true]) {
    const request = { packageName: 'uni', baseUrl: BASE, abbreviated, decide: admitWhen((f) => f.version !== '1.1.0-rc.1') }
    const whole = runPackumentPipeline(request, undefined, [bytes])
    t.same(JSON.parse(Buffer.from(whole.body!).toString('utf8')), referenceMerge(request, undefined, text), `abbreviated=${abbreviated}: equal to the reference`)
    let same = 0
    for (let at = 0; at <= bytes.length; at++) {
      const split = runPackumentPipeline(request, undefined, [bytes.subarray(0, at), bytes.subarray(at)])
      if (split.etag === whole.etag && Buffer.compare(Buffer.from(split.body!), Buffer.from(whole.body!)) === 0) same++
      else t.fail(`abbreviated=${abbreviated}: split at ${at} renders differently`)
    }
    t.equal(same, bytes.length + 1, `abbreviated=${abbreviated}: every split renders the same bytes`)
  }
  const outcome = runPackumentPipeline({ packageName: 'uni', baseUrl: BASE, abbreviated: false, decide: admitAll }, undefined, [bytes])
  t.equal(body(outcome).versions['1.1.0'].dist.tarball, `${BASE}/js/uni/-/%C3%BCn%C3%AF-1.1.0.tgz`)
  t.equal(outcome.selected.find((s) => s.version === '1.1.0')?.filename, 'ünï-1.1.0.tgz', 'the selected file name is decoded')
})

t.test('public keys an npm client reads as another version, or no version, are dropped before any rule; so are manifests that disagree with their key', async (t) => {
  const pub = packument('p', ['1.0.0', '01.0.0', '1.00.0', '=1.0.0', 'v1.0.0', '1.0.0+build', 'v2.0.0', 'banana', '3.0.0', '4.0.0', '5.0.0'])
  const versions = pub['versions'] as Record<string, Record<string, unknown>>
  versions['4.0.0']!['name'] = 'other-package'
  versions['5.0.0']!['version'] = '5.0.1'
  const seen: string[] = []
  const outcome = run({ packageName: 'p', decide: (f) => { seen.push(f.version); return f.version === '1.0.0' ? decision('deny') : decision('admit') } }, undefined, pub)
  const doc = body(outcome)
  t.same(seen, ['1.0.0', '3.0.0'], 'only canonical keys whose manifests agree reach the rules')
  t.same(Object.keys(doc.versions), ['3.0.0'], 'DenyIdentity-style denial of 1.0.0 holds against every alias')
  t.same(outcome.counts.dropped, 9)
  t.same(outcome.dropped, [
    { version: '01.0.0', reason: 'alias_key' },
    { version: '1.00.0', reason: 'alias_key' },
    { version: '=1.0.0', reason: 'alias_key' },
    { version: 'v1.0.0', reason: 'alias_key' },
    { version: '1.0.0+build', reason: 'alias_key' },
    { version: 'v2.0.0', reason: 'alias_key' },
    { version: 'banana', reason: 'unreadable_key' },
    { version: '4.0.0', reason: 'name_mismatch' },
    { version: '5.0.0', reason: 'version_mismatch' },
  ])
  t.same(outcome.selected.map((s) => s.version).sort(), ['1.0.0', '3.0.0'], 'no dropped key is selectable by file name: its artifact is refused')
  t.same(referenceMerge({ packageName: 'p', baseUrl: BASE, abbreviated: false, decide: (f) => (f.version === '1.0.0' ? decision('deny') : decision('admit')) }, undefined, JSON.stringify(pub)), doc, 'the reference merge agrees')

  const onlyAliases = run({ packageName: 'p' }, undefined, packument('p', ['v1.0.0', '01.0.0']))
  t.equal(outcome.withholding, undefined)
  t.equal(onlyAliases.body, undefined, 'nothing survives')
  t.same(onlyAliases.withholding, { code: 'POLICY_WITHHELD' }, 'withheld (403), not an empty document')
})
