/**
 * `service dredger` follows the policy document (issue 31 item 1, "Dredger
 * and proxy converge"), against real Verdaccio registries (dredger-rig.ts):
 * a document with no identity denial removes nothing; the same file
 * rewritten with a `DenyIdentity` (and a waiver for one of the versions it
 * names) is read at the start of the next cycle, which removes the denied
 * version from both inventories and keeps the waived one. The proxy side of
 * the same swap (the version withheld) is in test/server/policy-reload.test.ts
 * and test/server/policy-store-reload.test.ts; both roles on one document in
 * test/server/policy-commands.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { DREDGER_CYCLE_FINISHED, DREDGER_REMOVED } from '../../engine/dredger/dredger.js'
import { POLICY_APPLIED } from '../../server/roles/policy-reloader.js'
import { DredgerRig, held, logLines, stop, tarball, VERSIONS } from './dredger-rig.js'

const rig = await DredgerRig.start(t)

t.test('a DenyIdentity the document adds is removed in the next cycle; a waived version stays', async (t) => {
  await rig.seed('swap')
  const dir = await mkdtemp(join(tmpdir(), 'dredger-policy-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'policy.yaml')
  await writeFile(file, 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: 0 }\n')
  const { run } = await rig.dredger(t, { rules: [{ rule: 'AllowIfOlderThan', seconds: 604800 }], dredger: { cycleSeconds: 2 }, policy: { file, pollSeconds: 0 } })
  await run.waitForOutput(DREDGER_CYCLE_FINISHED, 120_000)
  t.match(logLines(run, POLICY_APPLIED)[0]?.data, { trigger: 'boot', file, mounts: ['js'] })
  t.same(logLines(run, DREDGER_REMOVED), [], 'the boot document revokes nothing')

  const expires = new Date(Date.now() + 86_400_000).toISOString()
  await writeFile(file, `mounts:\n  js:\n    rules:\n      - { rule: DenyIdentity, package: swap, versions: ">=1.0.1" }\n      - { rule: AllowIfOlderThan, seconds: 0 }\nwaivers:\n  - { package: swap, versions: "1.0.2", reason: INC-9, by: sec, expires: "${expires}" }\n`)
  for (let i = 0; i < 600 && logLines(run, DREDGER_REMOVED).length < 2; i++) await new Promise((r) => setTimeout(r, 100))
  t.match(logLines(run, POLICY_APPLIED)[1]?.data, { trigger: 'cycle', file, waivers: 1 }, 'read at the start of a cycle')
  t.same(logLines(run, DREDGER_REMOVED).map((l) => `${l.data['version']} ${l.data['inventory']} ${l.data['rule']}`).sort(), [
    '1.0.1 mirror_target mounts.js.rules[0] DenyIdentity swap@>=1.0.1',
    '1.0.1 private_cache mounts.js.rules[0] DenyIdentity swap@>=1.0.1',
  ])
  await stop(run)
  for (const peer of [rig.mirror, rig.priv]) {
    t.same(await held(peer, 'swap'), VERSIONS.filter((v) => v !== '1.0.1'), 'the waived 1.0.2 stays')
    t.equal(await tarball(peer, 'swap', '1.0.1'), 404)
  }
})
