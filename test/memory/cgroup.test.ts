import t, { type Test } from 'tap'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { memoryInUseReader, parseCpuMax, parseMemoryMax, readCgroupLimits } from '../../engine/memory/cgroup.js'

function fakeCgroup(t: Test, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cgroup-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

t.test('v2 with memory and CPU limits', async (t) => {
  const path = fakeCgroup(t, { 'cgroup.controllers': 'cpu memory\n', 'memory.max': '1073741824\n', 'cpu.max': '200000 100000\n' })
  t.same(await readCgroupLimits(path), { layout: 'v2', path, memoryLimitBytes: 1073741824, cpuCores: 2, cpuLimit: 2 })
})

t.test('max means unlimited', async (t) => {
  const path = fakeCgroup(t, { 'cgroup.controllers': 'cpu memory\n', 'memory.max': 'max\n', 'cpu.max': 'max 100000\n' })
  t.same(await readCgroupLimits(path), { layout: 'v2', path })
})

t.test('a fractional CPU limit is floored, never below one core', async (t) => {
  const path = fakeCgroup(t, { 'cgroup.controllers': 'cpu\n', 'cpu.max': '250000 100000\n' })
  t.same(await readCgroupLimits(path), { layout: 'v2', path, cpuCores: 2, cpuLimit: 2.5 })
  t.same(parseCpuMax('50000 100000'), { cores: 1, limit: 0.5 })
})

t.test('any other layout boots as unlimited', async (t) => {
  // cgroup v1 style: no cgroup.controllers, even if files look like limits.
  const path = fakeCgroup(t, { 'memory.limit_in_bytes': '1073741824\n', 'memory.max': '1073741824\n' })
  t.same(await readCgroupLimits(path), { layout: 'other', path })
  t.same(await readCgroupLimits(join(path, 'missing')), { layout: 'other', path: join(path, 'missing') })
})

t.test('v2 without the files reads as unlimited', async (t) => {
  const path = fakeCgroup(t, { 'cgroup.controllers': '' })
  t.same(await readCgroupLimits(path), { layout: 'v2', path })
})

t.test('malformed values read as unlimited', async (t) => {
  t.equal(parseMemoryMax('12k'), undefined)
  t.equal(parseMemoryMax(''), undefined)
  t.equal(parseMemoryMax('0'), undefined)
  t.equal(parseCpuMax('abc 100000'), undefined)
  t.equal(parseCpuMax('100000 0'), undefined)
  t.same(parseCpuMax('400000'), { cores: 4, limit: 4 }, 'period defaults to 100000')
})

t.test('memory in use is memory.current less inactive file pages', async (t) => {
  const path = fakeCgroup(t, {
    'memory.current': '500000000\n',
    'memory.stat': 'anon 300000000\nfile 200000000\nactive_file 50000000\ninactive_file 150000000\n',
  })
  t.equal(memoryInUseReader(path)(), 350000000)
  const noStat = fakeCgroup(t, { 'memory.current': '1000\n' })
  t.equal(memoryInUseReader(noStat)(), 1000)
  t.equal(memoryInUseReader(join(noStat, 'missing'))(), undefined)
})
