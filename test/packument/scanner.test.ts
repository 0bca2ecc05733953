import t from 'tap'
import { isServiceError } from '../../engine/errors.js'
import type { PackumentIndex } from '../../engine/packument/packument-index.js'
import { memberString, MEMBER_STRIDE, VERSION_HAS_INSTALL_SCRIPT } from '../../engine/packument/packument-index.js'
import { MAX_NESTING_DEPTH, PackumentScanner, scanPackument } from '../../engine/packument/scanner.js'
import { chunked, expectCode, packument, readPackument, REAL_PACKUMENTS, utf8 } from './helpers.js'

/** Everything the index says, decoded, so two indexes can be compared. */
function project(index: PackumentIndex): unknown {
  const src = index.source
  const slice = (start: number, end: number): string | null => (start < 0 ? null : src.utf8(start, end))
  return {
    byteLength: index.byteLength,
    members: [...index.members].map(([k, m]) => [k, slice(m.keyStart, m.valueEnd), m.valueStart, m.plain]),
    versions: [...index.versions].map(([v, e]) => [
      v, slice(e.keyStart, e.valueEnd), e.valueStart,
      slice(e.tarballStart, e.tarballEnd), slice(e.integrityStart, e.integrityEnd), slice(e.shasumStart, e.shasumEnd),
      e.tarballPlain, e.memberFirst, e.memberCount, e.flags,
    ]),
    time: [...index.time].map(([k, m]) => [k, slice(m.keyStart, m.valueEnd)]),
    tags: [...index.distTags].map(([k, m]) => [k, slice(m.keyStart, m.valueEnd), m.plain]),
    pool: Array.from(index.memberPool),
  }
}

const tricky = JSON.stringify({
  _id: 'tricky',
  name: 'tricky',
  'dist-tags': { latest: '1.0.0', 'b\u00e9ta': '2.0.0-rc.1' },
  versions: {
    '1.0.0': {
      name: 'tricky', version: '1.0.0',
      description: 'quote " backslash \\ slash / tab \t newline \n unicode \u00e9\u4e2d\ud83d\ude00 nul-ish \u0001',
      numbers: [0, -0, 1.5, -2e10, 3E+2, 4e-3, 12345678901234567890, 0.0],
      literals: [true, false, null, [], {}, [[[]]]],
      scripts: { postinstall: 'node x.js' },
      'ke\u00ffy \u4e2d': { nested: { deeper: ['\ud83d\ude00'] } },
      dist: { shasum: 'abc', tarball: 'https://upstream.test/tricky/-/tricky-1.0.0.tgz', integrity: 'sha512-x/y+z==' },
    },
    '2.0.0-rc.1': {
      name: 'tricky', version: '2.0.0-rc.1',
      bundledDependencies: ['a'],
      dist: { tarball: 'https://upstream.test/tricky/-/tricky-2.0.0-rc.1.tgz?x=1#y' },
    },
  },
  time: { created: '2020-01-01T00:00:00.000Z', '1.0.0': '2020-01-02T00:00:00.000Z', '2.0.0-rc.1': '2020-01-03T00:00:00.000Z' },
}, null, 1).replace('"shasum": "abc"', '"shasum" :\t"a\\u0062c"').replace('tricky-1.0.0.tgz"', 'tricky-1.0.0.tgz" ')
  .replace('"integrity": "sha512-x/y+z=="', '"integrity": "sha512-x\\/y+z=="')

t.test('a chunk boundary at every byte position gives the same index', async (t) => {
  const bytes = utf8(tricky)
  const whole = project(scanPackument([bytes]))
  let same = 0
  for (let at = 0; at <= bytes.length; at++) {
    const index = scanPackument([bytes.subarray(0, at), bytes.subarray(at)])
    if (JSON.stringify(project(index)) === JSON.stringify(whole)) same++
    else t.fail(`split at ${at} differs`)
  }
  t.equal(same, bytes.length + 1, 'every split agrees')
  t.same(project(scanPackument(chunked(bytes, 1))), whole, 'one-byte chunks agree')
  t.same(project(scanPackument(chunked(bytes, 7))), whole, 'seven-byte chunks agree')
})

t.test('the index holds the slices a packument needs', async (t) => {
  const index = scanPackument([utf8(tricky)])
  const doc = JSON.parse(tricky)
  t.same([...index.members.keys()], Object.keys(doc), 'top-level keys in order')
  t.equal(memberString(index, index.members.get('name')), 'tricky')
  t.same([...index.versions.keys()], ['1.0.0', '2.0.0-rc.1'])
  const v1 = index.versions.get('1.0.0')!
  t.same(JSON.parse(index.source.utf8(v1.valueStart, v1.valueEnd)), doc.versions['1.0.0'], 'manifest slice parses to the manifest')
  t.equal(index.source.utf8(v1.tarballStart, v1.tarballEnd), '"https://upstream.test/tricky/-/tricky-1.0.0.tgz"')
  t.equal(index.source.utf8(v1.integrityStart, v1.integrityEnd), '"sha512-x\\/y+z=="', 'integrity slice is the raw bytes')
  t.equal(index.source.utf8(v1.shasumStart, v1.shasumEnd), '"a\\u0062c"')
  t.equal(index.source.jsonString(v1.shasumStart, v1.shasumEnd, v1.shasumPlain), 'abc')
  t.ok((v1.flags & VERSION_HAS_INSTALL_SCRIPT) !== 0, 'postinstall seen')
  t.same([...index.distTags.keys()], ['latest', 'b\u00e9ta'], 'non-ASCII key decoded')
  t.same([...index.time.keys()], ['created', '1.0.0', '2.0.0-rc.1'])
  const keys: string[] = []
  for (let p = v1.memberFirst * MEMBER_STRIDE; p < (v1.memberFirst + v1.memberCount) * MEMBER_STRIDE; p += MEMBER_STRIDE) {
    const text = index.source.utf8(index.memberPool[p]!, index.memberPool[p + 2]!)
    keys.push(Object.keys(JSON.parse(`{${text}}`))[0]!)
  }
  t.same(keys, ['name', 'version', 'dist'], 'the members the abbreviated form keeps are recorded')
})

t.test('malformed JSON is UPSTREAM_DECODE, whatever the chunking', async (t) => {
  const bad = [
    '', '{', '{"versions":{}', '{"a":1,}', '{"a" 1}', '{"a":01}', '{"a":1.}', '{"a":-}', '{"a":1e}', '{"a":tru}',
    '{"a":nul}', '{"a":"\\x"}', '{"a":"\\u12G4"}', '{"a":"tab\there"}', "{'a':1}", '{"a":1}x', '{"a":[1,]}',
    '{"a":[1}', '{"a":{]}', '[1]', '"x"', '{"versions":[]}', '{"versions":{"1.0.0":"x"}}', '{"versions":1}',
    '{"a":"\u00e9"', '{"a":NaN}', '{"a":+1}', '{,}', '{"a":1 "b":2}',
  ]
  for (const text of bad) {
    for (const size of [1, 3, 1000]) {
      try {
        scanPackument(chunked(utf8(text), size))
        t.fail(`accepted ${JSON.stringify(text)}`)
      } catch (error) {
        if (!isServiceError(error, 'UPSTREAM_DECODE')) t.fail(`${JSON.stringify(text)}: ${String(error)}`)
      }
    }
  }
  const invalidUtf8 = [
    Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d]), // cut sequence
    Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // encoded surrogate
    Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]), // overlong
    Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xf0, 0x9f, 0x98, 0x22, 0x7d]), // truncated 4-byte
  ]
  for (const bytes of invalidUtf8) {
    for (let at = 0; at <= bytes.length; at++) {
      expectCode(t, () => scanPackument([bytes.subarray(0, at), bytes.subarray(at)]), 'UPSTREAM_DECODE', `invalid UTF-8 split at ${at}`)
    }
  }
  const scanner = new PackumentScanner()
  expectCode(t, () => scanner.push(utf8('{"a":}')), 'UPSTREAM_DECODE', 'a missing value')
  expectCode(t, () => scanner.push(utf8('{}')), 'UPSTREAM_DECODE', 'a failed scanner stays failed')
  t.doesNotThrow(() => scanPackument([utf8(' \n{"a" : [ 1 , {"b":[]} ] , "versions" : { } }\t\r\n ')]), 'whitespace everywhere')
})

t.test('structural limits are STRUCTURE_LIMIT', async (t) => {
  const doc = utf8(JSON.stringify(packument('p', ['1.0.0', '1.0.1', '1.0.2'])))
  t.equal(scanPackument([doc], { limits: { maxVersionCount: 3, maxArtifactCount: 3 } }).versions.size, 3, 'at the limit passes')
  expectCode(t, () => scanPackument([doc], { limits: { maxVersionCount: 2, maxArtifactCount: 10 } }), 'STRUCTURE_LIMIT', 'too many versions', { limit: 'maxVersionCount' })
  expectCode(t, () => scanPackument([doc], { limits: { maxVersionCount: 10, maxArtifactCount: 2 } }), 'STRUCTURE_LIMIT', 'too many artifacts', { limit: 'maxArtifactCount' })
  const deep = '{"a":' + '['.repeat(MAX_NESTING_DEPTH + 5) + ']'.repeat(MAX_NESTING_DEPTH + 5) + '}'
  expectCode(t, () => scanPackument([utf8(deep)]), 'STRUCTURE_LIMIT', 'too deep', { limit: 'nestingDepth' })
})

t.test('duplicate keys resolve as JSON.parse does', async (t) => {
  const text = '{"name":"a","versions":{"1.0.0":{"dist":{"tarball":"x/one.tgz"}},"1.0.0":{"dist":{"tarball":"x/two.tgz"}}},"name":"a"}'
  const index = scanPackument([utf8(text)])
  const entry = index.versions.get('1.0.0')!
  t.equal(index.versions.size, 1)
  t.equal(index.source.utf8(entry.tarballStart, entry.tarballEnd), '"x/two.tgz"', 'the last one wins')
  t.same([...index.members.keys()], ['name', 'versions'], 'the first place is kept')
})

t.test('real packuments: every manifest slice parses to what JSON.parse reads', async (t) => {
  for (const { file } of REAL_PACKUMENTS) {
    const bytes = readPackument(file)
    const doc = JSON.parse(bytes.toString('utf8'))
    const index = scanPackument(chunked(bytes, 16384 + 7))
    t.equal(index.versions.size, Object.keys(doc.versions).length, `${file}: version count`)
    let mismatches = 0
    for (const [version, entry] of index.versions) {
      const expected = doc.versions[version]
      const actual = JSON.parse(index.source.utf8(entry.valueStart, entry.valueEnd))
      if (JSON.stringify(actual) !== JSON.stringify(expected)) mismatches++
      if (index.source.jsonString(entry.tarballStart, entry.tarballEnd, entry.tarballPlain) !== expected.dist.tarball) mismatches++
      if (entry.integrityStart >= 0 && index.source.jsonString(entry.integrityStart, entry.integrityEnd, entry.integrityPlain) !== expected.dist.integrity) mismatches++
    }
    t.equal(mismatches, 0, `${file}: manifests, tarballs and integrities agree`)
    t.same([...index.time.keys()], Object.keys(doc.time), `${file}: time keys`)
  }
})
