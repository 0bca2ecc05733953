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
import { makeTestCa } from '../../bench/peers/tls.js'
import { POLICY_OBJECT_KEY } from '../../engine/config/policy-source.js'
import { FilesystemObjectStore } from '../../engine/store/filesystem-object-store.js'
import { startMisbehavingUpstream } from '../peers/misbehaving-upstream.js'
import { freePort } from '../helpers/ports.js'
import { runService, type ServiceRun } from '../helpers/service-process.js'

const NAME = 'fresh-pkg'

async function occurrences(run: ServiceRun, text: string, count: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (run.stdout().split('\n').filter((l) => l.includes(text)).length >= count) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`fewer than ${count} lines with "${text}"; stdout: ${run.stdout()}; stderr: ${run.stderr()}`)
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

t.test('policy waive, freeze and a bad object, through the store, on a running proxy', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const old = iso(Date.now() - 3 * 3_600_000)
  const recent = iso(Date.now() - 3_600_000)
  const version = (v: string) => ({ name: NAME, version: v, dist: { tarball: `${upstream.origin}/${NAME}/-/${NAME}-${v}.tgz`, integrity: 'sha512-AAAA' } })
  upstream.script(`/${NAME}`, {
    kind: 'respond',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: NAME,
      versions: { '1.0.0': version('1.0.0'), '1.1.0': version('1.1.0') },
      'dist-tags': { latest: '1.1.0' },
      time: { created: old, modified: recent, '1.0.0': old, '1.1.0': recent },
    }),
  })
  const dir = await mkdtemp(join(tmpdir(), 'policy-store-reload-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const storePath = join(dir, 'store')
  const common = {
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstream.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    // Two hours' quarantine: 1.0.0 (3 h old) is admitted, 1.1.0 (1 h old) waits.
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":7200}]',
    SERVICE_STORE__KIND: 'embedded',
    SERVICE_STORE__PATH: storePath,
    SERVICE_POLICY__STORE: 'true',
    SERVICE_POLICY__POLL_SECONDS: '1',
    USER: 'operator',
  }
  const port = await freePort()
  const proxy = runService(t, ['proxy'], { ...common, SERVICE_SERVER__PORT: String(port), SERVICE_SERVER__HOST: '127.0.0.1' })
  await proxy.waitForOutput('proxy listening', 120_000)
  t.match(proxy.stdout(), /"policy document not in the store yet; the configured rules are in force"/, 'booted on the configured rules')
  /** A policy command through the built binary: its exit code and output. */
  const command = async (...args: string[]): Promise<{ code: number | null; out: string; err: string }> => {
    const run = runService(t, ['policy', ...args], common)
    const { code } = await run.exited
    return { code, out: run.stdout(), err: run.stderr() }
  }

  const base = `http://127.0.0.1:${port}`
  const why = async (v: string): Promise<Record<string, unknown>> => await (await request(`${base}/js/-/why/${NAME}/${v}`)).body.json() as Record<string, unknown>
  const listed = async (): Promise<string[]> => {
    const answer = await request(`${base}/js/${NAME}`)
    const body = await answer.body.json() as { versions?: Record<string, unknown> }
    t.equal(answer.statusCode, 200)
    return Object.keys(body.versions ?? {})
  }
  t.match(await why('1.1.0'), { verdict: 'deny', rule: 'AllowIfOlderThan' })
  t.same(await listed(), ['1.0.0'], 'the quarantined version is withheld, the answer retained')

  const waived = await command('waive', `${NAME}@1.1.0`, '--reason', 'INC-7 hotfix', '--expires', '24h', '--by', 'sec-team')
  t.equal(waived.code, 0, waived.err)
  t.match(waived.out, /^waiver for fresh-pkg@1\.1\.0 \(js\) by sec-team until .* added to embedded:.*: digest [0-9a-f]{16}, 1 waiver\n$/)
  await occurrences(proxy, '"policy applied"', 1)
  t.match(await why('1.1.0'), { verdict: 'admit', reason: 'waiver', waiver: { package: NAME, versions: '1.1.0', by: 'sec-team', reason: 'INC-7 hotfix' } }, 'the why route names the waiver')
  t.same(await listed(), ['1.0.0', '1.1.0'], 'the retained answer is not served: the waived version is listed')

  // A freeze before both publishes: 1.0.0 is withheld on every path; 1.1.0 stays admitted by its waiver.
  const frozen = await command('freeze', '--at', iso(Date.now() - 4 * 3_600_000))
  t.equal(frozen.code, 0, frozen.err)
  t.match(frozen.out, /^freeze at .* put at the top of the rules of js in /)
  await occurrences(proxy, '"policy applied"', 2)
  t.match(await why('1.0.0'), { verdict: 'deny', rule: 'DenyIfPublishedAfter', reason: 'freeze' })
  t.same(await listed(), ['1.1.0'])
  const artifact = await request(`${base}/js/${NAME}/-/${NAME}-1.0.0.tgz`)
  t.equal(artifact.statusCode, 403, 'the artifact of a frozen version is refused')
  await artifact.body.dump()

  // Past the commands, a bad object: refused whole, the waiver and the freeze stay in force.
  const direct = await FilesystemObjectStore.open({ root: storePath })
  await direct.put(POLICY_OBJECT_KEY, Buffer.from('{"mounts":{"js":{"rules":[{"rule":"AllowIfOlderThan","seconds":-5}]}},"waivers":"nope"}'), {})
  await occurrences(proxy, '"policy document refused"', 1)
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
