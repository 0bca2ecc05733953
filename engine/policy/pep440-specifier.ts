/**
 * PEP 440 version specifier sets (`==1.2.*`, `>=1.0,<2.0`, `~=1.4.2`, `!=1.3`,
 * `===foo`) for the `py` mount's identity denials. A bare version (`1.2.3`)
 * means `==1.2.3`.
 *
 * Unlike an installer, a denial matches pre-releases inside its range: a
 * security proxy denying `<2.0` must also deny `1.9rc1` (PEP 440 lets the
 * consumer decide whether pre-releases are included).
 *
 * Supported wildcard form: release-only prefixes (`==1.2.*`, `!=1.*`), which
 * is what appears in practice; other prefix forms are refused as invalid.
 */
import { compareDigits, comparePep440, isPrerelease, parsePep440, type Pep440Version } from '../advisory/artifact/pep440.js'

type Operator = '===' | '~=' | '==' | '!=' | '<=' | '>=' | '<' | '>'

interface Clause {
  readonly operator: Operator
  readonly text: string
  /** Parsed version (undefined for `===`). */
  readonly version: Pep440Version | undefined
  readonly wildcard: boolean
}

export interface Pep440Specifier {
  /** True when `version` (a PEP 440 version string) is inside every clause. Unparsable versions match only `===`. */
  matches(version: string): boolean
}

const CLAUSE = /^\s*(===|~=|==|!=|<=|>=|<|>)?\s*(\S+?)\s*$/

function sameBase(a: Pep440Version, b: Pep440Version): boolean {
  return compareDigits(a.epoch, b.epoch) === 0 && comparePep440(
    { ...a, pre: undefined, post: undefined, dev: undefined, local: undefined },
    { ...b, pre: undefined, post: undefined, dev: undefined, local: undefined },
  ) === 0
}

function prefixMatches(candidate: Pep440Version, prefix: Pep440Version): boolean {
  if (compareDigits(candidate.epoch, prefix.epoch) !== 0) return false
  // Digit strings carry no leading zeros and zero is '' (engine/advisory/artifact/pep440.ts).
  return prefix.release.every((n, i) => compareDigits(candidate.release[i] ?? '', n) === 0)
}

function clauseMatches(clause: Clause, raw: string, candidate: Pep440Version | undefined): boolean {
  if (clause.operator === '===') return raw.trim().toLowerCase() === clause.text.toLowerCase()
  const spec = clause.version
  if (candidate === undefined || spec === undefined) return false
  switch (clause.operator) {
    case '==':
    case '!=': {
      const equal = clause.wildcard
        ? prefixMatches(candidate, spec)
        : comparePep440(candidate, spec, spec.local === undefined) === 0
      return clause.operator === '==' ? equal : !equal
    }
    case '~=': {
      const prefix = { ...spec, release: spec.release.slice(0, -1), pre: undefined, post: undefined, dev: undefined }
      return comparePep440(candidate, spec, true) >= 0 && prefixMatches(candidate, prefix)
    }
    case '<=': return comparePep440(candidate, spec, true) <= 0
    case '>=': return comparePep440(candidate, spec, true) >= 0
    case '<':
      if (comparePep440(candidate, spec, true) >= 0) return false
      // PEP 440: `<V` excludes pre-releases of V itself unless V is one.
      return isPrerelease(spec) || !isPrerelease(candidate) || !sameBase(candidate, spec)
    case '>':
      if (comparePep440(candidate, spec, true) <= 0) return false
      // PEP 440: `>V` excludes post-releases of V (unless V is one) and local versions of V.
      if (spec.post === undefined && candidate.post !== undefined && sameBase(candidate, spec)) return false
      return !(candidate.local !== undefined && sameBase(candidate, spec))
  }
}

function parseClause(text: string): Clause | string {
  const match = CLAUSE.exec(text)
  if (match === null || match[2] === undefined) return `"${text.trim()}" is not a PEP 440 specifier`
  const operator = (match[1] ?? '==') as Operator
  const body = match[2]
  if (operator === '===') return { operator, text: body, version: undefined, wildcard: false }
  const wildcard = body.endsWith('.*')
  if (wildcard && operator !== '==' && operator !== '!=') return `"${text.trim()}": a wildcard needs == or !=`
  const version = parsePep440(wildcard ? body.slice(0, -2) : body)
  if (version === undefined) return `"${text.trim()}" does not name a PEP 440 version`
  if (wildcard && (version.pre !== undefined || version.post !== undefined || version.dev !== undefined || version.local !== undefined)) {
    return `"${text.trim()}": only release prefixes such as ==1.2.* are supported`
  }
  if (operator === '~=' && version.release.length < 2) return `"${text.trim()}": ~= needs at least two release numbers`
  if (version.local !== undefined && operator !== '==' && operator !== '!=') {
    return `"${text.trim()}": a local version label is allowed only with == or !=`
  }
  return { operator, text: body, version, wildcard }
}

/** Parses a specifier set; a string describing the problem when it is invalid. */
export function parsePep440Specifier(text: string): Pep440Specifier | string {
  const parts = text.split(',')
  const clauses: Clause[] = []
  for (const part of parts) {
    const clause = parseClause(part)
    if (typeof clause === 'string') return clause
    clauses.push(clause)
  }
  return {
    matches(version: string): boolean {
      const candidate = parsePep440(version)
      return clauses.every((c) => clauseMatches(c, version, candidate))
    },
  }
}
