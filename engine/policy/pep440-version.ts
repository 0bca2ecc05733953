/**
 * PEP 440 versions: parsing to a normal form and total ordering, for the `py`
 * mount's identity denials (a denial of `1.0` also denies `1.0.0` and
 * `v1.0`, as pip treats them as one version).
 *
 * Numbers are kept as digit strings without leading zeros and compared by
 * length, then lexically, so release numbers past 2^53 still order correctly.
 */

export interface Pep440Version {
  readonly epoch: string
  /** Release numbers, trailing zeros kept as written (they matter to `==1.0.*`). */
  readonly release: readonly string[]
  /** Pre-release: `a`, `b` or `rc`, and its number. */
  readonly pre: readonly ['a' | 'b' | 'rc', string] | undefined
  readonly post: string | undefined
  readonly dev: string | undefined
  /** Local label segments, lower-cased; numeric segments without leading zeros. */
  readonly local: readonly string[] | undefined
}

// The canonical PEP 440 pattern (PEP 440, appendix B), case-insensitive.
const PATTERN = new RegExp(
  '^\\s*v?' +
    '(?:(?<epoch>[0-9]+)!)?' +
    '(?<release>[0-9]+(?:\\.[0-9]+)*)' +
    '(?<pre>[-_.]?(?<preL>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?<preN>[0-9]+)?)?' +
    '(?<post>(?:-(?<postN1>[0-9]+))|(?:[-_.]?(?<postL>post|rev|r)[-_.]?(?<postN2>[0-9]+)?))?' +
    '(?<dev>[-_.]?(?<devL>dev)[-_.]?(?<devN>[0-9]+)?)?' +
    '(?:\\+(?<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?' +
    '\\s*$',
  'i',
)

const PRE_LABELS: Readonly<Record<string, 'a' | 'b' | 'rc'>> = {
  a: 'a', alpha: 'a', b: 'b', beta: 'b', c: 'rc', rc: 'rc', pre: 'rc', preview: 'rc',
}

function digits(value: string): string {
  const trimmed = value.replace(/^0+/, '')
  return trimmed === '' ? '0' : trimmed
}

/** Parses a PEP 440 version; undefined when it is not one. */
export function parsePep440(text: string): Pep440Version | undefined {
  const match = PATTERN.exec(text)
  const g = match?.groups
  if (g === undefined || g.release === undefined) return undefined
  const preLabel = g.preL === undefined ? undefined : PRE_LABELS[g.preL.toLowerCase()]
  const post = g.post === undefined ? undefined : digits(g.postN1 ?? g.postN2 ?? '0')
  return {
    epoch: digits(g.epoch ?? '0'),
    release: g.release.split('.').map(digits),
    pre: preLabel === undefined ? undefined : [preLabel, digits(g.preN ?? '0')],
    post,
    dev: g.dev === undefined ? undefined : digits(g.devN ?? '0'),
    local: g.local === undefined
      ? undefined
      : g.local.toLowerCase().split(/[-_.]/).map((s) => (/^[0-9]+$/.test(s) ? digits(s) : s)),
  }
}

export function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1
  return a < b ? -1 : a > b ? 1 : 0
}

function compareRelease(a: readonly string[], b: readonly string[]): number {
  const length = Math.max(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const c = compareDigits(a[i] ?? '0', b[i] ?? '0')
    if (c !== 0) return c
  }
  return 0
}

const PRE_ORDER = { a: 0, b: 1, rc: 2 } as const

/**
 * Where the pre-release places a version: a bare dev release (`1.0.dev1`)
 * sorts before every pre-release of 1.0, a final release after them.
 */
function comparePre(a: Pep440Version, b: Pep440Version): number {
  const rank = (v: Pep440Version): number => (v.pre !== undefined ? 1 : v.post === undefined && v.dev !== undefined ? 0 : 2)
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  if (a.pre === undefined || b.pre === undefined) return 0
  if (a.pre[0] !== b.pre[0]) return PRE_ORDER[a.pre[0]] - PRE_ORDER[b.pre[0]]
  return compareDigits(a.pre[1], b.pre[1])
}

function compareOptional(a: string | undefined, b: string | undefined, absentFirst: boolean): number {
  if (a === undefined && b === undefined) return 0
  if (a === undefined) return absentFirst ? -1 : 1
  if (b === undefined) return absentFirst ? 1 : -1
  return compareDigits(a, b)
}

/** PEP 440: numeric local segments sort after alphanumeric ones; a longer label after its prefix. */
function compareLocal(a: readonly string[] | undefined, b: readonly string[] | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1
  const length = Math.max(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a[i]
    const y = b[i]
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1
    const xNumeric = /^[0-9]+$/.test(x)
    const yNumeric = /^[0-9]+$/.test(y)
    if (xNumeric !== yNumeric) return xNumeric ? 1 : -1
    const c = xNumeric ? compareDigits(x, y) : x < y ? -1 : x > y ? 1 : 0
    if (c !== 0) return c
  }
  return 0
}

/** Total order of PEP 440; `ignoreLocal` compares public versions only. */
export function comparePep440(a: Pep440Version, b: Pep440Version, ignoreLocal = false): number {
  return compareDigits(a.epoch, b.epoch) ||
    compareRelease(a.release, b.release) ||
    comparePre(a, b) ||
    compareOptional(a.post, b.post, true) ||
    compareOptional(a.dev, b.dev, false) ||
    (ignoreLocal ? 0 : compareLocal(a.local, b.local))
}

export function isPrerelease(v: Pep440Version): boolean {
  return v.pre !== undefined || v.dev !== undefined
}
