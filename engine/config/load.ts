/**
 * Loads the configuration once at boot (SPEC.md 2.11, 7.2): read the
 * document and the environment (read-sources.ts), check them (checks.ts),
 * apply the defaults, find the js mount's public upstream in the npm client
 * when none is set (npm-client-registry.ts), check what needs the defaults,
 * and resolve the frozen Config (resolve-config.ts). Every problem of a pass
 * is collected, so the boot report names them all at once.
 */
import type { Config } from './config.js'
import { crossKeyProblems, documentProblems } from './checks.js'
import { npmClientRegistry, publicUpstreamUrls } from './npm-client-registry.js'
import type { ConfigProblem } from './problems.js'
import { readSources } from './read-sources.js'
import { defaultDocument, resolveConfig } from './resolve-config.js'

export interface LoadOptions {
  /** `--config FILE` from the command line; wins over `SERVICE_CONFIG`. */
  readonly configPath?: string | undefined
  readonly env: NodeJS.ProcessEnv
  /**
   * The local npm client's configured registry, used for the js mount's
   * public upstream when none is configured (DESIGN.md: no public registry
   * host is written into the code). Injected so tests never run npm.
   */
  readonly npmRegistry?: () => string | undefined
}

export type LoadResult =
  | { readonly ok: true; readonly config: Config }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] }

export function loadConfig(options: LoadOptions): LoadResult {
  const sources = readSources(options.configPath, options.env)
  const problems = [...sources.problems, ...documentProblems(sources.merged, sources.sourceOf)]
  if (problems.length > 0) return { ok: false, problems }

  const document = defaultDocument(sources.merged)
  const publicUrls = publicUpstreamUrls(document, options.npmRegistry ?? npmClientRegistry)
  problems.push(...crossKeyProblems(document, publicUrls, sources.sourceOf))
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, config: resolveConfig(document, publicUrls, sources.documentPath) }
}
