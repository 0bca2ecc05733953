/**
 * Prints one table per scenario: each metric's project figure, every
 * baseline's figure from the same run, and the ratio project ÷ baseline.
 * An unavailable baseline prints its reason in place of a figure.
 */
import type { Goal, Measurement, Row, ScenarioResult } from './scenario.js'

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

/** How much better the project is than the baseline, in the better direction (above 1 is better); undefined when it cannot be read. */
export function goodnessOf(project: Measurement, baseline: Measurement): number | undefined {
  if (baseline.value === 0 || project.value === 0) return undefined
  const r = project.value / baseline.value
  return project.better === 'higher' ? r : 1 / r
}

function ratio(project: Measurement, baseline: Measurement): string {
  if (baseline.value === 0) return 'n/a'
  const r = project.value / baseline.value
  const goodness = goodnessOf(project, baseline) ?? 0
  return `${r.toFixed(2)}x (${goodness >= 1 ? 'better' : 'worse'})`
}

/** One line of the closing summary: a row with a goal. */
export interface SummaryLine {
  readonly scenario: string
  readonly metric: string
  readonly project: Measurement
  readonly baseline: string
  readonly baselineFigure: Measurement | string
  readonly ratio: number | undefined
  readonly goal: Goal
  readonly met: boolean | undefined
}

export function summaryLines(scenario: string, result: ScenarioResult): SummaryLine[] {
  return result.rows.flatMap((row) => {
    if (row.goal === undefined) return []
    const base = row.baselines[row.goal.baseline] ?? 'not measured'
    const goodness = typeof base === 'string' ? undefined : goodnessOf(row.project, base)
    return [{
      scenario, metric: row.metric, project: row.project, baseline: row.goal.baseline, baselineFigure: base,
      ratio: typeof base === 'string' || base.value === 0 ? undefined : row.project.value / base.value,
      goal: row.goal, met: goodness === undefined ? undefined : goodness >= row.goal.goodness,
    }]
  })
}

/** The table `npm run bench` prints last: figure, baseline, ratio, goal, met or not. */
export function formatSummary(lines: readonly SummaryLine[]): string {
  if (lines.length === 0) return '== summary: no scenario run states a goal'
  const header = ['scenario', 'metric', 'project', 'baseline', 'ratio', 'goal', 'met']
  const table = lines.map((l) => [
    l.scenario, l.metric, formatMeasurement(l.project),
    typeof l.baselineFigure === 'string' ? `${l.baseline}: unavailable` : `${l.baseline}: ${formatMeasurement(l.baselineFigure)}`,
    l.ratio === undefined ? 'n/a' : `${l.ratio.toFixed(2)}x`, l.goal.text, l.met === undefined ? 'unknown' : l.met ? 'met' : 'NOT MET',
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ').trimEnd()
  return ['== summary', line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...table.map(line)].join('\n')
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
