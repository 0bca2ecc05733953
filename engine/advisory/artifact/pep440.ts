/**
 * PEP 440 versions for the `py` mount: parse, compare, and an order-preserving
 * byte key (see version-key.ts) so that the compiled advisory artifact can
 * compare versions as plain bytes.
 *
 * The grammar is the permissive one of the specification's appendix (the
 * pattern `packaging` uses): optional `v`, epoch `N!`, release `N(.N)*`,
 * pre-release `a|b|rc` with their alternate spellings, post-release (also the
 * implicit `-N` form), dev-release, and `+local`. Separators `-_.` are
 * optional where the specification allows them, case is ignored, and leading
 * and trailing whitespace is stripped (PEP 440 "Leading and Trailing
 * Whitespace"), which is what makes the real MAL record version `"0.0.9 "`
 * equal to `0.0.9`.
 *
 * Ordering follows PEP 440 "Summary of permitted suffixes and relative
 * ordering": release segments compare with trailing zeros ignored; a dev-only
 * release sorts before pre-releases of the same release; pre < final < post;
 * dev sorts before its non-dev twin; a local label sorts after the bare
 * version, alphanumeric local segments before numeric ones.
 */

const VERSION_PATTERN = new RegExp(
  '^\\s*v?' +
    '(?:(?<epoch>[0-9]+)!)?' +
    '(?<release>[0-9]+(?:\\.[0-9]+)*)' +
    '(?<pre>[-_.]?(?<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?<pre_n>[0-9]+)?)?' +
    '(?<post>(?:-(?<post_n1>[0-9]+))|(?:[-_.]?(?<post_l>post|rev|r)[-_.]?(?<post_n2>[0-9]+)?))?' +
    '(?<dev>[-_.]?(?<dev_l>dev)[-_.]?(?<dev_n>[0-9]+)?)?' +
    '(?:\\+(?<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?' +
    '\\s*$',
  'i',
)

export type PreReleaseLabel = 'a' | 'b' | 'rc'

export interface Pep440Version {
  /** Decimal digit strings without leading zeros (`''` is zero), so that no size limit applies. */
  readonly epoch: string
  readonly release: readonly string[]
  readonly pre: { readonly label: PreReleaseLabel; readonly number: string } | undefined
  readonly post: string | undefined
  readonly dev: string | undefined
  /** Lower-cased local segments; numeric ones stripped of leading zeros. */
  readonly local: readonly string[] | undefined
}

function digits(value: string | undefined): string {
  if (value === undefined) return ''
  let i = 0
  while (i < value.length && value.charCodeAt(i) === 48) i++
  return value.slice(i)
}

function preLabel(raw: string): PreReleaseLabel {
  switch (raw.toLowerCase()) {
    case 'a': case 'alpha': return 'a'
    case 'b': case 'beta': return 'b'
    default: return 'rc' // c, rc, pre, preview
  }
}

const NUMERIC = /^[0-9]+$/

/** Parses a PEP 440 version; undefined when the string is not one. */
export function parsePep440(version: string): Pep440Version | undefined {
  const m = VERSION_PATTERN.exec(version)
  if (m === null || m.groups === undefined) return undefined
  const g = m.groups
  const release = (g.release as string).split('.').map(digits)
  const pre = g.pre_l === undefined ? undefined : { label: preLabel(g.pre_l), number: digits(g.pre_n) }
  const post = g.post === undefined ? undefined : digits(g.post_n1 ?? g.post_n2)
  const dev = g.dev === undefined ? undefined : digits(g.dev_n)
  const local = g.local === undefined
    ? undefined
    : g.local.toLowerCase().split(/[-_.]/).map((s) => (NUMERIC.test(s) ? digits(s) : s))
  return { epoch: digits(g.epoch), release, pre, post, dev, local }
}

/** Numeric comparison of two digit strings without leading zeros. */
export function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1
  return a === b ? 0 : a < b ? -1 : 1
}

function significantLength(release: readonly string[]): number {
  let n = release.length
  while (n > 0 && release[n - 1] === '') n--
  return n
}

const PRE_RANK: Readonly<Record<PreReleaseLabel, number>> = { a: 1, b: 2, rc: 3 }

/** -1, 0 or 1 by PEP 440 ordering of two parsed versions; `ignoreLocal` compares public versions only. */
export function comparePep440(a: Pep440Version, b: Pep440Version, ignoreLocal = false): number {
  let c = compareDigits(a.epoch, b.epoch)
  if (c !== 0) return c
  const la = significantLength(a.release)
  const lb = significantLength(b.release)
  for (let i = 0; i < Math.min(la, lb); i++) {
    c = compareDigits(a.release[i] as string, b.release[i] as string)
    if (c !== 0) return c
  }
  if (la !== lb) return la < lb ? -1 : 1
  c = Math.sign(preRank(a) - preRank(b))
  if (c !== 0) return c
  if (a.pre !== undefined && b.pre !== undefined) {
    c = compareDigits(a.pre.number, b.pre.number)
    if (c !== 0) return c
  }
  // No post-release sorts before any post-release.
  if (a.post === undefined || b.post === undefined) {
    if (a.post !== b.post) return a.post === undefined ? -1 : 1
  } else {
    c = compareDigits(a.post, b.post)
    if (c !== 0) return c
  }
  // A dev-release sorts before the same version without one.
  if (a.dev === undefined || b.dev === undefined) {
    if (a.dev !== b.dev) return a.dev === undefined ? 1 : -1
  } else {
    c = compareDigits(a.dev, b.dev)
    if (c !== 0) return c
  }
  return ignoreLocal ? 0 : compareLocal(a.local, b.local)
}

/** A pre-release or a development release. */
export function isPrerelease(v: Pep440Version): boolean {
  return v.pre !== undefined || v.dev !== undefined
}

/** 0: dev-only release; 1..3: a, b, rc; 4: no pre-release. */
function preRank(v: Pep440Version): number {
  if (v.pre !== undefined) return PRE_RANK[v.pre.label]
  if (v.post === undefined && v.dev !== undefined) return 0
  return 4
}

function compareLocal(a: readonly string[] | undefined, b: readonly string[] | undefined): number {
  if (a === undefined || b === undefined) {
    if (a === b) return 0
    return a === undefined ? -1 : 1
  }
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] as string
    const y = b[i] as string
    const xn = x === '' || NUMERIC.test(x)
    const yn = y === '' || NUMERIC.test(y)
    if (xn !== yn) return xn ? 1 : -1 // alphanumeric segments sort before numeric ones
    const c = xn ? compareDigits(x, y) : x === y ? 0 : x < y ? -1 : 1
    if (c !== 0) return c
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
}

/** Compares two version strings; unparseable strings throw nothing but return undefined. */
export function comparePep440Strings(a: string, b: string): number | undefined {
  const pa = parsePep440(a)
  const pb = parsePep440(b)
  if (pa === undefined || pb === undefined) return undefined
  return comparePep440(pa, pb)
}

/** The canonical (normalised) form of PEP 440 "Normalization". */
export function formatPep440(v: Pep440Version): string {
  const n = (d: string): string => (d === '' ? '0' : d)
  let out = v.epoch === '' ? '' : `${v.epoch}!`
  out += v.release.map(n).join('.')
  if (v.pre !== undefined) out += `${v.pre.label}${n(v.pre.number)}`
  if (v.post !== undefined) out += `.post${n(v.post)}`
  if (v.dev !== undefined) out += `.dev${n(v.dev)}`
  if (v.local !== undefined) out += `+${v.local.map((s) => (s === '' ? '0' : s)).join('.')}`
  return out
}
