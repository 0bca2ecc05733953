/** One reason the configuration is refused; every one is reported at once (SPEC.md 7.2). */
export interface ConfigProblem {
  /** Dotted path, e.g. `mounts.js.rules.0.appliesTo`. */
  readonly path: string
  readonly message: string
  /** `document <file>`, `environment <VARIABLE>` or `environment` for derived checks. */
  readonly source: string
}

export function formatProblems(problems: readonly ConfigProblem[]): string {
  const lines = problems.map((p) => `  - ${p.path || '(root)'}: ${p.message} (${p.source})`)
  return `configuration refused, ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}
