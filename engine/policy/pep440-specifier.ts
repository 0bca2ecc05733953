/**
 * PEP 440 version specifier sets with the installer's semantics: what
 * `packaging.specifiers.SpecifierSet` (the library pip and uv follow)
 * answers, including the pre-release exclusion rules. One implementation
 * for the `py` mount's page filter and for `DenyIdentity` on `py` (through
 * `parsePep440Specifier` below): a denial must match exactly the versions
 * an installer reads as inside the range, pre-releases included (an earlier,
 * separate matcher here missed `1.0.post0` under `>1.0a1` and `1.0a1` under
 * `<1.0.post1`, letting denied versions through).
 *
 * Versions are parsed, normalised and ordered by engine/advisory/artifact/
 * pep440.ts (one implementation shared with the advisory compiler, so the
 * gate and the advisory database can never disagree on order).
 *
 * Semantics, PEP 440 "Version specifiers" as `packaging` implements them:
 * - `==V` compares public versions unless V has a local label; `==V.*` is a
 *   release-prefix match with zero padding; `!=` is its negation.
 * - `~=V` is `>=V, ==prefix.*` (V's release without its last number).
 * - `<=`, `>=` compare public versions (local labels ignored).
 * - `<V` never admits a pre-release of V unless V is one: anything at or
 *   above V's earliest pre-release (`V.dev0`) is out.
 * - `>V` never admits a post-release of V unless V is one, nor a local
 *   version of V.
 * - `===` is case-insensitive string identity, the only operator that can
 *   match a string that is not a PEP 440 version.
 * Pre-release exclusion (`filter`): pre-releases are left out unless the
 * caller asks for them, a clause names a pre-release, or no final release
 * matches at all.
 */
import { compareDigits, comparePep440, formatPep440, isPrerelease, parsePep440, type Pep440Version } from '../advisory/artifact/pep440.js'

export type SpecifierOperator = '===' | '~=' | '==' | '!=' | '<=' | '>=' | '<' | '>'

export interface SpecifierClause {
  readonly operator: SpecifierOperator
  /** The version text as written (without `.*`). */
  readonly text: string
  /** Parsed version; undefined only for `===`. */
  readonly version: Pep440Version | undefined
  readonly wildcard: boolean
}

/** PEP 508's operator-then-version clause; whitespace allowed around both. */
const CLAUSE = /^\s*(===|~=|==|!=|<=|>=|<|>)\s*(\S+)\s*$/

function withoutSuffixes(v: Pep440Version): Pep440Version {
  return { ...v, pre: undefined, post: undefined, dev: undefined, local: undefined }
}

/** `V.dev0` with V's post segment kept: the lowest version that is a pre-release of V. */
function earliestPrerelease(v: Pep440Version): Pep440Version {
  return { ...v, pre: undefined, dev: '', local: undefined }
}

/** The version a post-release is a post-release of: pre kept, post/dev/local dropped. */
function postBase(v: Pep440Version): Pep440Version {
  return { ...v, post: undefined, dev: undefined, local: undefined }
}

function publicOf(v: Pep440Version): Pep440Version {
  return v.local === undefined ? v : { ...v, local: undefined }
}

function prefixMatches(candidate: Pep440Version, prefix: Pep440Version): boolean {
  if (compareDigits(candidate.epoch, prefix.epoch) !== 0) return false
  // Zero is '' in the parsed form, so a missing segment pads as zero.
  return prefix.release.every((n, i) => compareDigits(candidate.release[i] ?? '', n) === 0)
}

/** One clause against a parsed candidate (or the raw string for `===`). */
export function clauseContains(clause: SpecifierClause, raw: string, candidate: Pep440Version | undefined): boolean {
  if (clause.operator === '===') {
    return raw.trim().toLowerCase() === clause.text.toLowerCase()
  }
  const spec = clause.version as Pep440Version
  if (candidate === undefined) return false
  switch (clause.operator) {
    case '==':
    case '!=': {
      const equal = clause.wildcard
        ? prefixMatches(candidate, spec)
        : comparePep440(candidate, spec, spec.local === undefined) === 0
      return clause.operator === '==' ? equal : !equal
    }
    case '~=': {
      const prefix = withoutSuffixes({ ...spec, release: spec.release.slice(0, -1) })
      return comparePep440(candidate, spec, true) >= 0 && prefixMatches(candidate, prefix)
    }
    case '<=': return comparePep440(candidate, spec, true) <= 0
    case '>=': return comparePep440(candidate, spec, true) >= 0
    case '<':
      if (comparePep440(candidate, spec) >= 0) return false
      return isPrerelease(spec) || !isPrerelease(candidate) || comparePep440(candidate, earliestPrerelease(spec)) < 0
    case '>':
      if (comparePep440(candidate, spec) <= 0) return false
      if (spec.post === undefined && candidate.post !== undefined && comparePep440(postBase(candidate), spec) === 0) return false
      return !(candidate.local !== undefined && comparePep440(publicOf(candidate), spec) === 0)
  }
}

/** Parses one clause; a string describing the problem when it is not one. */
export function parseSpecifierClause(text: string): SpecifierClause | string {
  const match = CLAUSE.exec(text)
  if (match === null) return `"${text.trim()}" is not a PEP 440 specifier`
  const operator = match[1] as SpecifierOperator
  const body = match[2] as string
  if (operator === '===') return { operator, text: body, version: undefined, wildcard: false }
  const wildcard = body.endsWith('.*')
  if (wildcard && operator !== '==' && operator !== '!=') return `"${text.trim()}": a wildcard needs == or !=`
  const versionText = wildcard ? body.slice(0, -2) : body
  // The specifier grammar does not take the `v` prefix or inner whitespace a version may carry.
  const version = /^[vV]|\s/.test(versionText) ? undefined : parsePep440(versionText)
  if (version === undefined) return `"${text.trim()}" does not name a PEP 440 version`
  if (wildcard && (version.pre !== undefined || version.post !== undefined || version.dev !== undefined || version.local !== undefined)) {
    return `"${text.trim()}": a prefix match takes a release only, such as ==1.2.*`
  }
  if (operator === '~=' && version.release.length < 2) return `"${text.trim()}": ~= needs at least two release numbers`
  if (version.local !== undefined && operator !== '==' && operator !== '!=') {
    return `"${text.trim()}": a local version label is allowed only with == or !=`
  }
  return { operator, text: versionText, version, wildcard }
}

/** Whether a clause, by itself, asks for pre-releases (packaging's `Specifier.prereleases`). */
function clauseNamesPrerelease(clause: SpecifierClause): boolean {
  if (clause.operator === '!=') return false
  if (clause.operator === '===') {
    const v = parsePep440(clause.text)
    return v !== undefined && isPrerelease(v)
  }
  return clause.version !== undefined && isPrerelease(clause.version)
}

export interface FilterOptions {
  /** true: keep pre-releases; false: never; undefined: PEP 440's default (see the module comment). */
  readonly prereleases?: boolean | undefined
}

export class Pep440SpecifierSet {
  readonly clauses: readonly SpecifierClause[]
  readonly #namesPrerelease: boolean

  constructor(clauses: readonly SpecifierClause[]) {
    this.clauses = Object.freeze([...clauses])
    this.#namesPrerelease = clauses.some(clauseNamesPrerelease)
  }

  /** Inside every clause, pre-releases included (what a denial or an advisory range needs). */
  contains(version: string): boolean {
    const candidate = parsePep440(version)
    return this.clauses.every((c) => clauseContains(c, version, candidate))
  }

  /**
   * The versions an installer would consider, in input order: inside every
   * clause, then pre-releases dropped unless asked for, named by a clause, or
   * the only versions left.
   */
  filter<T>(items: Iterable<T>, key: (item: T) => string, options: FilterOptions = {}): T[] {
    const include = options.prereleases ?? (this.#namesPrerelease ? true : undefined)
    const finals: T[] = []
    const all: T[] = []
    for (const item of items) {
      const raw = key(item)
      const parsed = parsePep440(raw)
      if (!this.clauses.every((c) => clauseContains(c, raw, parsed))) continue
      all.push(item)
      // A string that is no version (matched by ===) cannot be judged a pre-release; packaging keeps it.
      if (parsed === undefined || !isPrerelease(parsed)) finals.push(item)
    }
    if (include === true) return all
    if (include === false) return finals
    return finals.length > 0 ? finals : all
  }

  /** The normalised text, clauses in input order. */
  toString(): string {
    return this.clauses
      .map((c) => `${c.operator}${c.version === undefined ? c.text : formatPep440(c.version)}${c.wildcard ? '.*' : ''}`)
      .join(',')
  }
}

/** Parses a comma-separated specifier set (empty means "any version"); a string describing the first problem when invalid. */
export function parseSpecifierSet(text: string): Pep440SpecifierSet | string {
  const clauses: SpecifierClause[] = []
  for (const part of text.split(',')) {
    if (part.trim() === '') {
      if (text.trim() === '') continue
      return `"${text.trim()}" has an empty clause`
    }
    const clause = parseSpecifierClause(part)
    if (typeof clause === 'string') return clause
    clauses.push(clause)
  }
  return new Pep440SpecifierSet(clauses)
}

/** What `DenyIdentity` on `py` asks of its `versions`. */
export interface Pep440Specifier {
  /** Inside every clause, pre-releases included. Unparsable versions match only `===`. */
  matches(version: string): boolean
}

/**
 * The specifier a `DenyIdentity` rule's `versions` names: a specifier set,
 * or a bare version meaning `==` that version (an operator-less clause is
 * refused by packaging). Empty is refused: a denial names what it denies.
 */
export function parsePep440Specifier(text: string): Pep440Specifier | string {
  if (text.trim() === '') return 'an empty specifier names no version'
  const clauses = text.split(',').map((part) => (/^\s*(===|~=|==|!=|<=|>=|<|>)/.test(part) ? part : `==${part.trim()}`))
  const set = parseSpecifierSet(clauses.join(','))
  if (typeof set === 'string') return set
  return { matches: (version) => set.contains(version) }
}
