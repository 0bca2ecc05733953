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
import { request } from 'undici'
import { makeTestCa } from '../../bench/peers/tls.js'
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

t.test('SIGHUP re-reads the policy document: a new rule, a waiver, a broken document', async (t) => {
  const ca = await makeTestCa()
  t.teardown(() => ca.remove())
  const upstream = await startMisbehavingUpstream({ tls: ca })
  t.teardown(() => upstream.stop())
  const published = new Date(Date.now() - 3_600_000).toISOString()
  upstream.script(`/${NAME}`, {
    kind: 'respond',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: NAME,
      versions: { '1.0.0': { name: NAME, version: '1.0.0', dist: { tarball: `${upstream.origin}/${NAME}/-/${NAME}-1.0.0.tgz`, integrity: 'sha512-AAAA' } } },
      'dist-tags': { latest: '1.0.0' },
      time: { created: published, modified: published, '1.0.0': published },
    }),
  })
  const dir = await mkdtemp(join(tmpdir(), 'policy-reload-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'policy.yaml')
  await writeFile(file, 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: 0 }\n')
  const port = await freePort()
  const run = runService(t, ['proxy'], {
    SERVICE_SERVER__PORT: String(port),
    SERVICE_SERVER__HOST: '127.0.0.1',
    SERVICE_RUNTIME__CORES: '1',
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: `${upstream.origin}/`,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__CA_FILE: ca.caFile,
    SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__ALLOW_INTERNAL_RANGES: '["127.0.0.0/8"]',
    // The configured rules are a week's quarantine: the document's stand in for them.
    SERVICE_MOUNTS__JS__RULES: '[{"rule":"AllowIfOlderThan","seconds":604800}]',
    SERVICE_POLICY__FILE: file,
    SERVICE_POLICY__POLL_SECONDS: '0',
  })
  await run.waitForOutput('proxy listening', 120_000)
  const base = `http://127.0.0.1:${port}`
  const why = async (): Promise<Record<string, unknown>> => {
    const answer = await request(`${base}/js/-/why/${NAME}/1.0.0`)
    return await answer.body.json() as Record<string, unknown>
  }
  /** The versions the packument lists; a packument whose every public version is withheld is a 403 that says so. */
  const listed = async (): Promise<string[]> => {
    const answer = await request(`${base}/js/${NAME}`)
    const body = await answer.body.json() as { versions?: Record<string, unknown>; error?: string }
    if (answer.statusCode === 403) {
      t.match(body.error, /every public version is withheld by policy/)
      return []
    }
    t.equal(answer.statusCode, 200)
    return Object.keys(body.versions ?? {})
  }
  const hup = (): void => { process.kill(-(run.child.pid as number), 'SIGHUP') }

  t.match(await why(), { verdict: 'admit', rule: 'AllowIfOlderThan' }, 'the boot document\'s rules')
  t.same(await listed(), ['1.0.0'], 'admitted, and the answer retained')

  // A freeze before the publish: the next answers deny, the retained packument included.
  const freezeAt = new Date(Date.now() - 2 * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z')
  await writeFile(file, `mounts:\n  js:\n    rules:\n      - { rule: DenyIfPublishedAfter, at: "${freezeAt}" }\n      - { rule: AllowIfOlderThan, seconds: 0 }\n`)
  hup()
  await occurrences(run, '"policy applied"', 2)
  t.match(await why(), { verdict: 'deny', rule: 'DenyIfPublishedAfter', reason: 'freeze' })
  t.same(await listed(), [], 'no answer rendered under the old rules is served')

  // A waiver lets the frozen version through, named by the why route; its warn line once.
  const expires = new Date(Date.now() + 86_400_000).toISOString()
  await writeFile(file, `mounts:\n  js:\n    rules:\n      - { rule: DenyIfPublishedAfter, at: "${freezeAt}" }\n      - { rule: AllowIfOlderThan, seconds: 0 }\nwaivers:\n  - { package: ${NAME}, versions: "1.0.0", reason: INC-7 hotfix, by: sec-team, expires: "${expires}" }\n`)
  hup()
  await occurrences(run, '"policy applied"', 3)
  t.match(await why(), { verdict: 'admit', reason: 'waiver', rule: null, waiver: { package: NAME, by: 'sec-team', reason: 'INC-7 hotfix', expires }, message: /admitted by a waiver .* granted by sec-team/ })
  t.same(await listed(), ['1.0.0'])
  t.same(await listed(), ['1.0.0'])
  await occurrences(run, '"admitted by a waiver"', 1)
  t.equal(run.stdout().split('\n').filter((l) => l.includes('"admitted by a waiver"')).length, 1, 'logged once per version')

  // A broken document: refused whole, one error line; the waiver and the freeze stay in force.
  await writeFile(file, 'mounts:\n  js:\n    rules:\n      - { rule: AllowIfOlderThan, seconds: -5 }\nwaivers: nope\n')
  hup()
  await occurrences(run, '"policy document refused"', 1)
  t.match(await why(), { verdict: 'admit', reason: 'waiver' }, 'the running policy stays')
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
