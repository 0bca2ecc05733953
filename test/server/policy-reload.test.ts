/**
 * The policy document on a real proxy process (issue 31 items 1 and 2):
 * SIGHUP to the launcher with a new rule changes the next answer, a
 * retained packument included; a waiver admits a quarantined version, the
 * why route names it and the warn line appears once; a broken document
 * changes nothing; a document that cannot be read at boot is exit 2.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { iso, startPolicyProxy, startPolicyUpstream } from '../helpers/policy-proxy.js'
import { runService } from '../helpers/service-process.js'

const NAME = 'fresh-pkg'

t.test('SIGHUP re-reads the policy document: a new rule, a waiver, a broken document', async (t) => {
  const published = new Date(Date.now() - 3_600_000).toISOString()
  const { env } = await startPolicyUpstream(t, NAME, { '1.0.0': published })
  const dir = await mkdtemp(join(tmpdir(), 'policy-reload-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'policy.yaml')
  await writeFile(file, 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: 0 }\n')
  const { run, why, listed, occurrences } = await startPolicyProxy(t, NAME, {
    ...env,
    // The configured rules are a week's quarantine: the document's stand in for them.
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":604800}]',
    SERVICE_POLICY__FILE: file,
    SERVICE_POLICY__POLL_SECONDS: '0',
  })
  const hup = (): void => { process.kill(-(run.child.pid as number), 'SIGHUP') }

  t.match(await why('1.0.0'), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'the boot document\'s rules')
  t.same(await listed(), ['1.0.0'], 'admitted, and the answer retained')

  // A freeze before the publish: the next answers deny, the retained packument included.
  const freezeAt = iso(Date.now() - 2 * 3_600_000)
  await writeFile(file, `mounts:\n  js:\n    rules:\n      - { rule: DenyIfPublishedAfter, at: "${freezeAt}" }\n      - { rule: AllowIfOlderThan, seconds: 0 }\n`)
  hup()
  await occurrences('"policy applied"', 2)
  t.match(await why('1.0.0'), { verdict: 'deny', rule: 'DenyIfPublishedAfter', reason: 'freeze' })
  t.same(await listed(), [], 'no answer rendered under the old rules is served')

  // A waiver lets the frozen version through, named by the why route; its warn line once.
  const expires = new Date(Date.now() + 86_400_000).toISOString()
  await writeFile(file, `mounts:\n  js:\n    rules:\n      - { rule: DenyIfPublishedAfter, at: "${freezeAt}" }\n      - { rule: AllowIfOlderThan, seconds: 0 }\nwaivers:\n  - { package: ${NAME}, versions: "1.0.0", reason: INC-7 hotfix, by: sec-team, expires: "${expires}" }\n`)
  hup()
  await occurrences('"policy applied"', 3)
  t.match(await why('1.0.0'), { verdict: 'admit', reason: 'waiver', rule: null, waiver: { package: NAME, by: 'sec-team', reason: 'INC-7 hotfix', expires }, message: /admitted by a waiver .* granted by sec-team/ })
  t.same(await listed(), ['1.0.0'])
  t.same(await listed(), ['1.0.0'])
  await occurrences('"admitted by a waiver"', 1)
  t.equal(run.stdout().split('\n').filter((l) => l.includes('"admitted by a waiver"')).length, 1, 'logged once per version')

  // A broken document: refused whole, one error line; the waiver and the freeze stay in force.
  await writeFile(file, 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: -5 }\nwaivers: nope\n')
  hup()
  await occurrences('"policy document refused"', 1)
  t.match(await why('1.0.0'), { verdict: 'admit', reason: 'waiver' }, 'the running policy stays')
  t.equal(run.child.exitCode, null, 'still running')
  run.child.kill('SIGTERM')
  t.same(await run.exited, { code: 0, signal: null })
})

t.test('a policy document that cannot be read at boot is exit 2', async (t) => {
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: '0',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/',
    SERVICE_POLICY__FILE: join(tmpdir(), 'no-such-policy-document.yaml'),
  })
  t.same(await run.exited, { code: 2, signal: null })
  t.match(run.stderr(), /policy document .*no-such-policy-document\.yaml refused, 1 problem: cannot read/)
})
