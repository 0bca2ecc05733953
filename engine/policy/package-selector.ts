/**
 * `packages`: which packages a rule speaks about (issue 17 item 6). A list
 * of patterns; a rule whose list matches no pattern of the evaluated package
 * abstains. Unset: every package.
 *
 * Grammar, per pattern (js):
 * - an exact name: `left-pad`, `@acme/tool`;
 * - a scope: `@types/*` (every package of the scope);
 * - a glob: `*` stands for any run of characters within one name segment
 *   (never across the `/` of a scoped name): `eslint-plugin-*`,
 *   `@babel/plugin-*`; the scope segment may hold `*` too. A bare `*` is
 *   every unscoped package.
 * Characters are npm's name characters (`A-Z a-z 0-9 - . _ ~`) and `*`; a
 * scoped pattern is `@scope/name`, one `/` only. Names compare exactly
 * (npm names are case-sensitive in the registry's keys).
 *
 * `py`: PEP 503 names, no scopes; the pattern and the candidate are both
 * normalised (`Foo_Bar` is `foo-bar`) before matching, so `django-*` also
 * selects `Django_Rest`.
 *
 * Decision: a tiny matcher, not a glob library. The grammar has one
 * wildcard that never crosses a segment; general glob libraries add
 * brace, class and globstar syntax a package name must not carry, and
 * dot-file rules that do not apply, so their reading would differ from the
 * documented one. Exact names are a Set lookup; the globs compile once to
 * one anchored RegExp.
 */
import type { Ecosystem } from '../advisory/artifact/database.js'
import { normalizePyName } from './identity-matcher.js'

export interface PackageSelector {
  matches(name: string): boolean
}

const JS_SEGMENT = /^[A-Za-z0-9._~*-]+$/
const PY_NAME = /^[A-Za-z0-9._*-]+$/
/** npm's longest name, bytes; a pattern longer cannot match anything. */
const MAX_PATTERN = 214

/** Why `pattern` is not a valid selector of the ecosystem, or undefined when it is. */
export function selectorProblem(ecosystem: Ecosystem, pattern: string): string | undefined {
  if (pattern.length === 0) return 'an empty package pattern selects nothing'
  if (pattern.length > MAX_PATTERN) return `package pattern "${pattern.slice(0, 40)}..." is longer than ${MAX_PATTERN} characters`
  if (ecosystem === 'py') {
    return PY_NAME.test(pattern) ? undefined : `package pattern "${pattern}" is not a PEP 503 name with * wildcards (letters, digits, - _ . and *)`
  }
  const scoped = pattern.startsWith('@')
  const segments = (scoped ? pattern.slice(1) : pattern).split('/')
  if (scoped && segments.length !== 2) return `package pattern "${pattern}" is not @scope/name (a scoped pattern has exactly one /)`
  if (!scoped && segments.length !== 1) return `package pattern "${pattern}" has a / but no @scope`
  for (const segment of segments) {
    if (!JS_SEGMENT.test(segment)) return `package pattern "${pattern}" has an empty segment or a character npm names do not use (allowed: letters, digits, - . _ ~ and *)`
  }
  return undefined
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')
}

/**
 * A selector for valid patterns (check them with selectorProblem first);
 * undefined for an unset list, which selects every package.
 */
export function packageSelector(ecosystem: Ecosystem, patterns: readonly string[] | undefined): PackageSelector | undefined {
  if (patterns === undefined) return undefined
  const read = ecosystem === 'py' ? normalizePyName : (name: string): string => name
  const exact = new Set<string>()
  const globs: string[] = []
  for (const pattern of patterns) {
    const problem = selectorProblem(ecosystem, pattern)
    if (problem !== undefined) throw new TypeError(problem)
    const p = ecosystem === 'py' ? pattern.toLowerCase().replace(/[-_.]+/g, '-') : pattern
    if (!p.includes('*')) exact.add(p)
    else globs.push(p.split('*').map(escaped).join('[^/]*'))
  }
  const glob = globs.length === 0 ? undefined : new RegExp(`^(?:${globs.join('|')})$`)
  // The versions of one packument share their name: remember the last answer.
  let lastName: string | undefined
  let lastAnswer = false
  return {
    matches(name: string): boolean {
      if (name === lastName) return lastAnswer
      const n = read(name)
      lastAnswer = exact.has(n) || (glob !== undefined && glob.test(n))
      lastName = name
      return lastAnswer
    },
  }
}
