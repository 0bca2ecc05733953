/**
 * `npm run bench [-- NAME...]`: runs every module in bench/scenarios whose
 * default export is a Scenario (bench/lib/scenario.ts), one after another so
 * they do not share the CPU, and prints one table per scenario. Arguments
 * keep only the scenarios whose name contains one of them. A scenario that
 * throws is reported and the run goes on; the exit status is then 1.
 */
import { readdir } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { defaultLoadTool } from './lib/load.js'
import { formatScenario } from './lib/report.js'
import type { Scenario } from './lib/scenario.js'

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
  const filters = process.argv.slice(2).filter((a) => a !== '')
  const folder = join(dirname(fileURLToPath(import.meta.url)), 'scenarios')
  const all = await discover(folder)
  const chosen = filters.length === 0 ? all : all.filter((s) => filters.some((f) => s.name.includes(f)))
  if (chosen.length === 0) {
    console.error(`bench: no scenario matches ${filters.join(', ') || '(any)'}; known: ${all.map((s) => s.name).join(', ') || 'none'}`)
    return 1
  }
  console.log(`bench: ${chosen.length} scenario(s) on ${availableParallelism()} cores, Node ${process.version}, load by ${await defaultLoadTool()}`)
  let failed = 0
  for (const scenario of chosen) {
    const started = Date.now()
    try {
      const result = await scenario.run()
      console.log(`\n${formatScenario(scenario.name, result)}\n(${((Date.now() - started) / 1000).toFixed(0)} s)`)
    } catch (error) {
      failed += 1
      console.error(`\n== ${scenario.name}: FAILED\n${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    }
  }
  return failed === 0 ? 0 : 1
}

process.exitCode = await main()
