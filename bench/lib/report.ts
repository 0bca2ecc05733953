/**
 * Prints one table per scenario: each metric's project figure, every
 * baseline's figure from the same run, and the ratio project ÷ baseline.
 * An unavailable baseline prints its reason in place of a figure.
 */
import type { Measurement, Row, ScenarioResult } from './scenario.js'

const MIB = 1024 * 1024

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  const magnitude = Math.abs(value)
  if (magnitude >= 100) return value.toFixed(0)
  if (magnitude >= 10) return value.toFixed(1)
  return value.toFixed(2)
}

function formatMeasurement(m: Measurement): string {
  return `${formatNumber(m.value)} ${m.unit}`
}

function ratio(project: Measurement, baseline: Measurement): string {
  if (baseline.value === 0) return 'n/a'
  const r = project.value / baseline.value
  // Read as "how much better": above 1 is better for either direction.
  const goodness = project.better === 'higher' ? r : 1 / r
  return `${r.toFixed(2)}x (${goodness >= 1 ? 'better' : 'worse'})`
}

function baselineNames(rows: readonly Row[]): string[] {
  const names: string[] = []
  for (const row of rows) for (const name of Object.keys(row.baselines)) if (!names.includes(name)) names.push(name)
  return names
}

export function formatScenario(name: string, result: ScenarioResult): string {
  const baselines = baselineNames(result.rows)
  const header = ['metric', 'project', ...baselines.flatMap((b) => [b, `project/${b}`])]
  const table: string[][] = [header]
  const reasons = new Map<string, string>()
  for (const row of result.rows) {
    const cells = [`${row.metric} (${row.project.better} is better)`, formatMeasurement(row.project)]
    for (const b of baselines) {
      const m = row.baselines[b]
      if (m === undefined) cells.push('-', '-')
      else if (typeof m === 'string') {
        reasons.set(b, m)
        cells.push('unavailable', '-')
      } else cells.push(formatMeasurement(m), ratio(row.project, m))
    }
    table.push(cells)
  }
  const widths = header.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ').trimEnd()
  const out = [`== ${name}: ${result.title}`, line(header), widths.map((w) => '-'.repeat(w)).join('-|-')]
  for (const row of table.slice(1)) out.push(line(row))
  if (result.peakRssBytes !== undefined) out.push(`peak RSS of the project's process: ${formatNumber(result.peakRssBytes / MIB)} MiB`)
  for (const [b, reason] of reasons) out.push(`baseline ${b} unavailable: ${reason}`)
  for (const note of result.notes ?? []) out.push(`note: ${note}`)
  return out.join('\n')
}
