import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import {
  abbreviatedPackument, lockedVersions, lockfileFor, mergeLocked, packumentBefore, parseTarballUrl, servedPackument,
  tarballPath, versionDigests, versionTarball, type Packument,
} from '../../bench/fixtures/install-tree.js'
import { binEntries, digestsOf, makeTarball, tarHeader, tarballFileName } from '../../bench/fixtures/npm-tarball.js'

const run = promisify(execFile)

const doc: Packument = {
  name: '@acme/tool',
  'dist-tags': { latest: '2.0.0', next: '3.0.0-rc.1' },
  versions: {
    '1.0.0': { name: '@acme/tool', version: '1.0.0', dependencies: { 'left-pad': '^1.0.0' }, dist: { tarball: 'https://elsewhere.example/t.tgz', integrity: 'sha512-old', shasum: 'old', fileCount: 3 } },
    '2.0.0': { name: '@acme/tool', version: '2.0.0', bin: { tool: './bin/tool.js' }, scripts: { postinstall: 'node x', test: 'tap' }, readme: 'long', dist: { tarball: 'https://elsewhere.example/t2.tgz' } },
    '3.0.0-rc.1': { name: '@acme/tool', version: '3.0.0-rc.1', dist: {} },
  },
  time: { created: '2020-01-01T00:00:00.000Z', modified: '2024-01-01T00:00:00.000Z', '1.0.0': '2020-01-01T00:00:00.000Z', '2.0.0': '2023-01-01T00:00:00.000Z', '3.0.0-rc.1': '2024-01-01T00:00:00.000Z' },
  readme: 'the document readme',
}

t.test('a made tarball is a valid gzip tar with the manifest and its bins, and the same bytes every time', async (t) => {
  const bytes = versionTarball(doc, '2.0.0')
  t.same(bytes, versionTarball(doc, '2.0.0'), 'deterministic')
  t.same(digestsOf(bytes), digestsOf(makeTarball({ ...doc.versions?.['2.0.0'], name: '@acme/tool', version: '2.0.0' })))
  const dir = await mkdtemp(join(tmpdir(), 'install-tree-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'p.tgz')
  await writeFile(file, bytes)
  const listed = (await run('tar', ['-tzf', file])).stdout.trim().split('\n')
  t.same(listed, ['package/package.json', 'package/bin/tool.js'])
  await run('tar', ['-xzf', file, '-C', dir])
  const manifest = JSON.parse(await readFile(join(dir, 'package', 'package.json'), 'utf8')) as Record<string, unknown>
  t.same(manifest, { name: '@acme/tool', version: '2.0.0', bin: { tool: './bin/tool.js' } }, 'no scripts, no readme')
  t.match((await run('stat', ['-c', '%a', join(dir, 'package', 'bin', 'tool.js')])).stdout, /755/)
})

t.test('bin entries: a string names the package, paths never leave the package', async (t) => {
  t.same(binEntries('@acme/tool', 'cli.js'), [['tool', 'cli.js']])
  t.same(binEntries('x', { a: 'a.js', b: 3 }), [['a', 'a.js']])
  t.same(binEntries('x', undefined), [])
  const listed = gunzipSync(makeTarball({ name: 'x', version: '1.0.0', bin: { evil: '../../etc/passwd' } })).toString('latin1')
  t.equal(listed.split('ustar\0').length - 1, 1, 'an escaping bin path is not written: package.json is the only entry')
})

t.test('a long path is split into ustar prefix and name', async (t) => {
  const path = `package/${'d'.repeat(90)}/${'f'.repeat(60)}.js`
  const header = tarHeader(path, 0o644, 1)
  t.equal(header.subarray(0, 100).toString('utf8').replace(/\0+$/, ''), `${'f'.repeat(60)}.js`)
  t.equal(header.subarray(345, 500).toString('utf8').replace(/\0+$/, ''), `package/${'d'.repeat(90)}`)
  t.throws(() => tarHeader(`package/${'x'.repeat(300)}`, 0o644, 1))
})

t.test('the served document points every version at its local tarball and changes nothing else', async (t) => {
  const digests = versionDigests(doc)
  const served = servedPackument(doc, 'https://127.0.0.1:9', digests)
  t.equal(served.readme, 'the document readme')
  const v1 = served.versions?.['1.0.0']
  t.same(v1?.dist, { tarball: 'https://127.0.0.1:9/@acme/tool/-/tool-1.0.0.tgz', ...digests.get('1.0.0'), fileCount: 3 })
  t.same(v1?.dependencies, { 'left-pad': '^1.0.0' })
  t.equal(tarballPath('@acme/tool', '1.0.0'), '/@acme/tool/-/tool-1.0.0.tgz')
  t.equal(tarballFileName('left-pad', '1.3.0'), 'left-pad-1.3.0.tgz')
})

t.test('the abbreviated form keeps the install fields and marks install scripts', async (t) => {
  const corgi = abbreviatedPackument(doc) as { versions: Record<string, Record<string, unknown>>, modified?: string, readme?: unknown, time?: unknown }
  t.equal(corgi.modified, '2024-01-01T00:00:00.000Z')
  t.equal(corgi.readme, undefined)
  t.equal(corgi.time, undefined)
  t.same(Object.keys(corgi.versions['2.0.0'] ?? {}).sort(), ['bin', 'dist', 'hasInstallScript', 'name', 'version'])
  t.equal(corgi.versions['1.0.0']?.['hasInstallScript'], undefined)
})

t.test('the view before a cut-off hides later versions and moves latest back', async (t) => {
  const before = packumentBefore(doc, Date.parse('2022-01-01T00:00:00.000Z'))
  t.same(Object.keys(before.versions ?? {}), ['1.0.0'])
  t.same(before['dist-tags'], { latest: '1.0.0' })
  t.same(Object.keys(before.time ?? {}), ['created', 'modified', '1.0.0'])
  const all = packumentBefore(doc, Date.parse('2030-01-01T00:00:00.000Z'))
  t.same(all['dist-tags'], doc['dist-tags'])
  const noTime = packumentBefore({ ...doc, time: {} }, Date.parse('2030-01-01T00:00:00.000Z'))
  t.same(Object.keys(noTime.versions ?? {}), [], 'a version without a publish time is never resolvable')
})

t.test('tarball URLs, lockfiles and origins', async (t) => {
  t.same(parseTarballUrl('http://127.0.0.1:1/@babel/core/-/core-7.25.2.tgz'), { name: '@babel/core', version: '7.25.2' })
  t.same(parseTarballUrl('http://127.0.0.1:1/js/left-pad/-/left-pad-1.3.0-beta.1.tgz'), { name: 'left-pad', version: '1.3.0-beta.1' })
  t.equal(parseTarballUrl('http://127.0.0.1:1/left-pad'), undefined)
  const npm = JSON.stringify({ packages: { '': { name: 'p' }, 'node_modules/a': { version: '1.0.0', resolved: 'http://127.0.0.1:1/a/-/a-1.0.0.tgz' }, 'node_modules/b/node_modules/a': { version: '2.0.0', resolved: 'http://127.0.0.1:1/a/-/a-2.0.0.tgz' }, 'node_modules/l': { link: true } } })
  t.same([...lockedVersions('package-lock.json', npm)].map(([n, v]) => [n, [...v]]), [['a', ['1.0.0', '2.0.0']]])
  const pnpm = "lockfileVersion: '9.0'\npackages:\n  '@babel/core@7.25.2':\n    resolution: {integrity: sha512-x}\n  a@1.0.0:\n    resolution: {integrity: sha512-y}\n"
  t.same([...lockedVersions('pnpm-lock.yaml', pnpm)].map(([n, v]) => [n, [...v]]), [['@babel/core', ['7.25.2']], ['a', ['1.0.0']]])
  const yarn = '"@babel/core@^7.0.0":\n  version "7.25.2"\n  resolved "http://127.0.0.1:1/@babel/core/-/core-7.25.2.tgz#abc"\n  integrity sha512-x\n'
  t.same([...lockedVersions('yarn.lock', yarn)].map(([n, v]) => [n, [...v]]), [['@babel/core', ['7.25.2']]])
  const merged = mergeLocked([lockedVersions('package-lock.json', npm), lockedVersions('pnpm-lock.yaml', pnpm)])
  t.same([...(merged.get('a') ?? [])], ['1.0.0', '2.0.0'])
  t.equal(lockfileFor(yarn, 'http://127.0.0.1:1', 'http://127.0.0.1:2/js/'), yarn.replace('http://127.0.0.1:1/', 'http://127.0.0.1:2/js/'))
})
