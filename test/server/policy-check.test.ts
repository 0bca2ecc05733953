/**
 * `service policy check FILE [--json]`: a valid document is one line and
 * exit 0; an invalid or unreadable one names every problem and exits 2;
 * parsed as a command of its own (no configuration read).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t, { type Test } from 'tap'
import { parseArgs } from '../../server/cli/args.js'
import { runPolicyCheck } from '../../server/cli/policy-check.js'
import { runService } from '../helpers/service-process.js'

const NOW = Date.parse('2026-01-01T00:00:00Z')

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (c: Buffer) => { text += c.toString('utf8') })
  return { stream, text: () => text }
}

async function check(t: Test, body: string, json = false, name = 'policy.yaml') {
  const dir = await mkdtemp(join(tmpdir(), 'policy-check-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, name)
  await writeFile(file, body)
  const out = capture()
  const err = capture()
  const code = await runPolicyCheck(file, json, { out: out.stream, err: err.stream, now: NOW })
  return { file, code, out: out.text(), err: err.text() }
}

t.test('the command parses apart from the roles', async (t) => {
  t.same(parseArgs(['policy', 'check', 'p.yaml']), { kind: 'policy-check', file: 'p.yaml', json: false })
  t.same(parseArgs(['policy', 'check', 'p.json', '--json']), { kind: 'policy-check', file: 'p.json', json: true })
  t.match(parseArgs(['policy', 'check']), { kind: 'usage-error', message: 'policy check needs a file' })
  t.match(parseArgs(['policy']), { kind: 'usage-error', message: 'policy needs a subcommand: check, push, waive, freeze or show' })
  t.match(parseArgs(['policy', 'publish', 'p.yaml']), { kind: 'usage-error', message: 'unknown policy subcommand publish' })
  t.match(parseArgs(['policy', 'check', 'a', 'b']), { kind: 'usage-error', message: 'unexpected argument b' })
  t.match(parseArgs(['policy', 'check', 'a', '--at', 'now']), { kind: 'usage-error', message: '--at is not an option of policy check' })
})

t.test('the store commands parse their options', async (t) => {
  t.same(parseArgs(['policy', 'push', 'p.yaml', '--config', 'c.yaml']), { kind: 'policy-push', file: 'p.yaml', configPath: 'c.yaml' })
  t.same(parseArgs(['policy', 'show']), { kind: 'policy-show', configPath: undefined })
  t.same(parseArgs(['policy', 'freeze', '--at=2026-03-01T12:00:00Z']), { kind: 'policy-freeze', at: '2026-03-01T12:00:00Z', configPath: undefined })
  t.same(parseArgs(['policy', 'waive', '@scope/fix@^2.1.0', '--reason', 'INC-42', '--expires', '24h', '--by', 'alice', '--mount', 'js']),
    { kind: 'policy-waive', spec: '@scope/fix@^2.1.0', reason: 'INC-42', expires: '24h', by: 'alice', mount: 'js', configPath: undefined })
  t.match(parseArgs(['policy', 'waive', 'a@1', '--reason', 'r']), { kind: 'usage-error', message: 'policy waive needs --reason and --expires' })
  t.match(parseArgs(['policy', 'waive', 'a@1', '--reason', 'r', '--expires', '1d', '--mount', 'go']), { kind: 'usage-error', message: '--mount is js or py, not go' })
  t.match(parseArgs(['policy', 'freeze']), { kind: 'usage-error', message: 'policy freeze needs --at INSTANT (or --at now)' })
  t.match(parseArgs(['policy', 'push', 'p.yaml', '--json']), { kind: 'usage-error', message: '--json is not an option of policy push' })
  t.match(parseArgs(['proxy', '--reason', 'r']), { kind: 'usage-error', message: '--reason is for the policy commands' })
})

t.test('a valid document: one line, exit 0', async (t) => {
  const valid = 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: 0 } ] } }\nwaivers: [ { package: a, versions: "1.0.0", reason: r, by: me, expires: "2026-01-02T00:00:00Z" } ]\n'
  const text = await check(t, valid)
  t.equal(text.code, 0)
  t.match(text.out, new RegExp(`^policy document ${text.file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is valid: digest [0-9a-f]{16}, rules for js, 1 waiver\n$`))
  t.equal(text.err, '')
  const json = await check(t, valid, true)
  t.match(JSON.parse(json.out), { valid: true, mounts: ['js'], waivers: 1, digest: /^[0-9a-f]{16}$/ })
})

t.test('an invalid document: every problem, exit 2', async (t) => {
  const text = await check(t, 'mounts: { js: { rules: [ { rule: AllowIfOlderThan, seconds: -1 } ] } }\nwaivers: [ { package: a, versions: "1.0.0", reason: r, by: me, expires: "2026-06-01T00:00:00Z" } ]\n')
  t.equal(text.code, 2)
  t.equal(text.out, '')
  t.match(text.err, /^service: policy document .* refused, 2 problems: mounts\.js\.rules\.0\.seconds: .*; waivers\[0\] .* more than 30 days away/)
  const json = await check(t, '{"waivers": 3}', true, 'policy.json')
  t.equal(json.code, 2)
  t.match(JSON.parse(json.out), { valid: false, problems: [/^waivers: /] })
})

t.test('the built binary runs it without a configuration', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'policy-check-bin-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'p.yaml')
  await writeFile(file, 'mounts: { py: { rules: [] } }\n')
  const run = runService(t, ['policy', 'check', file])
  t.same(await run.exited, { code: 0, signal: null })
  t.match(run.stdout(), /is valid: digest [0-9a-f]{16}, rules for py, 0 waivers/)
  const missing = runService(t, ['policy', 'check', join(dir, 'missing.yaml')])
  t.same(await missing.exited, { code: 2, signal: null })
  t.match(missing.stderr(), /refused, 1 problem: cannot read/)
})
