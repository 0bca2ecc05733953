/**
 * `npm run bench [-- NAME...]`: runs every module in bench/scenarios whose
 * default export is a Scenario (bench/lib/scenario.ts), one after another so
 * they do not share the CPU, and prints one table per scenario. Arguments
 * keep only the scenarios whose name contains one of them. A scenario that
 * throws is reported and the run goes on; the exit status is then 1. The run
 * ends with one summary table of every row that states a goal (figure,
 * baseline, ratio, goal, met or not); `--json[=FILE]` also writes every
 * scenario's rows and the summary as JSON (default bench-results.json), for
 * comparison between commits.
 */
import { execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { readdir } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { defaultLoadTool } from './lib/load.js'
import { formatScenario, formatSummary, summaryLines, type SummaryLine } from './lib/report.js'
import type { Scenario, ScenarioResult } from './lib/scenario.js'

function isScenario(value: unknown): value is Scenario {
  return typeof value === 'object' && value !== null
    && typeof (value as Scenario).name === 'string'
    && typeof (value as Scenario).run === 'function'
}

async function discover(folder: string): Promise<Scenario[]> {
  const files = (await readdir(folder)).filter((f) => f.endsWith('.js')).sort()
  const scenarios: Scenario[] = []
  for (const file of files) {
    const module = await import(pathToFileURL(join(folder, file)).href) as { default?: unknown }
    if (isScenario(module.default)) scenarios.push(module.default)
    else console.warn(`bench: ${file} has no Scenario as its default export; skipped`)
  }
  return scenarios
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== '')
  const jsonFlag = args.find((a) => a === '--json' || a.startsWith('--json='))
  const jsonFile = jsonFlag === undefined ? undefined : (jsonFlag.split('=')[1] ?? 'bench-results.json')
  const filters = args.filter((a) => !a.startsWith('--'))
  const folder = join(dirname(fileURLToPath(import.meta.url)), 'scenarios')
  const all = await discover(folder)
  const chosen = filters.length === 0 ? all : all.filter((s) => filters.some((f) => s.name.includes(f)))
  if (chosen.length === 0) {
    console.error(`bench: no scenario matches ${filters.join(', ') || '(any)'}; known: ${all.map((s) => s.name).join(', ') || 'none'}`)
    return 1
  }
  console.log(`bench: ${chosen.length} scenario(s) on ${availableParallelism()} cores, Node ${process.version}, load by ${await defaultLoadTool()}`)
  let failed = 0
  const summary: SummaryLine[] = []
  const results: { name: string, seconds: number, result?: ScenarioResult, failure?: string }[] = []
  for (const scenario of chosen) {
    const started = Date.now()
    try {
      const result = await scenario.run()
      const seconds = (Date.now() - started) / 1000
      console.log(`\n${formatScenario(scenario.name, result)}\n(${seconds.toFixed(0)} s)`)
      summary.push(...summaryLines(scenario.name, result))
      results.push({ name: scenario.name, seconds, result })
    } catch (error) {
      failed += 1
      const failure = error instanceof Error ? error.stack ?? error.message : String(error)
      console.error(`\n== ${scenario.name}: FAILED\n${failure}`)
      results.push({ name: scenario.name, seconds: (Date.now() - started) / 1000, failure })
    }
  }
  console.log(`\n${formatSummary(summary)}`)
  if (jsonFile !== undefined) {
    const document = { commit: commitOf(), node: process.version, cores: availableParallelism(), at: new Date().toISOString(), scenarios: results, summary }
    await writeFile(jsonFile, `${JSON.stringify(document, null, 2)}\n`)
    console.log(`bench: results written to ${jsonFile}`)
  }
  return failed === 0 ? 0 : 1
}

function commitOf(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return undefined
  }
}

process.exitCode = await main()
