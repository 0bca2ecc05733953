/**
 * VersionHistory's own readings: the semver precedence of canonical keys
 * (compareCanonical, held to semver.compare), and the "previous version" of
 * DenyIfInstallScriptAdded, the same whether few versions with a script are
 * judged one pass each or many share the sweep.
 */
import semver from 'semver'
import t from 'tap'
import { scanPackument } from '../../engine/packument/scanner.js'
import { compareCanonical, VersionHistory } from '../../engine/packument/version-history.js'
import { utf8 } from './helpers.js'

const VERSIONS = [
  '0.0.0', '0.0.1', '0.1.0', '1.0.0', '1.0.0-0', '1.0.0-1', '1.0.0-10', '1.0.0-2', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta',
  '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0-a-b', '1.0.0-1a', '1.2.3', '1.10.0', '2.0.0', '10.0.0',
  '5.0.0-dev.20230101', '5.0.0-dev.20230102', '5.0.0-beta', '999999999999999.0.0',
]

t.test('compareCanonical agrees with semver.compare', async (t) => {
  for (const a of VERSIONS) for (const b of VERSIONS) t.equal(compareCanonical(a, b), semver.compare(a, b), `${a} vs ${b}`)
})

/** A history: versions in publish order (a day apart), those in `scripts` with a postinstall. */
function history(order: readonly string[], scripts: ReadonlySet<string>): VersionHistory {
  const time: Record<string, string> = {}
  order.forEach((v, k) => { time[v] = new Date(Date.UTC(2020, 0, 1 + k)).toISOString() })
  const versions = Object.fromEntries(order.map((v) => [v, { name: 'p', version: v, ...(scripts.has(v) ? { scripts: { postinstall: 'x' } } : {}) }]))
  const index = scanPackument([utf8(JSON.stringify({ name: 'p', versions, time }))], { recordMembers: false, recordScripts: true })
  return new VersionHistory(index, { trust: false, installScripts: true })
}

/** The definition, by brute force with semver itself. */
function expected(order: readonly string[], scripts: ReadonlySet<string>, version: string): string | undefined {
  const at = order.indexOf(version)
  const earlier = order.slice(0, at).filter((v) => semver.lt(v, version))
  if (earlier.length === 0) return undefined
  const previous = earlier.sort(semver.compare)[earlier.length - 1]!
  return scripts.has(version) && !scripts.has(previous) ? previous : undefined
}

t.test('the previous version: one pass each and the sweep give the definition', async (t) => {
  // A deterministic shuffle of 60 versions over two lines, with backports.
  const order: string[] = []
  for (let k = 0; k < 30; k++) order.push(`1.${k}.0`, `2.${29 - k}.0`)
  for (const count of [3, 40]) {
    const scripts = new Set(order.filter((_, k) => (k * 7) % 60 < count * 60 / 60 && k % 3 !== 0).slice(0, count))
    const h = history(order, scripts)
    for (const v of order) {
      const want = scripts.has(v) ? expected(order, scripts, v) : undefined
      t.equal(scripts.has(v) ? h.scriptAddedAfter(v) : undefined, want, `${count} with scripts: ${v}`)
    }
  }
})
