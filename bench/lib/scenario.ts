/**
 * The contract of one benchmark scenario (`npm run bench` runs them all).
 * Every figure is printed beside each baseline measured in the same run and
 * the ratio between them; a baseline that cannot run is reported as
 * unavailable with its reason, never silently skipped.
 */
export interface Measurement {
  /** e.g. 'MB/s', 'req/s', 'ms', 'MiB'. */
  readonly unit: string
  /** Which direction is better, for the ratio column's reading. */
  readonly better: 'higher' | 'lower'
  readonly value: number
}

export interface Row {
  /** What was measured, e.g. 'throughput 1 MiB x16'. */
  readonly metric: string
  /** The project's figure. */
  readonly project: Measurement
  /** Baselines by name ('nginx', 'verdaccio', 'JSON.parse+stringify'); a string says why it is unavailable. */
  readonly baselines: Readonly<Record<string, Measurement | string>>
  /** The figure this row must reach, read against one baseline (the summary table says met or not). */
  readonly goal?: Goal
}

/**
 * A goal as "at least `goodness` times as good as `baseline`": goodness is the
 * ratio read in the better direction (project ÷ baseline when higher is
 * better, baseline ÷ project when lower is), so 0.9 against nginx throughput
 * is "at least 0.9x nginx" and 1/1.2 against nginx p99 is "at most 1.2x its
 * p99".
 */
export interface Goal {
  readonly baseline: string
  readonly goodness: number
  /** How the goal reads, e.g. '>= 0.9x nginx'. */
  readonly text: string
}

export interface ScenarioResult {
  readonly title: string
  readonly rows: readonly Row[]
  /** Peak RSS of the project's process over the scenario, bytes. */
  readonly peakRssBytes?: number
  readonly notes?: readonly string[]
}

export interface Scenario {
  readonly name: string
  run(): Promise<ScenarioResult>
}
