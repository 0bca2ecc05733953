/**
 * `service check-config --json` predicts the memory plan (SPEC.md 8.2) from
 * the cgroup it reads: the table of SPEC.md 8.2 reproduced exactly for fake
 * cgroup v2 folders, plus the unlimited and fractional-CPU cases. Runs the
 * command's code in process (the child-process path is in cli.test.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t, { type Test } from 'tap'
import { loadConfig } from '../../engine/config/load.js'
import { runCheckConfig } from '../../server/roles/check-config.js'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

interface Figure { value: number | null; origin: string }
interface PlanJson {
  cores: Figure & { fixed: boolean }
  memoryLimitBytes: Figure
  allocationAreaBytes: Figure
  nurseryBytes: Figure
  heapCeilingBytes: Figure
  liveTargetBytes: Figure
  transientBudget: { startingBudgetBytes: Figure }
  warnings: string[]
}

async function checkConfig(t: Test, cgroup: Record<string, string> | undefined, env: Record<string, string> = {}): Promise<PlanJson> {
  const dir = await mkdtemp(join(tmpdir(), 'cgroup-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  if (cgroup !== undefined) {
    await mkdir(dir, { recursive: true })
    for (const [file, text] of Object.entries({ 'cgroup.controllers': 'cpu memory\n', ...cgroup })) await writeFile(join(dir, file), text)
  }
  const loaded = loadConfig({
    env: { SERVICE_RUNTIME__CGROUP_PATH: dir, SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/', ...env },
    npmRegistry: () => undefined,
  })
  const out = new PassThrough()
  let text = ''
  out.on('data', (c) => { text += String(c) })
  const code = await runCheckConfig(loaded, { json: true, out, err: new PassThrough() })
  t.equal(code, 0)
  return (JSON.parse(text) as { plan: PlanJson }).plan
}

const table = [
  { cpu: 2, mem: 1, area: 64, nursery: 128, heap: 832, live: 176 },
  { cpu: 4, mem: 1, area: 32, nursery: 128, heap: 864, live: 184 },
  { cpu: 4, mem: 2, area: 64, nursery: 256, heap: 1728, live: 368 },
  { cpu: 8, mem: 4, area: 64, nursery: 512, heap: 3520, live: 752 },
]

for (const row of table) {
  t.test(`${row.cpu} CPU / ${row.mem} GiB`, async (t) => {
    const plan = await checkConfig(t, { 'memory.max': `${row.mem * GiB}\n`, 'cpu.max': `${row.cpu * 100000} 100000\n` })
    t.same(plan.cores, { value: row.cpu, origin: 'cgroup', fixed: true })
    t.same(plan.memoryLimitBytes, { value: row.mem * GiB, origin: 'cgroup' })
    t.equal(plan.allocationAreaBytes.value, row.area * MiB)
    t.equal(plan.nurseryBytes.value, row.nursery * MiB)
    t.equal(plan.heapCeilingBytes.value, row.heap * MiB)
    t.equal(plan.liveTargetBytes.value, row.live * MiB)
    t.same(plan.warnings, [], 'no warning when a CPU limit fixes the cores')
  })
}

t.test('no cgroup v2 layout: unlimited, cores from the ceiling, with the warning and its remedy', async (t) => {
  const plan = await checkConfig(t, undefined)
  t.same(plan.memoryLimitBytes, { value: null, origin: 'default' })
  t.equal(plan.heapCeilingBytes.value, null)
  t.equal(plan.transientBudget.startingBudgetBytes.value, GiB, '1 GiB budget without a heap ceiling')
  t.same(plan.cores, { value: 8, origin: 'default', fixed: false })
  t.match(plan.warnings.join('\n'), /SERVICE_RUNTIME__CORES/)
})

t.test('a fractional CPU limit is floored', async (t) => {
  const plan = await checkConfig(t, { 'memory.max': `${2 * GiB}\n`, 'cpu.max': '250000 100000\n' })
  t.same(plan.cores, { value: 2, origin: 'cgroup', fixed: true })
})

t.test('pins win over the cgroup and are never clamped', async (t) => {
  const plan = await checkConfig(t, { 'memory.max': `${GiB}\n`, 'cpu.max': '200000 100000\n' }, { SERVICE_RUNTIME__CORES: '6', SERVICE_RUNTIME__MAX_HEAP_BYTES: String(700 * MiB) })
  t.same(plan.cores, { value: 6, origin: 'pin', fixed: true })
  t.same(plan.heapCeilingBytes, { value: 700 * MiB, origin: 'pin' })
})

t.test('the forward proxy as boot builds it: echoed without its credential; a variable boot refuses is refused', async (t) => {
  const run = async (env: Record<string, string>): Promise<{ code: number, json: Record<string, unknown> }> => {
    const loaded = loadConfig({ env: { SERVICE_MOUNTS__JS__UPSTREAMS__PUBLIC__URL: 'https://upstream.invalid/', SERVICE_EGRESS__PROXY__CREDENTIAL: 'fleet:s3cret' }, npmRegistry: () => undefined })
    const out = new PassThrough()
    let text = ''
    out.on('data', (c) => { text += String(c) })
    const code = await runCheckConfig(loaded, { json: true, out, err: new PassThrough(), env })
    return { code, json: JSON.parse(text) as Record<string, unknown> }
  }
  const fine = await run({ HTTPS_PROXY: 'http://proxy.internal:3128', NO_PROXY: 'registry.internal' })
  t.equal(fine.code, 0)
  t.same(fine.json['forwardProxy'], { https: 'http://proxy.internal:3128', noProxy: ['registry.internal'] })
  t.equal(JSON.stringify(fine.json).includes('s3cret'), false, 'the credential is redacted')
  t.equal((await run({})).json['forwardProxy'], 'direct')
  const refused = await run({ HTTPS_PROXY: 'https://proxy.internal:3128' })
  t.not(refused.code, 0)
  t.match(refused.json, { ok: false, problems: [{ path: 'egress.proxy', message: /environment HTTPS_PROXY: the forward proxy must be an http:\/\/ URL/ }] })
})
