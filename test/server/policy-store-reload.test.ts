/**
 * The store's policy document on a real proxy process, written by the
 * built `service policy` commands (issue 31 items 1-3, Must show): the proxy
 * boots with no document on its configured quarantine; `policy waive`
 * admits a quarantined version (packument, why route) within a poll;
 * `policy freeze` withholds what was published after the instant on every
 * path (packument, artifact, why) while the waived version stays admitted;
 * a bad object written into the store past the commands is refused whole and
 * the policy in force stays; `policy push` of a bad file writes nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { POLICY_OBJECT_KEY } from '../../engine/config/policy-source.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { iso, startPolicyProxy, startPolicyUpstream } from '../helpers/policy-proxy.js'
import { runService } from '../helpers/service-process.js'

const NAME = 'fresh-pkg'

t.test('policy waive, freeze and a bad object, through the store, on a running proxy', async (t) => {
  const { env } = await startPolicyUpstream(t, NAME, { '1.0.0': iso(Date.now() - 3 * 3_600_000), '1.1.0': iso(Date.now() - 3_600_000) })
  const dir = await mkdtemp(join(tmpdir(), 'policy-store-reload-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const storePath = join(dir, 'store')
  const common = {
    ...env,
    // Two hours' quarantine: 1.0.0 (3 h old) is admitted, 1.1.0 (1 h old) waits.
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":7200}]',
    SERVICE_STORE__KIND: 'embedded',
    SERVICE_STORE__PATH: storePath,
    SERVICE_POLICY__STORE: 'true',
    SERVICE_POLICY__POLL_SECONDS: '1',
    USER: 'operator',
  }
  const { run: proxy, base, why, listed, occurrences } = await startPolicyProxy(t, NAME, common)
  t.match(proxy.stdout(), /"policy document not in the store yet; the configured rules are in force"/, 'booted on the configured rules')
  /** A policy command through the built binary: its exit code and output. */
  const command = async (...args: string[]): Promise<{ code: number | null; out: string; err: string }> => {
    const run = runService(t, ['policy', ...args], common)
    const { code } = await run.exited
    return { code, out: run.stdout(), err: run.stderr() }
  }

  t.match(await why('1.1.0'), { verdict: 'deny', rule: 'AllowIfOlderThan' })
  t.same(await listed(), ['1.0.0'], 'the quarantined version is withheld, the answer retained')

  const waived = await command('waive', `${NAME}@1.1.0`, '--reason', 'INC-7 hotfix', '--expires', '24h', '--by', 'sec-team')
  t.equal(waived.code, 0, waived.err)
  t.match(waived.out, /^waiver for fresh-pkg@1\.1\.0 \(js\) by sec-team until .* added to embedded:.*: digest [0-9a-f]{16}, 1 waiver\n$/)
  await occurrences('"policy applied"', 1)
  t.match(await why('1.1.0'), { verdict: 'admit', reason: 'waiver', waiver: { package: NAME, versions: '1.1.0', by: 'sec-team', reason: 'INC-7 hotfix' } }, 'the why route names the waiver')
  t.same(await listed(), ['1.0.0', '1.1.0'], 'the retained answer is not served: the waived version is listed')

  // A freeze before both publishes: 1.0.0 is withheld on every path; 1.1.0 stays admitted by its waiver.
  const frozen = await command('freeze', '--at', iso(Date.now() - 4 * 3_600_000))
  t.equal(frozen.code, 0, frozen.err)
  t.match(frozen.out, /^freeze at .* put at the top of the rules of js in /)
  await occurrences('"policy applied"', 2)
  t.match(await why('1.0.0'), { verdict: 'deny', rule: 'DenyIfPublishedAfter', reason: 'freeze' })
  t.same(await listed(), ['1.1.0'])
  const artifact = await request(`${base}/js/${NAME}/-/${NAME}-1.0.0.tgz`)
  t.equal(artifact.statusCode, 403, 'the artifact of a frozen version is refused')
  await artifact.body.dump()

  // Past the commands, a bad object: refused whole, the waiver and the freeze stay in force.
  const direct = await FilesystemObjectStore.open({ root: storePath })
  await direct.put(POLICY_OBJECT_KEY, Buffer.from('{"mounts":{"js":{"rules":[{"rule":"AllowIfOlderThan","seconds":-5}]}},"waivers":"nope"}'), {})
  await occurrences('"policy document refused"', 1)
  t.match(proxy.stdout().split('\n').find((l) => l.includes('"policy document refused"')), /refused, 2 problems: /)
  t.match(await why('1.1.0'), { verdict: 'admit', reason: 'waiver' }, 'the policy in force stays')
  t.same(await listed(), ['1.1.0'])

  // The commands refuse to edit a document the roles refuse; push of a bad file writes nothing.
  t.match(await command('waive', 'left-pad@1.0.0', '--reason', 'r', '--expires', '1h'), { code: 2, err: /the store's document does not validate, nothing was written/ })
  const badFile = join(dir, 'bad.yaml')
  await writeFile(badFile, 'mounts: { js: { rules: [ { rule: Nope } ] } }\n')
  t.match(await command('push', badFile), { code: 2, err: /^service: policy document .*bad\.yaml refused, 1 problem: / })
  t.equal(proxy.child.exitCode, null, 'still running')
  proxy.child.kill('SIGTERM')
  t.same(await proxy.exited, { code: 0, signal: null })
})
