/**
 * `npm audit` and `npm audit fix` with real npm on a project that locks
 * versions the gate withholds (issue 32 item 1). npm computes each finding's
 * range and its fix from the packument (metavuln-calculator tests every
 * version the packument lists against the advisory; arborist picks the fix
 * from the listed versions): a packument without the withheld versions gave
 * empty ranges, "No fix available", and `ETARGET` for a locked version. npm
 * names its command in `npm-command`, and `audit` gets the audit view: the
 * withheld versions listed, each `deprecated` with its refusal
 * (engine/packument/render-variant.ts).
 *
 * Peers, all on 127.0.0.1: one fixture public registry (https, throwaway CA);
 * two proxies on it sharing one store and Pilot's compile of the real OSV npm
 * samples: the reference one admits everything (an unfiltered registry with
 * the same advisories), the gated one denies every version an advisory
 * affects (`DenyIfCve`).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { compileEcosystem } from '../../engine/advisory/pilot/compile.js'
import { systemClock } from '../../engine/clock.js'
import { silentLogger } from '../../engine/log/logger.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { makeTestCa } from '../../bench/peers/tls.js'
import { exportZip, npmSamples, serve } from '../advisory/fixtures.js'
import { npmInstall, runNpm } from '../clients/npm-client.js'
import { createClientWorkspace, type ClientWorkspace } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { scriptRegistry } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'

interface Finding {
  readonly name: string
  readonly severity: string
  readonly range: string
  readonly nodes: readonly string[]
  readonly fixAvailable: unknown
  readonly via: ReadonlyArray<{ readonly url: string, readonly range: string } | string>
}
interface Report { readonly vulnerabilities: Record<string, Finding> }

/** What of a report must agree with the reference's: per package, its range, its advisories' ranges and the fix. */
function essence(report: Report): Record<string, unknown> {
  return Object.fromEntries(Object.entries(report.vulnerabilities).map(([name, f]) => [name, {
    severity: f.severity,
    range: f.range,
    fixAvailable: f.fixAvailable,
    via: f.via.map((v) => (typeof v === 'string' ? v : `${v.url.replace(/^.*\//, '')} ${v.range}`)).sort(),
  }]))
}

t.test('npm audit and audit fix on a project locking withheld versions', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const pub = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => pub.stop())
  const dir = await mkdtemp(join(tmpdir(), 'npm-audit-withheld-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  await scriptRegistry(pub, [
    { name: 'lodash', version: '4.17.20' },
    { name: 'lodash', version: '4.17.21' },
    { name: 'minimist', version: '1.2.5' },
    { name: 'minimist', version: '1.2.6' },
    { name: 'body-parser', version: '1.19.0' },
    { name: 'body-parser', version: '1.20.3' },
    { name: 'express', version: '4.17.1', dependencies: { 'body-parser': '1.19.0' } },
    { name: 'express', version: '4.20.0', dependencies: { 'body-parser': '1.20.3' } },
  ])
  const osv = await serve({ '/osv/npm/all.zip': exportZip(npmSamples()) })
  t.teardown(() => new Promise<void>((resolve) => osv.server.close(() => resolve())))
  const compiled = await compileEcosystem({ ecosystem: 'js', osvExportBaseUrl: `${osv.base}/osv`, epssFeedUrl: undefined, tmpDir: dir, clock: systemClock, logger: silentLogger })
  const storeDir = join(dir, 'store')
  const store = await FilesystemObjectStore.open({ root: storeDir, clock: systemClock })
  await store.put(advisoryObjectKey('js'), compiled.bytes, compiled.metadata)

  const proxyWith = (rules: readonly Record<string, unknown>[]) => startTestProxy(t, {
    document: {
      store: { path: storeDir },
      advisories: { pollIntervalSeconds: 0.2 },
      mounts: { js: { upstreams: { public: { url: `${pub.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] } }, rules } },
    },
  })
  // AllowIfRemediatesCve reads the database (so the mount loads it) and admits what it admits; the rest is admitted by age 0.
  const reference = await proxyWith([{ rule: 'AllowIfRemediatesCve' }, { rule: 'AllowIfOlderThan', seconds: 0 }])
  const gated = await proxyWith([{ rule: 'DenyIfCve' }, { rule: 'AllowIfOlderThan', seconds: 0 }])
  // minimist's only fixed version is withheld too, by a rule no advisory is behind.
  const fixWithheld = await proxyWith([{ rule: 'DenyIfCve' }, { rule: 'DenyIdentity', package: 'minimist', versions: '1.2.6' }, { rule: 'AllowIfOlderThan', seconds: 0 }])
  for (const proxy of [reference, gated, fixWithheld]) {
    const bulk = () => proxy.fetch('POST', '/js/-/npm/v1/security/advisories/bulk', { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify({ lodash: ['4.17.20'] })) })
    let loaded = await bulk()
    for (let i = 0; i < 100 && loaded.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      loaded = await bulk()
    }
    t.equal(loaded.status, 200, 'the advisory database is loaded')
  }
  const referenceTarget = { registry: `${reference.url}/js/` }
  const gatedTarget = { registry: `${gated.url}/js/` }
  const dependencies = { lodash: '^4.17.20', minimist: '^1.2.5', express: '^4.17.1' }

  /** A project locking the vulnerable versions, installed from the reference, its lockfile pointed at `registry`. */
  const lockedProject = async (registry: string): Promise<ClientWorkspace> => {
    const ws = await createClientWorkspace({ lodash: '4.17.20', minimist: '1.2.5', express: '4.17.1' })
    await npmInstall(ws, referenceTarget)
    await writeFile(join(ws.dir, 'package.json'), JSON.stringify({ name: 'audited', version: '1.0.0', dependencies }, null, 2))
    const lock = join(ws.dir, 'package-lock.json')
    const text = await readFile(lock, 'utf8')
    await writeFile(lock, text.split(referenceTarget.registry).join(registry).replace(/"(lodash|minimist|express)": "[0-9.]+"/g, (m, name: string) => `"${name}": "${dependencies[name as keyof typeof dependencies]}"`))
    return ws
  }

  const audit = async (ws: ClientWorkspace, target: { registry: string }): Promise<Report> => {
    const run = await runNpm(ws, target, ['audit', '--json'], { allowFailure: true })
    t.equal(run.exitCode, 1, `npm audit finds the vulnerabilities\n${run.stderr}`)
    return JSON.parse(run.stdout) as Report
  }

  const referenceWs = await lockedProject(referenceTarget.registry)
  t.teardown(() => referenceWs.remove())
  const gatedWs = await lockedProject(gatedTarget.registry)
  t.teardown(() => gatedWs.remove())

  t.test('the gate withholds the locked versions', async (t) => {
    for (const [name, version] of [['lodash', '4.17.20'], ['minimist', '1.2.5'], ['express', '4.17.1'], ['body-parser', '1.19.0']] as const) {
      const doc = (await gated.get(`/js/${name}`)).json() as { versions: Record<string, unknown> }
      t.notOk(version in doc.versions, `${name}@${version} is not in the install view`)
    }
  })

  t.test('npm audit --json: ranges and fixAvailable as the unfiltered registry gives them', async (t) => {
    const expected = essence(await audit(referenceWs, referenceTarget))
    const actual = essence(await audit(gatedWs, gatedTarget))
    t.same(actual, expected)
    t.comment(JSON.stringify(actual))
    t.match(expected, {
      lodash: { range: '4.17.20', fixAvailable: true },
      minimist: { range: '1.2.5', fixAvailable: true },
      express: { fixAvailable: true },
      'body-parser': { fixAvailable: true },
    }, 'the reference itself names ranges and fixes')
  })

  t.test('npm audit fix applies the fixes through the gated proxy', async (t) => {
    const run = await runNpm(gatedWs, gatedTarget, ['audit', 'fix', '--no-fund'], { allowFailure: true })
    t.notMatch(run.stderr, /ETARGET/)
    t.match(await gatedWs.installedManifest('lodash'), { version: '4.17.21' })
    t.match(await gatedWs.installedManifest('minimist'), { version: '1.2.6' })
    t.match(await gatedWs.installedManifest('express'), { version: '4.20.0' })
    t.match(await gatedWs.installedManifest('body-parser'), { version: '1.20.3' })
    const again = await runNpm(gatedWs, gatedTarget, ['audit', '--json'], { allowFailure: true })
    t.equal(again.exitCode, 0, `nothing left to report\n${again.stdout}`)
  })

  t.test('a fix the rules withhold too: npm reports no fix for it, and audit fix applies the others without a 403', async (t) => {
    const target = { registry: `${fixWithheld.url}/js/` }
    const ws = await lockedProject(target.registry)
    t.teardown(() => ws.remove())
    const view = (await fixWithheld.get('/js/minimist', { 'npm-command': 'audit' })).json() as { versions: Record<string, unknown> }
    t.same(Object.keys(view.versions), ['1.2.5'], 'the audit view lists the vulnerable withheld version, not the withheld fix')
    const report = essence(await audit(ws, target))
    // npm states the range over the versions listed: with the fix left out, every one of them is affected.
    t.match(report, { minimist: { range: '*', fixAvailable: false }, lodash: { range: '4.17.20', fixAvailable: true } })
    const run = await runNpm(ws, target, ['audit', 'fix', '--no-fund'], { allowFailure: true })
    t.notMatch(run.stderr, /E403|ETARGET/, 'no install of a withheld version was tried')
    t.match(await ws.installedManifest('lodash'), { version: '4.17.21' })
    t.match(await ws.installedManifest('minimist'), { version: '1.2.5' }, 'minimist stays: no admitted fix')
  })

  t.test('the audit view: withheld versions listed, marked deprecated with their refusal; an install never picks one', async (t) => {
    const view = (await gated.get('/js/lodash', { 'npm-command': 'audit' })).json() as { versions: Record<string, { deprecated?: string }>, 'dist-tags': Record<string, string> }
    t.match(view.versions['4.17.20']?.deprecated, /^withheld by policy: .*DenyIfCve \(rule 1\)/)
    t.equal(view.versions['4.17.21']?.deprecated, undefined)
    t.equal(view['dist-tags']['latest'], '4.17.21')
    t.equal((await gated.get('/js/lodash/-/lodash-4.17.20.tgz', { 'npm-command': 'audit' })).status, 403, 'the tarball is still refused')
    const fresh = await createClientWorkspace({ lodash: '^4.17.0' })
    t.teardown(() => fresh.remove())
    await npmInstall(fresh, gatedTarget)
    t.match(await fresh.installedManifest('lodash'), { version: '4.17.21' })
  })
})
