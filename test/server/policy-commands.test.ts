/**
 * `service policy push|waive|freeze|show` on the store's document (issue 31
 * items 1-3), run in-process on an embedded store: push validates first
 * (the check's sentence, exit 2, nothing written); waive adds one waiver
 * and refuses one the document would refuse; freeze puts one
 * DenyIfPublishedAfter at the top of every mount's rules and replaces its
 * own earlier freeze; concurrent waivers all land (the conditional write);
 * and the proxy's policy and the Dredger's judge, reloaded from the same
 * object, converge: a DenyIdentity the document adds is withheld by the one
 * and removed by the other in its next cycle, a waived version kept.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t, { type Test } from 'tap'
import { AdvisorySlot } from '../../engine/advisory/consumer/advisory-slot.js'
import { loadConfig } from '../../engine/config/load.js'
import { readStoredPolicy } from '../../engine/config/policy-source.js'
import { DredgerCounters } from '../../engine/dredger/dredger-counters.js'
import { Dredger } from '../../engine/dredger/dredger.js'
import type { InventoryName, NpmInventory, RemovalResult } from '../../engine/dredger/npm-inventory.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { mountPolicy } from '../../engine/policy/mount-policy.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { parseArgs } from '../../server/cli/args.js'
import { runPolicyCommand, type PolicyStoreCommand } from '../../server/cli/policy-commands.js'
import { JudgeSlot, judgedMount } from '../../server/roles/dredger-policy.js'
import { bootPolicy, PolicyReloader, withPolicyRules } from '../../server/roles/policy-reloader.js'
import { RecordingLogger } from '../doubles/recording-logger.js'
import { ManualClock } from '../doubles/manual-clock.js'

const NOW = Date.now()

async function setup(t: Test, extraEnv: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'policy-commands-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = {
    SERVICE_STORE__KIND: 'embedded',
    SERVICE_STORE__PATH: join(dir, 'store'),
    SERVICE_POLICY__STORE: 'true',
    SERVICE_POLICY__POLL_SECONDS: '0',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":604800}]',
    USER: 'operator',
    ...extraEnv,
  }
  /** Runs `service <argv>` in-process; stdout, stderr and the exit code. */
  const run = async (...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
    const command = parseArgs(argv)
    if (!command.kind.startsWith('policy-') || command.kind === 'policy-check') throw new Error(`not a store command: ${JSON.stringify(command)}`)
    const out = new PassThrough()
    const err = new PassThrough()
    let outText = ''
    let errText = ''
    out.on('data', (c: Buffer) => { outText += c.toString() })
    err.on('data', (c: Buffer) => { errText += c.toString() })
    const code = await runPolicyCommand(command as PolicyStoreCommand, { out, err, env, now: () => NOW })
    return { code, out: outText, err: errText }
  }
  const file = async (name: string, text: string): Promise<string> => {
    const path = join(dir, name)
    await writeFile(path, text)
    return path
  }
  const stored = async (): Promise<Record<string, unknown> | undefined> => {
    const text = (await readStoredPolicy(await FilesystemObjectStore.open({ root: join(dir, 'store') })))?.text
    return text === undefined ? undefined : JSON.parse(text) as Record<string, unknown>
  }
  return { dir, env, run, file, stored }
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

t.test('push: validated first, then written whole; show prints it', async (t) => {
  const { run, file, stored } = await setup(t)
  const bad = await file('bad.yaml', 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: -1 } ] } }\nwaivers: nope\n')
  const refused = await run('policy', 'push', bad)
  t.equal(refused.code, 2)
  t.match(refused.err, new RegExp(`^service: policy document ${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} refused, 2 problems: `))
  t.equal(await stored(), undefined, 'nothing written')
  t.match(await run('policy', 'show'), { code: 1, err: /the store holds no policy document at embedded:.*\/policy\/document\.json/ })

  const good = await file('good.yaml', 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: 0 }\n')
  const pushed = await run('policy', 'push', good)
  t.equal(pushed.code, 0, pushed.err)
  t.match(pushed.out, /^policy document .*good\.yaml pushed to embedded:.*\/policy\/document\.json: digest [0-9a-f]{16}, rules for js, 0 waivers\n$/)
  t.same(await stored(), { mounts: { js: { rules: [{ rule: 'AllowIfOlderThan', seconds: 0 }] } } })
  const shown = await run('policy', 'show')
  t.equal(shown.code, 0)
  t.same(JSON.parse(shown.out), await stored())
})

t.test('the store commands refuse a configuration whose roles would not read the store', async (t) => {
  const { run, file } = await setup(t, { SERVICE_POLICY__STORE: 'false' })
  const good = await file('good.yaml', 'waivers: []\n')
  t.match(await run('policy', 'push', good), { code: 2, err: /policy\.store is not true in this configuration: the roles read no policy document/ })
  t.match(await run('policy', 'freeze', '--at', 'now'), { code: 2, err: /^service: policy freeze: policy\.store is not true/ })
})

t.test('waive: one waiver added; one the document refuses writes nothing', async (t) => {
  const { run, stored } = await setup(t)
  const added = await run('policy', 'waive', '@acme/fix@^2.1.0', '--reason', 'INC-42 hotfix', '--expires', '24h')
  t.equal(added.code, 0, added.err)
  const expires = iso(NOW + 86_400_000)
  t.match(added.out, new RegExp(`^waiver for @acme/fix@\\^2\\.1\\.0 \\(js\\) by operator until ${expires} added to .*: digest [0-9a-f]{16}, 1 waiver\n$`))
  t.same(await stored(), { waivers: [{ package: '@acme/fix', versions: '^2.1.0', reason: 'INC-42 hotfix', by: 'operator', expires }] }, 'an empty document, with the waiver')
  const py = await run('policy', 'waive', 'Django@==5.0.1', '--reason', 'r', '--expires', iso(NOW + 3_600_000), '--by', 'bob', '--mount', 'py')
  t.equal(py.code, 0, py.err)
  t.match(await stored(), { waivers: [{ package: '@acme/fix' }, { package: 'Django', versions: '==5.0.1', by: 'bob', mount: 'py' }] })

  const tooLong = await run('policy', 'waive', 'left-pad@1.3.0', '--reason', 'r', '--expires', '60d')
  t.equal(tooLong.code, 2)
  t.match(tooLong.err, /^service: policy waive: nothing was written: policy document .* refused, 1 problem: waivers\[2\] .*more than 30 days away/)
  t.equal(((await stored())?.['waivers'] as unknown[]).length, 2, 'the store is unchanged')
  t.match(await run('policy', 'waive', 'left-pad', '--reason', 'r', '--expires', '1d'), { code: 2, err: /left-pad is not PKG@RANGE/ })
})

t.test('concurrent waivers all land: each write is conditional on the object it read', async (t) => {
  const { run, stored } = await setup(t)
  const results = await Promise.all(['a', 'b', 'c', 'd'].map((name) => run('policy', 'waive', `${name}@1.0.0`, '--reason', 'r', '--expires', '1h')))
  t.same(results.map((r) => r.code), [0, 0, 0, 0], results.map((r) => r.err).join(''))
  t.same(((await stored())?.['waivers'] as { package: string }[]).map((w) => w.package).sort(), ['a', 'b', 'c', 'd'])
})

t.test('freeze: at the top of every mount\'s rules, an earlier freeze replaced', async (t) => {
  const { run, file, stored } = await setup(t)
  await run('policy', 'push', await file('p.yaml', 'waivers: []\n'))
  const first = await run('policy', 'freeze', '--at', '2026-03-01T12:00:00Z')
  t.equal(first.code, 0, first.err)
  t.match(first.out, /^freeze at 2026-03-01T12:00:00Z put at the top of the rules of js in .*: digest [0-9a-f]{16}\n$/)
  t.same((await stored())?.['mounts'], { js: { rules: [{ rule: 'DenyIfPublishedAfter', at: '2026-03-01T12:00:00Z' }, { rule: 'AllowIfOlderThan', seconds: 604800 }] } },
    'the configured rules of a mount the document did not name, under the freeze')
  const now = await run('policy', 'freeze', '--at', 'now')
  t.equal(now.code, 0, now.err)
  t.same((await stored())?.['mounts'], { js: { rules: [{ rule: 'DenyIfPublishedAfter', at: iso(NOW) }, { rule: 'AllowIfOlderThan', seconds: 604800 }] } }, 'replaced, not stacked')
  t.match(await run('policy', 'freeze', '--at', 'yesterday'), { code: 2, err: /nothing was written: .*DenyIfPublishedAfter/ })
})

class MemoryInventory {
  readonly authority = 'memory'
  readonly removed: string[] = []
  constructor(readonly name: InventoryName, readonly held: Map<string, string[]>) {}
  async packages(): Promise<readonly string[]> { return [...this.held.keys()] }
  async versions(name: string): Promise<readonly string[]> { return this.held.get(name) ?? [] }
  async remove(name: string, version: string): Promise<RemovalResult> {
    const versions = this.held.get(name) ?? []
    if (!versions.includes(version)) return 'absent'
    this.held.set(name, versions.filter((v) => v !== version))
    this.removed.push(`${name}@${version}`)
    return 'removed'
  }
}

t.test('the proxy and the Dredger converge on the store\'s document', async (t) => {
  const { run, env } = await setup(t, { SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":0}]' })
  const loaded = loadConfig({ configPath: undefined, env })
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems))
  const configured = loaded.config.mounts.js?.rules ?? []
  const clock = new ManualClock(NOW)
  const logger = new RecordingLogger()
  // Each role boots on the store's document (none yet: the configured rules), as startProxy and startDredger do.
  const proxyBoot = await bootPolicy(loaded.config, clock, logger)
  const dredgerBoot = await bootPolicy(loaded.config, clock, logger)
  if (proxyBoot === undefined || dredgerBoot === undefined) throw new Error('no boot policy')
  const proxyRules = withPolicyRules(loaded.config, proxyBoot).mounts.js?.rules ?? []
  const policy = mountPolicy({ ecosystem: 'js', rules: proxyRules, waivers: [], configuredMaxAgeSeconds: 0, slot: new AdvisorySlot(), logger, clock })
  const proxy = new PolicyReloader({ boot: proxyBoot, mounts: new Map([['js', { policy, configured }]]), pollSeconds: 0, logger, clock })
  const slot = new JudgeSlot('js', withPolicyRules(loaded.config, dredgerBoot).mounts.js?.rules ?? [], [])
  const dredgerPolicy = new PolicyReloader({ boot: dredgerBoot, mounts: new Map([['js', { policy: slot, configured }]]), pollSeconds: 0, logger, clock, checkAdvisories: false })
  const inventory = new MemoryInventory('mirror_target', new Map([['p', ['1.0.0', '1.0.1', '1.0.2']]]))
  const dredger = new Dredger({ mounts: [judgedMount(slot, { key: 'js', inventories: [inventory as unknown as NpmInventory] })], maxRemovalsPerCycle: 10, counters: new DredgerCounters(), logger })
  const cycle = async () => {
    await dredgerPolicy.reload('cycle')
    return dredger.runCycle('candidate')
  }
  const verdict = (version: string): string => {
    const facts: VersionFacts = { ecosystem: 'js', name: 'p', version, publishedAt: new Date(NOW - 86_400_000) }
    return policy.evaluator.evaluate(facts, 'admission').verdict
  }

  t.match(await cycle(), { planned: 0, removed: 0 }, 'the configured rules revoke nothing')
  t.equal(verdict('1.0.1'), 'admit')

  // The swap: a DenyIdentity for p >=1.0.1, and a waiver for 1.0.2, in the store.
  const pushed = await run('policy', 'push', await (async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'policy-doc-')), 'p.json')
    t.teardown(() => rm(path, { force: true }))
    await writeFile(path, JSON.stringify({
      mounts: { js: { rules: [{ rule: 'DenyIdentity', package: 'p', versions: '>=1.0.1' }, { rule: 'AllowIfOlderThan', seconds: 0 }] } },
      waivers: [{ package: 'p', versions: '1.0.2', reason: 'INC-9', by: 'sec', expires: iso(NOW + 3_600_000) }],
    }))
    return path
  })())
  t.equal(pushed.code, 0, pushed.err)
  await proxy.reload('poll')
  t.equal(verdict('1.0.1'), 'deny', 'the proxy withholds the version the document denies')
  t.equal(verdict('1.0.2'), 'admit', 'and admits the waived one')
  t.equal(verdict('1.0.0'), 'admit')
  const report = await cycle()
  t.match(report, { planned: 1, removed: 1 }, 'the Dredger\'s next cycle removes it')
  t.same(inventory.removed, ['p@1.0.1'], 'the waived version stays in the inventory')
  t.same(inventory.held.get('p'), ['1.0.0', '1.0.2'])
  t.equal(proxy.digest, dredgerPolicy.digest, 'both roles hold the same document')
  t.match(await run('policy', 'show'), { code: 0, out: /"rule": "DenyIdentity"/ }, 'show prints the document both read')
})
