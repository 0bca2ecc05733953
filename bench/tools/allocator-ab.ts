/**
 * What the launcher's fixed mmap threshold (engine/memory/malloc-tunables.ts)
 * costs the packument render (issue 33): the built pipeline renders the
 * typescript packument (nine versions in ten admitted) in child processes
 * that differ only in their `GLIBC_TUNABLES`, started in alternating order,
 * and each side's figures are printed: the least and the median CPU time of
 * one render, the CPU time per render over the measured renders (user and
 * system, the least process and the median one) and the minor page faults
 * per render. Glibc's tunables are read once at process start, so the sides
 * cannot share a process as pipeline-cpu-ab.ts's do.
 *
 * Sides: `glibc default` (no threshold tunable: glibc's dynamic threshold),
 * `launcher` (what the launcher passes, the threshold held at 128 KiB), and,
 * when `BENCH_ALLOC_TUNABLES` names more tunables (for example
 * `glibc.malloc.hugetlb=1`), `launcher + <them>`.
 *
 * CPU time and fault counts, not wall time, are the figures to read on a
 * machine shared with other work: waiting for a core counts in neither.
 *
 * `npm run build && node dist/bench/tools/allocator-ab.js [form] [rounds] [renders]`
 * (form `full` or `abbreviated`, default full; 6 rounds of 20 measured
 * renders after 3 unmeasured ones; not part of `npm run bench`).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { mallocTunables } from '../../engine/memory/malloc-tunables.js'
import { runPackumentPipeline, type PackumentRequest } from '../../engine/packument/pipeline.js'
import { nineInTenGate } from '../fixtures/packument/nine-in-ten-gate.js'
import { median } from '../lib/round-figures.js'
import { sharedDataPath } from '../peers/shared-data.js'

const WARM_UP = 3
const CHUNK = 65536

/** One process's figures, as the child prints them (JSON on its last line). */
interface ChildFigures {
  /** CPU time of each measured render, ms. */
  readonly renders: number[]
  /** Over the measured renders: CPU time, µs, and minor page faults. */
  readonly userMicros: number
  readonly systemMicros: number
  readonly minorFaults: number
}

function child(form: string, renders: number): void {
  const bytes = gunzipSync(readFileSync(sharedDataPath('npm-packuments', 'raw', 'typescript.json.gz')))
  const chunks: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.subarray(i, i + CHUNK))
  const request: PackumentRequest = { packageName: 'typescript', baseUrl: 'http://127.0.0.1:1', abbreviated: form === 'abbreviated', decide: nineInTenGate }
  const times: number[] = []
  let start = process.resourceUsage()
  for (let k = 0; k < WARM_UP + renders; k++) {
    if (k === WARM_UP) start = process.resourceUsage()
    const cpu = process.cpuUsage()
    const outcome = runPackumentPipeline(request, undefined, chunks)
    const spent = process.cpuUsage(cpu)
    if (outcome.body === undefined) throw new Error('the pipeline rendered nothing')
    if (k >= WARM_UP) times.push((spent.user + spent.system) / 1000)
  }
  const end = process.resourceUsage()
  const figures: ChildFigures = {
    renders: times,
    userMicros: end.userCPUTime - start.userCPUTime,
    systemMicros: end.systemCPUTime - start.systemCPUTime,
    minorFaults: end.minorPageFault - start.minorPageFault,
  }
  console.log(JSON.stringify(figures))
}

/** The environment of a side: the inherited one with its own `GLIBC_TUNABLES` (none: glibc's defaults). */
function environment(tunables: string | undefined): NodeJS.ProcessEnv {
  const env = { ...process.env }
  delete env['GLIBC_TUNABLES']
  delete env['MALLOC_MMAP_THRESHOLD_']
  if (tunables !== undefined) env['GLIBC_TUNABLES'] = tunables
  return env
}

async function runChild(tunables: string | undefined, form: string, renders: number): Promise<ChildFigures> {
  const script = fileURLToPath(import.meta.url)
  const proc = spawn(process.execPath, [script, '--child', form, String(renders)], { env: environment(tunables), stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  proc.stdout.setEncoding('utf8').on('data', (text: string) => { out += text })
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve))
  if (code !== 0) throw new Error(`a render process exited with ${code}`)
  return JSON.parse(out.trim().split('\n').pop() ?? '') as ChildFigures
}

async function parent(form: string, rounds: number, renders: number): Promise<void> {
  const extra = process.env['BENCH_ALLOC_TUNABLES']
  const sides: [string, string | undefined][] = [['glibc default', undefined], ['launcher', mallocTunables(undefined)]]
  if (extra !== undefined && extra !== '') sides.push([`launcher + ${extra}`, mallocTunables(extra)])
  const results = new Map<string, ChildFigures[]>(sides.map(([name]) => [name, []]))
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse()
    for (const [name, tunables] of order) results.get(name)!.push(await runChild(tunables, form, renders))
  }
  console.log(`typescript ${form}, ${rounds} processes per side of ${renders} measured renders each (GLIBC_TUNABLES per side; CPU time, not wall time):`)
  for (const [name, tunables] of sides) {
    const runs = results.get(name)!
    const all = runs.flatMap((r) => r.renders)
    const perRender = runs.map((r) => (r.userMicros + r.systemMicros) / 1000 / renders)
    const systemShare = runs.reduce((s, r) => s + r.systemMicros, 0) / runs.reduce((s, r) => s + r.userMicros + r.systemMicros, 0)
    const faults = median(runs.map((r) => r.minorFaults / renders))
    console.log(`  ${name} (${tunables ?? 'unset'}): one render least ${Math.min(...all).toFixed(1)} ms, median ${median(all).toFixed(1)} ms; CPU per render least ${Math.min(...perRender).toFixed(1)} ms, median ${median(perRender).toFixed(1)} ms, system ${(100 * systemShare).toFixed(0)}%; minor faults per render ${faults.toFixed(0)}`)
  }
}

const args = process.argv.slice(2)
if (args[0] === '--child') child(args[1] ?? 'full', Number(args[2] ?? 20))
else {
  const [form = 'full', rounds = '6', renders = '20'] = args
  if (form !== 'full' && form !== 'abbreviated') {
    console.error('usage: node dist/bench/tools/allocator-ab.js [full|abbreviated] [rounds] [renders]')
    process.exit(2)
  }
  await parent(form, Number(rounds), Number(renders))
}
