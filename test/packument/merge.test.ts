import t from 'tap'
import { createRequire } from 'node:module'
import { isDeepStrictEqual } from 'node:util'
import { withholdingError } from '../../engine/listing/withholding.js'
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
  t.same(denied.withholding, { code: 'POLICY_WITHHELD', causes: { not_admitted: 3 } })
  t.equal(withholdingError(denied.withholding)?.status, 403)
  t.equal(withholdingError(denied.withholding)?.message, 'every public version is withheld by policy: 3 in quarantine or admitted by no rule (ask for one version\'s tarball to see when it is admitted)', 'the envelope says why (issue 17 item 5)')
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
  t.same(onlyAliases.withholding, { code: 'POLICY_WITHHELD', causes: { unservable: 2 } }, 'withheld (403), not an empty document')
})

t.test('a public key naming a version the private side names under an alias is shadowed, not gated', async (t) => {
  for (const privateKey of ['v1.0.0', '1.0.0+build', '=1.0.0']) {
    const priv = packument('p', [privateKey])
    const pub = packument('p', ['1.0.0', '2.0.0'])
    const seen: string[] = []
    const outcome = run({ packageName: 'p', decide: (f) => { seen.push(f.version); return decision('admit') } }, priv, pub)
    t.same(seen, ['2.0.0'], `${privateKey}: the public 1.0.0 is never judged`)
    t.same(Object.keys(body(outcome).versions), [privateKey, '2.0.0'], `${privateKey}: only the private copy of 1.0.0 is offered to the picker`)
    t.equal(outcome.counts.superseded, 1)
    t.notOk(outcome.selected.some((s) => s.version === '1.0.0'), 'and its artifact is not selectable from the public side')
  }
})

t.test('a public manifest whose name or version is not a string disagrees with its key', async (t) => {
  const pub = packument('p', ['1.0.0', '2.0.0', '3.0.0', '4.0.0'])
  const versions = pub['versions'] as Record<string, Record<string, unknown>>
  versions['1.0.0']!['version'] = 1
  versions['2.0.0']!['name'] = null
  versions['3.0.0']!['version'] = ['3.0.0']
  delete versions['4.0.0']!['version']
  const outcome = run({ packageName: 'p' }, undefined, pub)
  t.same(Object.keys(body(outcome).versions), ['4.0.0'], 'a missing version is no disagreement')
  t.same(outcome.dropped, [
    { version: '1.0.0', reason: 'version_mismatch' },
    { version: '2.0.0', reason: 'name_mismatch' },
    { version: '3.0.0', reason: 'version_mismatch' },
  ])
  const escaped = JSON.stringify(packument('p', ['5.0.0'])).replace('"version":"5.0.0"', '"version":"5.0.\\u0030"').replace('"name":"p","version"', '"name":"\\u0070","version"')
  t.same(Object.keys(body(run({ packageName: 'p' }, undefined, escaped)).versions), ['5.0.0'], 'escapes are read as a client reads them')
})

t.test('public policyRestrictions and stagedVersions, from which npm\'s picker takes manifests, are not relayed; private ones are', async (t) => {
  const smuggled = { versions: { '9.9.9': { name: 'p', version: '9.9.9', dist: { tarball: 'https://upstream.test/p/-/p-9.9.9.tgz' } } } }
  const pub = packument('p', ['1.0.0'], { policyRestrictions: smuggled, stagedVersions: smuggled, homepage: 'h' })
  for (const abbreviated of [false, true]) {
    const doc = body(run({ packageName: 'p', abbreviated }, undefined, pub))
    t.equal(doc.policyRestrictions, undefined, `abbreviated=${abbreviated}: no public policyRestrictions`)
    t.equal(doc.stagedVersions, undefined, `abbreviated=${abbreviated}: no public stagedVersions`)
  }
  t.equal(body(run({ packageName: 'p' }, undefined, pub)).homepage, 'h', 'other public fields are still relayed')
  const priv = packument('p', ['0.1.0'], { policyRestrictions: { versions: {} } })
  t.same(body(run({ packageName: 'p' }, priv, pub)).policyRestrictions, { versions: {} }, 'the trusted private side keeps its own')
})

t.test('duplicate keys are read as a client\'s JSON.parse reads them: the last one', async (t) => {
  const text = (members: string): string => `{"name":"p","versions":{"1.0.0":{"name":"p","version":"1.0.0",${members}}},"time":{"1.0.0":"2020-01-02T00:00:00.000Z"}}`
  const dist = (tarball: string, integrity: string): string => `"dist":{"tarball":"https://upstream.test/p/-/${tarball}","integrity":"${integrity}"}`
  const admitted = (doc: string, abbreviated = false): PackumentOutcome => run({ packageName: 'p', abbreviated }, undefined, doc)

  const replaced = admitted(text(`${dist('p-1.0.0.tgz', 'sha512-first')},"dist":{"shasum":"abc"}`))
  t.equal(replaced.body, undefined, 'a later dist without a tarball leaves nothing to serve')
  t.same(replaced.selected, [], 'and nothing selectable under the earlier tarball')
  t.equal(admitted(text(`${dist('p-1.0.0.tgz', 'sha512-first')},"dist":"gone"`)).body, undefined, 'nor does a later dist that is no object')

  const second = admitted(text(`${dist('p-1.0.0.tgz', 'sha512-first')},"dist":{"tarball":"https://upstream.test/p/-/p-1.0.0.tgz"}`))
  t.equal(second.selected[0]?.integrity, undefined, 'the integrity of the replaced dist is not the artifact\'s')

  const seen: Array<number | undefined> = []
  const timed = `{"name":"p","time":{"1.0.0":"2000-01-01T00:00:00.000Z"},"versions":{"1.0.0":{"name":"p","version":"1.0.0",${dist('p-1.0.0.tgz', 'sha512-x')}}},"time":null,"dist-tags":{"old":"1.0.0"},"dist-tags":[]}`
  const outcome = run({ packageName: 'p', decide: (f) => { seen.push(f.publishedAt?.getTime()); return decision('admit') } }, undefined, timed)
  t.same(seen, [undefined], 'a later time that is no object leaves the version without a publish time for the quarantine')
  t.same(body(outcome)['dist-tags'], { latest: '1.0.0' }, 'a later dist-tags that is no object leaves no tag of the earlier one')

  const scripts = (value: string): boolean => body(admitted(text(`${dist('p-1.0.0.tgz', 'sha512-x')},"scripts":${value}`), true)).versions['1.0.0'].hasInstallScript === true
  t.notOk(scripts('{"postinstall":"node x.js","postinstall":""}'), 'a repeated install script is judged by its last value')
  t.notOk(admitted(text(`${dist('p-1.0.0.tgz', 'sha512-x')},"scripts":{"install":"x"},"scripts":{}`), true).body === undefined, 'served')
  t.notOk(scripts('{"install":"x"},"scripts":{}'), 'a repeated scripts object replaces the earlier one')
  t.ok(scripts('{"preinstall":0.5}'), 'any number but 0 is truthy, as npm\'s minifier reads it')
  t.notOk(scripts('{"preinstall":-0.0}'), '-0 is not')
})

t.test('one file name, one verdict: an admitted version whose tarball has the file name of a refused one is withheld too', async (t) => {
  const pub = packument('p', ['1.0.0', '2.0.0', '3.0.0'])
  const versions = pub['versions'] as Record<string, { dist: { tarball: string } }>
  // 2.0.0 points at the file of 1.0.0, which the gate refuses: a lockfile's p-1.0.0.tgz must not be served as 2.0.0.
  versions['2.0.0']!.dist.tarball = 'https://upstream.test/p/-/p-1.0.0.tgz'
  const outcome = run({ packageName: 'p', decide: admitWhen((f) => f.version !== '1.0.0') }, undefined, pub)
  t.same(Object.keys(body(outcome).versions), ['3.0.0'])
  t.same(outcome.selected.filter((s) => s.filename === 'p-1.0.0.tgz').map((s) => s.version), ['1.0.0'], 'the file name selects the refused version only')
  t.match(outcome.counts, { keptPublic: 1, withheld: 2 })

  const alone = run({ packageName: 'p', decide: admitWhen((f) => f.version === '2.0.0') }, undefined, packument('p', ['1.0.0', '2.0.0'], {
    versions: { '1.0.0': versions['1.0.0'], '2.0.0': versions['2.0.0'] },
  }))
  t.equal(alone.body, undefined, 'nothing else survives: withheld')
  t.match(alone.withholding, { code: 'POLICY_WITHHELD' })
})

t.test('npm\'s own picker (npm-pick-manifest, as pacote runs it) finds no manifest the gate did not judge in the synthesized document', async (t) => {
  // Present through tap's pacote; the picker the npm CLI runs on every range.
  const pickManifest = createRequire(import.meta.url)('npm-pick-manifest') as (doc: unknown, wanted: string) => { version: string }
  const pub = packument('p', ['1.0.0', '01.0.1', 'v1.0.2', '1.0.3+b', '2.0.0'], {
    policyRestrictions: { versions: { '5.0.0': { name: 'p', version: '5.0.1', dist: { tarball: 'https://upstream.test/p/-/p-5.0.1.tgz' } } } },
  })
  const judged: string[] = []
  const doc = body(run({ packageName: 'p', decide: (f) => { judged.push(f.version); return decision(f.version === '1.0.0' ? 'deny' : 'admit') } }, undefined, pub))
  t.same(judged.sort(), ['1.0.0', '2.0.0'])
  const picked = (wanted: string): string | undefined => { try { return pickManifest(doc, wanted).version } catch { return undefined } }
  t.equal(picked('^1.0.0'), undefined, 'no alias of a 1.x version answers ^1.0.0 once 1.0.0 is denied')
  t.equal(picked('1.0.2'), undefined)
  t.equal(picked('^5.0.0'), undefined, 'no public policyRestrictions manifest answers a range nothing else satisfies')
  t.equal(picked('^2.0.0'), '2.0.0')
  t.ok(pickManifest(JSON.parse(JSON.stringify(pub)), '^1.0.0').version !== '1.0.0', 'while over the public document itself the picker takes an alias')
})
