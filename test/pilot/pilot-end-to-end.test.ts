/**
 * Pilot to proxy, end to end (SPEC.md 1.6, 1.7, 2.9, 3.1): Pilot compiles
 * real OSV records (the npm and PyPI samples of ../shared/data) served by
 * a local HTTP server as the OSV export, with a local EPSS feed of real
 * scores, and publishes to the embedded store; a consumer loads the
 * artifact into the mount's slot, and an evaluator over the slot denies a
 * known vulnerable version, admits a fixed one, admits a remediating one
 * with AllowIfRemediatesCve and applies the EPSS threshold.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ADVISORY_SWAPPED, AdvisoryConsumer } from '../../engine/advisory/consumer/advisory-consumer.js'
import { advisoryObjectKey } from '../../engine/advisory/artifact/advisory-object-key.js'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { ADVISORY_DATA_AGES } from '../../engine/advisory/pilot/compile-report.js'
import { METADATA_KEYS } from '../../engine/advisory/pilot/compile.js'
import { ADVISORY_PUBLISHED } from '../../engine/advisory/pilot/pilot-publish.js'
import { ManualClock } from '../doubles/manual-clock.js'
import { loadConfig } from '../../engine/config/load.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { createEvaluator } from '../../engine/policy/evaluator.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { checkPilotConfig, PILOT_RUN_FAILED, runPilot } from '../../server/roles/pilot.js'
import { embaScores, epssFeedGz, exportZip, npmSamples, pysecSamples, serve } from '../advisory/fixtures.js'
import { startConnectProxy } from '../upstream/connect-proxy.js'

const DAY = 86_400_000

// Read once: the real EPSS scores (360k rows) and the export zips.
const emba = embaScores()
const routes = {
  '/osv/npm/all.zip': exportZip(npmSamples()),
  '/osv/PyPI/all.zip': exportZip(pysecSamples()),
  '/epss/feed.csv.gz': epssFeedGz(emba, '2026-02-27T00:00:00Z'),
}

async function setup(t: Test) {
  const peer = await serve(routes)
  t.teardown(() => new Promise<void>((resolve) => peer.server.close(() => resolve())))
  const root = await mkdtemp(join(tmpdir(), 'pilot-e2e-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const loaded = loadConfig({
    env: {
      SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
      SERVICE_MOUNTS__PY__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
      SERVICE_ADVISORIES__OSV_EXPORT_BASE_URL: `${peer.base}/osv`,
      SERVICE_ADVISORIES__EPSS_FEED_URL: `${peer.base}/epss/feed.csv.gz`,
      SERVICE_STORE__PATH: join(root, 'store'),
    },
    npmRegistry: () => undefined,
  })
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems))
  return { emba, peer, root, config: loaded.config }
}

t.test('Pilot publishes real samples; the proxy side loads them and the rules act on them', async (t) => {
  const s = await setup(t)
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const store = await FilesystemObjectStore.open({ root: s.config.store.path, clock })
  const report = await runPilot({ ctx: { config: s.config, logger, clock }, store, tmpDir: join(s.root, 'tmp') })
  t.same(report.failed, [])
  t.same(report.published.map((p) => p.ecosystem), ['js', 'py'])
  t.equal(logger.find(ADVISORY_PUBLISHED).length, 2)
  t.ok(logger.find(ADVISORY_DATA_AGES).some((r) => r.level === 'info'), 'the age report of each compile')

  const head = await store.head(advisoryObjectKey('js'))
  if (head === undefined || head.notModified) throw new Error('no artifact published')
  t.equal(head.metadata[METADATA_KEYS.epssStatus], 'available', 'metadata of SPEC.md 2.9 on the object')
  t.equal(head.metadata[METADATA_KEYS.osvSource], new URL(s.peer.base).host)
  t.equal(head.publishedAt?.getTime(), clock.now())

  // A second run with unchanged inputs publishes again and moves the publication time (SPEC.md 2.9).
  clock.advance(60_000)
  await runPilot({ ctx: { config: s.config, logger, clock }, store, tmpDir: join(s.root, 'tmp') })
  const again = await store.head(advisoryObjectKey('js'))
  t.equal(again !== undefined && !again.notModified ? again.publishedAt?.getTime() : undefined, clock.now())

  // The proxy side: a consumer per mount, an evaluator over each slot.
  const consumers = (['js', 'py'] as const).map((ecosystem) => {
    const slot = new AdvisorySlot()
    const consumer = new AdvisoryConsumer({
      ecosystem, store, key: advisoryObjectKey(ecosystem), slot, requireEpss: true, maxAgeSeconds: 6 * 86400, clock, logger,
    })
    t.teardown(() => consumer.stop())
    return { ecosystem, slot, consumer }
  })
  for (const c of consumers) t.equal(await c.consumer.poll(), 'swapped', `${c.ecosystem} accepted`)
  t.match(logger.find(ADVISORY_SWAPPED)[0]?.data, { ecosystem: 'js', epssScoreDate: '2026-02-27T00:00:00.000Z', osvSource: new URL(s.peer.base).host })
  const [js, py] = consumers as [typeof consumers[number], typeof consumers[number]]

  const recent = new Date(clock.now() - DAY)
  const old = new Date('2020-01-01T00:00:00Z')
  const rules: RuleConfig[] = [
    { rule: 'DenyIfCve' },
    { rule: 'AllowIfRemediatesCve' },
    { rule: 'AllowIfOlderThan', seconds: 7 * 86400 },
  ]
  const jsEval = createEvaluator(rules, { ecosystem: 'js', database: () => js.slot.database(), clock, maxAgeSeconds: 6 * 86400 })
  const pyEval = createEvaluator(rules, { ecosystem: 'py', database: () => py.slot.database(), clock, maxAgeSeconds: 6 * 86400 })
  const judge = (ev: typeof jsEval, ecosystem: 'js' | 'py', name: string, version: string, publishedAt: Date) =>
    ev.evaluate({ ecosystem, name, version, publishedAt }, 'admission')

  // Known vulnerable versions are denied, with the advisories as evidence.
  const lodash = judge(jsEval, 'js', 'lodash', '4.17.20', old)
  t.match(lodash, { verdict: 'deny', rule: 'DenyIfCve' })
  t.ok(lodash.evidence.includes('GHSA-29mw-wpgm-hmr9'))
  t.match(judge(pyEval, 'py', 'django', '1.0.4', old), { verdict: 'deny', rule: 'DenyIfCve' })
  // Fixed versions are admitted.
  t.match(judge(jsEval, 'js', 'lodash', '4.17.21', old), { verdict: 'admit' })
  t.match(judge(pyEval, 'py', 'requests', '2.32.0', old), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'past every requests advisory of the samples')
  t.match(judge(pyEval, 'py', 'urllib3', '1.26.5', recent), { verdict: 'deny', rule: 'DenyIfCve' }, 'fixes one advisory, affected by others: still denied')
  // A remediating version inside the quarantine is admitted by AllowIfRemediatesCve.
  const fix = judge(jsEval, 'js', 'lodash', '4.17.21', recent)
  t.match(fix, { verdict: 'admit', rule: 'AllowIfRemediatesCve' })
  t.ok(fix.evidence.includes('GHSA-29mw-wpgm-hmr9'))
  t.match(judge(pyEval, 'py', 'requests', '2.31.0', recent), { verdict: 'admit', rule: 'AllowIfRemediatesCve', evidence: ['PYSEC-2023-74'] })
  t.match(judge(jsEval, 'js', 'elliptic', '6.5.4', recent), { verdict: 'deny', rule: undefined }, 'no advisory there: quarantine holds it')
  t.match(judge(jsEval, 'js', 'lodash', '4.17.20', recent), { verdict: 'deny', rule: 'DenyIfCve' })

  // EPSS thresholds act on the real scores: at the highest score of the version's advisories it denies, above it not.
  const matches = js.slot.database()!.affecting('lodash', '4.17.20')
  const top = Math.max(...matches.map((m) => m.epss ?? 0))
  t.ok(top > 0 && top < 1, 'real EPSS scores in the artifact')
  t.equal(top, Math.max(...['CVE-2020-28500', 'CVE-2021-23337'].map((c) => Number(s.emba.get(c)))))
  const epssRules = (threshold: number): RuleConfig[] => [{ rule: 'DenyIfEpss', threshold }, { rule: 'AllowIfOlderThan', seconds: 0 }]
  const at = createEvaluator(epssRules(top), { ecosystem: 'js', database: () => js.slot.database(), clock, maxAgeSeconds: 6 * 86400 })
  const above = createEvaluator(epssRules(Math.min(1, top + 1e-6)), { ecosystem: 'js', database: () => js.slot.database(), clock, maxAgeSeconds: 6 * 86400 })
  t.match(judge(at, 'js', 'lodash', '4.17.20', old), { verdict: 'deny', rule: 'DenyIfEpss' })
  t.match(judge(above, 'js', 'lodash', '4.17.20', old), { verdict: 'admit', rule: 'AllowIfOlderThan' })
  t.match(judge(at, 'js', 'lodash', '4.17.21', old), { verdict: 'admit' }, 'a fixed version has no score to act on')

  // Six days later with no new push the denies refuse as expired (SPEC.md 3.5).
  clock.advance(6 * DAY)
  t.match(judge(jsEval, 'js', 'lodash', '4.17.20', old), { verdict: 'expired', maxAgeSeconds: 6 * 86400 })
})

t.test('an EPSS outage compiles with epss_status=unavailable: an EPSS mount rejects it, a CVE-only mount takes it', async (t) => {
  const s = await setup(t)
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const config = { ...s.config, advisories: { ...s.config.advisories, epssFeedUrl: `${s.peer.base}/epss/missing.csv.gz` } }
  const store = await FilesystemObjectStore.open({ root: s.config.store.path, clock })
  const report = await runPilot({ ctx: { config, logger, clock }, store, tmpDir: join(s.root, 'tmp') })
  t.same(report.failed, [])
  const verdicts: string[] = []
  for (const requireEpss of [true, false]) {
    const slot = new AdvisorySlot()
    const consumer = new AdvisoryConsumer({ ecosystem: 'js', store, key: advisoryObjectKey('js'), slot, requireEpss, maxAgeSeconds: 3 * 86400, clock, logger })
    verdicts.push(await consumer.poll())
  }
  t.same(verdicts, ['rejected', 'swapped'])
})

t.test('failures: an unreachable export is logged per ecosystem; no OSV base URL is a configuration refusal', async (t) => {
  const s = await setup(t)
  const clock = new ManualClock()
  const logger = new RecordingLogger()
  const store = await FilesystemObjectStore.open({ root: s.config.store.path, clock })
  const broken = { ...s.config, advisories: { ...s.config.advisories, osvExportBaseUrl: `${s.peer.base}/nowhere` } }
  const report = await runPilot({ ctx: { config: broken, logger, clock }, store, tmpDir: join(s.root, 'tmp') })
  t.same(report.published, [])
  t.same(report.failed.map((f) => [f.ecosystem, f.error.code]), [['js', 'UPSTREAM_UNAVAILABLE'], ['py', 'UPSTREAM_UNAVAILABLE']])
  t.equal(logger.find(PILOT_RUN_FAILED).length, 2)
  t.equal(await store.head(advisoryObjectKey('js')), undefined, 'nothing published')

  const none = { ...s.config, advisories: { ...s.config.advisories, osvExportBaseUrl: undefined } }
  t.throws(() => checkPilotConfig(none), { code: 'CONFIG_INVALID', message: /advisories\.osvExportBaseUrl/ })
  t.throws(() => checkPilotConfig({ ...s.config, mounts: {} }), { code: 'CONFIG_INVALID' })
})

t.test('the feeds are read through the forward proxy when HTTP_PROXY routes them (docs/security.md#forward-proxy)', async (t) => {
  const s = await setup(t)
  const forward = await startConnectProxy(t)
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
  const logger = new RecordingLogger()
  const store = await FilesystemObjectStore.open({ root: s.config.store.path, clock })
  const report = await runPilot({ ctx: { config: s.config, logger, clock, env: { HTTP_PROXY: forward.url } }, store, tmpDir: join(s.root, 'tmp') })
  t.same(report.failed, [])
  t.same(report.published.map((p) => p.ecosystem), ['js', 'py'])
  t.ok(forward.targets.length >= 1, `tunnels opened: ${forward.targets.length}`)
  t.same([...new Set(forward.targets)], [new URL(s.peer.base).host], 'the OSV export and the EPSS feed, through the tunnel')
  const tunnels = forward.targets.length
  const direct = await runPilot({ ctx: { config: s.config, logger, clock, env: { HTTP_PROXY: forward.url, NO_PROXY: new URL(s.peer.base).hostname } }, store, tmpDir: join(s.root, 'tmp') })
  t.same(direct.failed, [])
  t.equal(forward.targets.length, tunnels, 'NO_PROXY: no tunnel more')
})
