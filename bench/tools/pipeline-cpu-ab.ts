/**
 * Before/after for a change to the packument pipeline, on a machine shared
 * with other work: one process imports the built pipeline of two checkouts,
 * runs each alternately on the typescript packument (full and abbreviated
 * form, nine versions in ten admitted), and prints the least CPU time
 * (user + system) and the least wall time of each side with their ratio.
 * CPU time is the figure to read under load: waiting for a core does not
 * count in it, and alternating puts any change of load on both sides alike.
 *
 * `npm run build && node dist/bench/tools/pipeline-cpu-ab.js BEFORE_DIR [AFTER_DIR] [rounds]`
 * (each folder a built checkout, such as a `git worktree add` of an older
 * commit with `npm run build` run in it; AFTER_DIR defaults to this
 * checkout; not part of `npm run bench`).
 *
 * To price rules rather than code, `BEFORE_RULES` and `AFTER_RULES` (a
 * mount's `rules:` list as JSON) gate a side with its own checkout's
 * evaluator over those rules instead of the nine-in-ten gate, its clock (as
 * a worker's gate has it, workers/policy-gate.ts) at
 * `BENCH_NOW` (RFC 3339; default one day after the fixture's last publish,
 * so its newest versions are young). The same folder may be both sides:
 * `AFTER_RULES='[{"rule":"DenyIfDependencyAdded","seconds":604800},
 * {"rule":"AllowIfOlderThan","seconds":604800}]'
 * BEFORE_RULES='[{"rule":"AllowIfOlderThan","seconds":604800}]'
 * node dist/bench/tools/pipeline-cpu-ab.js . .`
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gunzipSync } from 'node:zlib'
import type { PackumentOutcome, PackumentRequest } from '../../engine/packument/pipeline.js'
import { repoRoot } from '../peers/repo-root.js'
import { sharedDataPath } from '../peers/shared-data.js'
import type { Evaluator, VersionFacts } from '../../engine/policy/decision.js'
import type { RuleConfig } from '../../engine/policy/rule-schema.js'
import { nineInTenGate } from '../fixtures/packument/nine-in-ten-gate.js'

type Pipeline = (request: PackumentRequest, priv: Iterable<Uint8Array> | undefined, pub: Iterable<Uint8Array> | undefined) => PackumentOutcome
type CreateEvaluator = (rules: readonly RuleConfig[], context: { ecosystem: 'js'; database: undefined; clock: { now: () => number }; maxAgeSeconds: number }) => Evaluator

const WARM_UP = 3
const CHUNK = 65536

async function pipelineOf(folder: string): Promise<Pipeline> {
  const url = pathToFileURL(resolve(folder, 'dist', 'engine', 'packument', 'pipeline.js')).href
  return (await import(url) as { runPackumentPipeline: Pipeline }).runPackumentPipeline
}

const [beforeDir, afterDir = repoRoot(), roundsArg = '25'] = process.argv.slice(2)
if (beforeDir === undefined) {
  console.error('usage: node dist/bench/tools/pipeline-cpu-ab.js BEFORE_DIR [AFTER_DIR] [rounds]')
  process.exit(2)
}
const rounds = Number(roundsArg)
const bytes = gunzipSync(readFileSync(sharedDataPath('npm-packuments', 'raw', 'typescript.json.gz')))
const chunks: Uint8Array[] = []
for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.subarray(i, i + CHUNK))
const sides = { before: await pipelineOf(beforeDir), after: await pipelineOf(afterDir) }

/** The newest publish time of the fixture, ms. */
function lastPublished(): number {
  const time = (JSON.parse(bytes.toString('utf8')) as { time?: Record<string, string> }).time ?? {}
  return Math.max(...Object.entries(time).filter(([key]) => key !== 'modified' && key !== 'created').map(([, at]) => Date.parse(at)))
}

/** A side's gate: the nine-in-ten gate, or its own checkout's evaluator over the rules its variable names. */
async function gateOf(folder: string, rulesJson: string | undefined): Promise<PackumentRequest['decide']> {
  if (rulesJson === undefined) return nineInTenGate
  const url = pathToFileURL(resolve(folder, 'dist', 'engine', 'policy', 'evaluator.js')).href
  const { createEvaluator } = await import(url) as { createEvaluator: CreateEvaluator }
  const now = process.env['BENCH_NOW'] === undefined ? lastPublished() + 86_400_000 : Date.parse(process.env['BENCH_NOW'])
  const evaluator = createEvaluator(JSON.parse(rulesJson) as RuleConfig[], { ecosystem: 'js', database: undefined, clock: { now: () => now }, maxAgeSeconds: 86_400 })
  // With the clock a worker's gate has (workers/policy-gate.ts), so the merge knows which versions are young.
  return Object.assign((facts: VersionFacts) => evaluator.evaluate(facts, 'admission'), { needs: evaluator.needs, clock: { now, ageSteps: evaluator.ageSteps } })
}
const gates = { before: await gateOf(beforeDir, process.env['BEFORE_RULES']), after: await gateOf(afterDir, process.env['AFTER_RULES']) }

for (const abbreviated of [false, true]) {
  const best = { before: { cpu: Infinity, wall: Infinity }, after: { cpu: Infinity, wall: Infinity } }
  for (let k = 0; k < rounds + WARM_UP; k++) {
    for (const side of k % 2 === 0 ? ['after', 'before'] as const : ['before', 'after'] as const) {
      const request: PackumentRequest = { packageName: 'typescript', baseUrl: 'http://127.0.0.1:1', abbreviated, decide: gates[side] }
      const cpu0 = process.cpuUsage()
      const wall0 = process.hrtime.bigint()
      const outcome = sides[side](request, undefined, chunks)
      const wall = Number(process.hrtime.bigint() - wall0) / 1e6
      const cpu = process.cpuUsage(cpu0)
      if (outcome.body === undefined) throw new Error(`${side}: the pipeline rendered nothing`)
      if (k < WARM_UP) continue
      best[side].cpu = Math.min(best[side].cpu, (cpu.user + cpu.system) / 1000)
      best[side].wall = Math.min(best[side].wall, wall)
    }
  }
  const { before, after } = best
  console.log(`typescript ${abbreviated ? 'abbreviated' : 'full'}: before CPU ${before.cpu.toFixed(1)} ms, wall ${before.wall.toFixed(1)} ms; after CPU ${after.cpu.toFixed(1)} ms, wall ${after.wall.toFixed(1)} ms; after/before CPU ${(after.cpu / before.cpu).toFixed(3)}, wall ${(after.wall / before.wall).toFixed(3)} (best of ${rounds})`)
}
