/**
 * `npm audit`, `npm audit fix` and `npm audit signatures` through the proxy
 * with the machine's npm (issue 17 items 3 and 4).
 *
 * Peers, all on 127.0.0.1: a public registry over https (throwaway CA) that
 * signs every version with a test ECDSA P-256 key made here and serves
 * `/-/npm/v1/keys` and attestations; a private registry over http; both are
 * scripted upstreams that record every request, so the test can say what
 * each one was sent. The advisory database is Pilot's compile
 * (compileEcosystem) of the real OSV npm samples of ../shared/data, served
 * as the OSV export by a local server and published to the proxy's store.
 *
 * One thing is stood in for: npm asks Sigstore's TUF repository for a
 * registry's keys before the registry itself, and this machine has no
 * network. A preload answers npm's TUF lookup exactly as that repository
 * answers for a registry it has no keys for (TUF_FIND_TARGET_ERROR, true of
 * this proxy's own address), so npm falls back to `/-/npm/v1/keys` from the
 * registry, which is the path under test. Everything else is npm as shipped.
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
import { npmEnv, npmInstall, NPM_COMMAND, runNpm } from '../clients/npm-client.js'
import { runCli } from '../clients/run-cli.js'
import { createClientWorkspace, type ClientWorkspace, type RegistryTarget } from '../clients/workspace.js'
import { startTestProxy } from '../helpers/proxy.js'
import { makeSigner, scriptRegistry } from '../peers/fixture-registry.js'
import { startMisbehavingUpstream, type RecordedRequest } from '../peers/misbehaving-upstream.js'

const BULK = '/js/-/npm/v1/security/advisories/bulk'
/** The mount publishes (its scopes say which names are first-party), and a publishing mount needs edge tokens. */
const EDGE_TOKEN = 'npm-audit-edge-token'
const AUTH = { authorization: `Bearer ${EDGE_TOKEN}` }

/** An attestations document of the registry's shape (its bundle is opaque to the proxy). */
const ATTESTATIONS = {
  attestations: [{
    predicateType: 'https://slsa.dev/provenance/v1',
    bundle: { mediaType: 'application/vnd.dev.sigstore.bundle+json;version=0.2', dsseEnvelope: { payload: 'eyJ9', payloadType: 'application/vnd.in-toto+json', signatures: [{ sig: 'MEUCIQ', keyid: '' }] } },
  }],
}

/** Answers npm's TUF lookup as Sigstore's repository does for a registry it holds no keys for (see the top of this file). */
const TUF_PRELOAD = `
const Module = require('node:module')
const load = Module._load
Module._load = function (request, parent, isMain) {
  const loaded = load.apply(this, arguments)
  if (request !== '@sigstore/tuf') return loaded
  return { ...loaded, initTUF: async () => ({
    getTarget: async () => { throw Object.assign(new Error('target not found'), { code: 'TUF_FIND_TARGET_ERROR' }) },
  }) }
}
`

/**
 * npm with TUF_PRELOAD: the one part of `npm audit signatures` that needs the
 * network (Sigstore's key repository) answers offline as that repository
 * does for a registry it holds no keys for, so npm asks the proxy's
 * /-/npm/v1/keys, the path under test. Nothing else of npm is replaced.
 */
async function npmWithOfflineTuf(ws: ClientWorkspace, target: RegistryTarget, args: readonly string[], preload: string) {
  const env = await npmEnv(ws, target)
  return runCli(NPM_COMMAND, [...args, '--userconfig', join(ws.root, 'npmrc'), '--registry', target.registry, '--fetch-retries=0'], {
    cwd: ws.dir, env: { ...env, NODE_OPTIONS: `--require ${preload}` },
  })
}

const named = (requests: readonly RecordedRequest[], text: string): RecordedRequest[] =>
  requests.filter((r) => decodeURIComponent(r.url).includes(text))

t.test('npm audit, audit fix and audit signatures through the proxy', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const pub = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => pub.stop())
  const priv = await startMisbehavingUpstream()
  t.teardown(() => priv.stop())
  const dir = await mkdtemp(join(tmpdir(), 'npm-audit-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  const signer = makeSigner()
  const published = await scriptRegistry(pub, [
    { name: 'lodash', version: '4.17.20' },
    { name: 'lodash', version: '4.17.21' },
    { name: 'signed-util', version: '1.0.0', dependencies: { 'signed-leaf': '^2.0.0' } },
    { name: 'signed-leaf', version: '2.0.0' },
    { name: 'prov-lib', version: '1.0.0', attestations: ATTESTATIONS },
    { name: 'prov-lib', version: '1.1.0', attestations: ATTESTATIONS },
    { name: 'forged-leaf', version: '1.0.0' },
  ], signer)
  // forged-leaf's signature is one the key did not make (rescripted before anything asks for it).
  const forged = JSON.parse(published.get('forged-leaf')?.body ?? '{}') as { versions: Record<string, { dist: { signatures: { sig: string }[] } }> }
  const forgedSignature = forged.versions['1.0.0']?.dist.signatures[0]
  if (forgedSignature !== undefined) forgedSignature.sig = Buffer.from('not a signature').toString('base64')
  pub.script('/forged-leaf', { kind: 'respond', body: JSON.stringify(forged) })
  await scriptRegistry(priv, [{ name: '@acme/secret-lib', version: '1.0.0' }])

  // Pilot's compile of the real OSV samples, served as the export.
  const osv = await serve({ '/osv/npm/all.zip': exportZip(npmSamples()) })
  t.teardown(() => new Promise<void>((resolve) => osv.server.close(() => resolve())))
  const compiled = await compileEcosystem({ ecosystem: 'js', osvExportBaseUrl: `${osv.base}/osv`, epssFeedUrl: undefined, tmpDir: dir, clock: systemClock, logger: silentLogger })

  const storeDir = join(dir, 'store')
  const proxy = await startTestProxy(t, {
    document: {
      server: { edgeTokens: [EDGE_TOKEN] },
      store: { path: storeDir },
      advisories: { pollIntervalSeconds: 0.2 },
      mounts: {
        js: {
          upstreams: {
            private: { url: `${priv.origin}/` },
            public: { url: `${pub.origin}/`, caFile: ca.caFile, allowInternalRanges: ['127.0.0.0/8'] },
          },
          publish: { target: `${priv.origin}/`, scopes: ['@acme', 'lodash-es'] },
          rules: [
            { rule: 'DenyIdentity', package: 'prov-lib', versions: '1.1.0' },
            { rule: 'AllowIfRemediatesCve' },
            { rule: 'AllowIfOlderThan', seconds: 0 },
          ],
        },
      },
    },
  })
  const target = { registry: `${proxy.url}/js/`, authToken: EDGE_TOKEN }
  const get = (path: string) => proxy.get(path, AUTH)
  const bulk = (body: unknown) => proxy.fetch('POST', BULK, { headers: { ...AUTH, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify(body)) })

  t.test('before any advisory database: 503 with Retry-After, never an empty answer', async (t) => {
    const res = await bulk({ lodash: ['4.17.20'] })
    t.equal(res.status, 503)
    t.ok(res.headers['retry-after'] !== undefined)
    t.match(res.json(), { error: /no advisory database is loaded/ })
  })

  const store = await FilesystemObjectStore.open({ root: storeDir, clock: systemClock })
  await store.put(advisoryObjectKey('js'), compiled.bytes, compiled.metadata)
  let loaded = await bulk({ lodash: ['4.17.20'] })
  for (let i = 0; i < 100 && loaded.status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    loaded = await bulk({ lodash: ['4.17.20'] })
  }
  t.equal(loaded.status, 200, 'answers once the database is loaded')

  t.test('the bulk answer: npm\'s shape; first-party names answer nothing', async (t) => {
    const res = await bulk({ lodash: ['4.17.20'], 'lodash-es': ['4.17.20'], '@acme/secret-lib': ['1.0.0'], 'signed-leaf': ['2.0.0'] })
    t.equal(res.status, 200)
    const answer = res.json() as Record<string, { id: number, url: string, title: string, severity: string, vulnerable_versions: string, cwe: string[], cvss: unknown }[]>
    t.same(Object.keys(answer), ['lodash'], 'lodash-es is in the publish scopes: private, so empty, though a public advisory names it')
    t.match(answer['lodash']?.find((a) => a.url.endsWith('/GHSA-35jh-r3h4-6jhm')), {
      id: Number, title: 'Command Injection in lodash', severity: 'high', vulnerable_versions: '<4.17.21', cwe: ['CWE-77', 'CWE-94'],
      cvss: { score: 7.2, vectorString: 'CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H' },
    })
  })

  t.test('the npm 6 endpoints say to upgrade npm', async (t) => {
    for (const path of ['/js/-/npm/v1/security/audits', '/js/-/npm/v1/security/audits/quick']) {
      const res = await proxy.fetch('POST', path, { headers: { ...AUTH, 'content-type': 'application/json' }, body: '{}' })
      t.equal(res.status, 501)
      t.match(res.json(), { error: /upgrade npm/ })
    }
  })

  const audited = await createClientWorkspace({ lodash: '4.17.20', '@acme/secret-lib': '1.0.0' })
  t.teardown(() => audited.remove())
  await npmInstall(audited, target)

  t.test('npm audit --json lists the advisory; nothing of the tree reaches an upstream', async (t) => {
    const before = { pub: pub.requests.length, priv: priv.requests.length }
    const run = await runNpm(audited, target, ['audit', '--json'], { allowFailure: true })
    t.equal(run.exitCode, 1, 'npm audit exits 1 when it finds a vulnerability')
    const report = JSON.parse(run.stdout) as { vulnerabilities: Record<string, { severity: string, via: ({ url: string, title: string, range: string, severity: string } | string)[], fixAvailable: unknown }>, metadata: { vulnerabilities: { total: number } } }
    const lodash = report.vulnerabilities['lodash']
    t.ok(lodash !== undefined, 'lodash is vulnerable')
    t.match(lodash?.via.find((v) => typeof v === 'object' && v.url.endsWith('/GHSA-35jh-r3h4-6jhm')), { title: 'Command Injection in lodash', range: '<4.17.21', severity: 'high' })
    t.equal(report.vulnerabilities['@acme/secret-lib'], undefined)
    t.ok(report.metadata.vulnerabilities.total >= 1)

    const sent = [...pub.requests.slice(before.pub), ...priv.requests.slice(before.priv)]
    t.same(sent.filter((r) => r.method !== 'GET' || r.url.includes('security')), [], 'no audit request went to any upstream')
    t.same(named(sent, 'secret-lib'), [], 'the private package was named to no upstream during the audit')
    t.same(named(pub.requests, 'secret-lib').filter((r) => r.url.includes('/-/')), [], 'no private tarball was ever asked of the public upstream')
  })

  t.test('npm audit fix upgrades to the fixed version through the proxy', async (t) => {
    const manifest = JSON.parse(await readFile(join(audited.dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    manifest.dependencies['lodash'] = '^4.17.20'
    await writeFile(join(audited.dir, 'package.json'), JSON.stringify(manifest, null, 2))
    await runNpm(audited, target, ['audit', 'fix', '--no-fund'], { allowFailure: true })
    t.match(await audited.installedManifest('lodash'), { version: '4.17.21' })
    const again = await runNpm(audited, target, ['audit', '--json'], { allowFailure: true })
    t.equal(again.exitCode, 0, 'nothing left to report')
  })

  t.test('npm audit signatures verifies the public registry\'s signatures through the proxy', async (t) => {
    const ws = await createClientWorkspace({ 'signed-util': '1.0.0' })
    t.teardown(() => ws.remove())
    await npmInstall(ws, target)
    const preload = join(dir, 'tuf-preload.cjs')
    await writeFile(preload, TUF_PRELOAD)
    const keysBefore = named(pub.requests, '/-/npm/v1/keys').length
    const run = await npmWithOfflineTuf(ws, target, ['audit', 'signatures'], preload)
    t.equal(run.exitCode, 0, `${run.stdout}\n${run.stderr}`)
    t.match(run.stdout, /2 packages have verified registry signatures/)
    t.ok(named(pub.requests, '/-/npm/v1/keys').length > keysBefore, 'the keys came from the public upstream')

    // A signature the key did not make is caught: the proxy relays, it does not vouch.
    const tampered = await createClientWorkspace({ 'forged-leaf': '1.0.0' })
    t.teardown(() => tampered.remove())
    await npmInstall(tampered, target)
    const refused = await npmWithOfflineTuf(tampered, target, ['audit', 'signatures'], preload)
    t.equal(refused.exitCode, 1)
    t.match(`${refused.stdout}\n${refused.stderr}`, /invalid registry signature/)
  })

  t.test('keys, signatures and attestations pass through byte for byte', async (t) => {
    const keys = await get('/js/-/npm/v1/keys')
    t.equal(keys.status, 200)
    t.equal(keys.body.toString('utf8'), JSON.stringify(signer.keys))

    const doc = await get('/js/prov-lib')
    const text = doc.body.toString('utf8')
    const upstream = (JSON.parse(published.get('prov-lib')?.body ?? '{}') as { versions: Record<string, { dist: Record<string, unknown> }> }).versions['1.0.0']?.dist
    t.ok(text.includes(`"signatures":${JSON.stringify(upstream?.['signatures'])}`), 'dist.signatures as the upstream wrote it')
    t.ok(text.includes(`"attestations":${JSON.stringify(upstream?.['attestations'])}`), 'dist.attestations as the upstream wrote it, its url unchanged')
    t.notOk(text.includes('"1.1.0"'), 'the denied version is withheld')

    for (const path of ['/js/-/npm/v1/attestations/prov-lib@1.0.0', '/-/npm/v1/attestations/prov-lib@1.0.0']) {
      const res = await get(path)
      t.equal(res.status, 200, path)
      t.equal(res.body.toString('utf8'), JSON.stringify(ATTESTATIONS), `${path}: relayed byte for byte`)
    }
    t.equal((await proxy.get('/-/npm/v1/attestations/prov-lib@1.0.0')).status, 401, 'the root path asks for the edge token too')
    const denied = await get('/-/npm/v1/attestations/prov-lib@1.1.0')
    t.equal(denied.status, 403)
    t.match(denied.json(), { error: /DenyIdentity \(rule 1\)/ })
    t.same(named(pub.requests, 'attestations/prov-lib@1.1.0'), [], 'nothing is asked upstream for a withheld version')
    t.equal((await get('/js/-/npm/v1/attestations/prov-lib@9.9.9')).status, 404)
    t.equal((await get('/js/-/npm/v1/attestations/@acme/secret-lib@1.0.0')).status, 404, 'a private version is not relayed from the public upstream')
  })
})
