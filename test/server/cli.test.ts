import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runService } from '../helpers/service-process.js'

const OFFLINE = { SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/' }

t.test('a refused configuration aborts the boot with exit 2 and every problem listed', async (t) => {
  const run = runService(t, ['proxy'], { ...OFFLINE, SERVICE_SERVER__PORT: 'eighty', SERVICE_RUNTIME__CORES: '0', SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__URL: 'https://u:p@private.example/' })
  const { code } = await run.exited
  t.equal(code, 2)
  t.match(run.stderr(), /configuration refused, 3 problems/)
  t.match(run.stderr(), /server\.port/)
  t.match(run.stderr(), /runtime\.cores/)
  t.match(run.stderr(), /mounts\.js\.upstreams\.private\.url: must not carry userinfo/)
})

t.test('roles this build cannot run refuse with exit 2', async (t) => {
  for (const args of [['dredger'], ['dredger', '--dry-run']]) {
    const run = runService(t, args, { ...OFFLINE, SERVICE_SERVER__PORT: '0' })
    const { code } = await run.exited
    t.equal(code, 2, `${args.join(' ')} without an inventory cannot start`)
    t.match(run.stderr(), /service dredger needs mounts\.js\.mirror/)
  }
  const mirror = runService(t, ['mirror'], OFFLINE)
  t.equal((await mirror.exited).code, 2, 'mirror without a mirror target cannot start')
  t.match(mirror.stderr(), /service mirror needs mounts\.js\.mirror/)
  const unknown = runService(t, ['janitor'], OFFLINE)
  t.equal((await unknown.exited).code, 2)
  t.match(unknown.stderr(), /unknown role janitor/)
})

t.test('check-config validates without starting a role; --json is one object', async (t) => {
  const run = runService(t, ['check-config', '--json'], { ...OFFLINE, SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__URL: 'https://private.example/npm/', SERVICE_MOUNTS__JS__UPSTREAMS__PRIVATE__TOKEN: 'hush-hush' })
  const { code } = await run.exited
  t.equal(code, 0)
  t.notMatch(run.stdout(), /hush-hush/, 'secrets redacted')
  const report = JSON.parse(run.stdout()) as { ok: boolean; config: { mounts: { js: { upstreams: { private: { url: string; token: string } } } } }; plan: object }
  t.equal(report.ok, true)
  t.equal(report.config.mounts.js.upstreams.private.url, 'https://private.example/npm/', 'endpoint values printed')
  t.equal(report.config.mounts.js.upstreams.private.token, '[REDACTED]')
  t.type(report.plan, 'object')

  // Telemetry on: the export settings as boot echoes them, the collector's header values redacted.
  const telemetry = runService(t, ['check-config', '--json'], {
    ...OFFLINE, SERVICE_OBSERVABILITY__TELEMETRY: 'on', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=collector-secret',
  })
  t.equal((await telemetry.exited).code, 0)
  t.notMatch(telemetry.stdout(), /collector-secret/, 'OTLP header values redacted')
  t.match(JSON.parse(telemetry.stdout()), { telemetry: { endpoint: 'http://collector.internal:4318', headers: { 'x-api-key': '[redacted]' }, traces: 'otlp' } })
  t.notOk('telemetry' in (report as object), 'telemetry off: no telemetry echo')

  const bad = runService(t, ['check-config', '--json'], { ...OFFLINE, SERVICE_SERVER__PORT: 'x' })
  t.equal((await bad.exited).code, 2)
  t.match(JSON.parse(bad.stdout()), { ok: false, problems: [{ path: 'server.port' }] })
})

t.test('check-config refuses exactly what boot refuses: exit 2 and the same report', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'check-config-parity-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // Each document was once refused only when the proxy started, after check-config had passed it.
  const documents: Record<string, string> = {
    'upstream-query': 'mounts: { js: { upstreams: { private: { url: "https://private.example/npm/?shard=2" } } } }\n',
    'upstream-fragment': 'mounts: { js: { upstreams: { private: { url: "https://private.example/npm/#top" } } } }\n',
    'internal-range': 'mounts: { js: { upstreams: { public: { allowInternalRanges: ["127.0.0.0/33", "localhost"] } } } }\n',
    'store-prefix': 'store: { kind: s3, bucket: advisories, region: eu-west-1, prefix: "../outside" }\n',
    schema: 'runtime: { cores: 0 }\n',
  }
  for (const [name, text] of Object.entries(documents)) {
    const file = join(dir, `${name}.yaml`)
    await writeFile(file, text)
    const env = { ...OFFLINE, SERVICE_SERVER__PORT: '0' }
    const check = runService(t, ['check-config', '--config', file], env)
    const boot = runService(t, ['proxy', '--config', file], env)
    // A boot that starts after all is a failure to report, not a hang until tap's timeout.
    const started = boot.waitForOutput('proxy listening', 60_000).then(() => ({ code: 'started' }), () => boot.exited)
    const [checked, booted] = await Promise.all([check.exited, Promise.race([boot.exited, started])])
    t.equal(checked.code, 2, `${name}: check-config refuses`)
    t.equal(booted.code, 2, `${name}: boot refuses`)
    t.match(check.stderr(), /^configuration refused, \d+ problems?:\n/, `${name}: a configuration report`)
    t.equal(boot.stderr(), check.stderr(), `${name}: the same report`)
  }
})

t.test('the launcher names how the service process ended (SPEC.md 7.2)', async (t) => {
  const { childOutcome } = await import('../../server/cli/service.js')
  t.same(childOutcome(0, null, ''), { exitCode: 0 })
  t.same(childOutcome(2, null, ''), { exitCode: 2 })
  t.match(childOutcome(null, 'SIGABRT', '<--- Last few GCs --->\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory'),
    { exitCode: 1, detail: /^heap overflow/ })
  t.match(childOutcome(null, 'SIGSEGV', ''), { exitCode: 1, detail: 'crashed with SIGSEGV' })
  t.match(childOutcome(null, 'SIGKILL', ''), { exitCode: 3, detail: /from outside by SIGKILL/ })
})

t.test('a kill that bypasses the graceful path is exit 3; a crash is exit 1 with the service exited line', async (t) => {
  for (const [signal, code, line] of [['SIGKILL', 3, /service: service exited: stopped from outside by SIGKILL/], ['SIGABRT', 1, /service: service exited: crashed with SIGABRT/]] as const) {
    const run = runService(t, ['proxy'], { ...OFFLINE, SERVICE_SERVER__PORT: '0' })
    await run.waitForOutput('proxy listening')
    const pid = (JSON.parse(run.stdout().split('\n').find((l) => l.includes('proxy listening')) as string) as { katip: { pid: number } }).katip.pid
    t.not(pid, run.child.pid, 'the service process runs under the launcher')
    process.kill(pid, signal)
    t.equal((await run.exited).code, code, signal)
    t.match(run.stderr(), line)
  }
})

t.test('Ctrl-D on an interactive terminal halts a local run with exit 130', async (t) => {
  // util-linux `script` gives the service a real pseudo-terminal; -e returns the child's exit code.
  const { spawn } = await import('node:child_process')
  const { SERVICE_BIN } = await import('../helpers/service-process.js')
  const child = spawn('script', ['-qfec', `${process.execPath} ${SERVICE_BIN} proxy`, '/dev/null'], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...OFFLINE, SERVICE_SERVER__PORT: '0', SERVICE_RUNTIME__CORES: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); if (out.includes('proxy listening')) resolve() })
    void exited.then(() => reject(new Error(`exited before listening: ${out}`)))
  })
  child.stdin.write('\x04')
  t.equal(await exited, 130)
})

t.test('the service process starts with the mmap threshold held fixed; an operator\'s own threshold wins', async (t) => {
  // What the service process itself sees: /proc/<pid>/environ is no witness, glibc rewrites its own copy of the variable in place.
  const dir = await mkdtemp(join(tmpdir(), 'tunables-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const preload = join(dir, 'report.cjs')
  await writeFile(preload, `if (process.argv[1]?.endsWith('run-role.js')) require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'seen'))}, String(process.env.GLIBC_TUNABLES))\n`)
  const seenBy = async (extra: Record<string, string>): Promise<string> => {
    const run = runService(t, ['proxy'], { ...OFFLINE, SERVICE_SERVER__PORT: '0', NODE_OPTIONS: `--require ${preload}`, ...extra })
    await run.waitForOutput('proxy listening')
    run.child.kill('SIGTERM')
    await run.exited
    return readFile(join(dir, 'seen'), 'utf8')
  }
  t.equal(await seenBy({}), 'glibc.malloc.mmap_threshold=131072')
  t.equal(await seenBy({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }), 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072')
  t.equal(await seenBy({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' }), 'glibc.malloc.mmap_threshold=65536')
})

t.test('a signal to the launcher\'s whole process group drains once: exit 0, no second signal (kill -TERM -<pgid>, timeout, systemd)', async (t) => {
  const run = runService(t, ['proxy'], { ...OFFLINE, SERVICE_SERVER__PORT: '0', SERVICE_RUNTIME__CORES: '1' })
  await run.waitForOutput('proxy listening', 120_000)
  // runService starts the launcher in a group of its own whose id is its pid.
  process.kill(-(run.child.pid as number), 'SIGTERM')
  t.same(await run.exited, { code: 0, signal: null })
  t.match(run.stdout(), /drain completed/)
  t.notMatch(run.stdout(), /second signal/)
  t.equal(run.stdout().split('\n').filter((l) => l.includes('drain started')).length, 1, 'one drain, started once')
})

t.test('SIGHUP is passed on and does not stop a role; a role without a policy document says so', async (t) => {
  const run = runService(t, ['proxy'], { ...OFFLINE, SERVICE_SERVER__PORT: '0', SERVICE_RUNTIME__CORES: '1' })
  await run.waitForOutput('proxy listening', 120_000)
  process.kill(-(run.child.pid as number), 'SIGHUP')
  await run.waitForOutput('policy reload: this role reads no policy document', 60_000)
  t.equal(run.child.exitCode, null, 'still running')
  run.child.kill('SIGTERM')
  t.same(await run.exited, { code: 0, signal: null })
})
