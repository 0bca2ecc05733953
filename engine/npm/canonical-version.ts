/**
 * The version an npm client reads from a `versions` key. npm's picker
 * (npm-pick-manifest) reads keys with semver's loose parser, so `01.0.0`,
 * `=1.0.0`, `v1.0.0` and `1.0.0+build` all satisfy `^1.0.0` as 1.0.0. The
 * gate judges what the client would install: a public key is kept only when
 * it is already the canonical form of the version it names; an alias, or a
 * key no parser reads, is dropped before any rule sees it.
 */
import semver from 'semver'

/** semver's MAX_LENGTH: a longer string is no version to it. */
const MAX_LENGTH = 256

/**
 * A key that is already canonical: semver 2.0's `M.m.p[-pre]` with no
 * leading zeros and no build metadata, each of M, m and p at most 15 digits
 * (below Number.MAX_SAFE_INTEGER, past which semver refuses the version).
 * Decision: almost every key of a real packument matches this, prereleases
 * included (typescript's 3,000 `-dev.2015...` builds), and the regular
 * expression costs a tenth of building a SemVer for it; a key it does not
 * match goes to semver's loose parser. test/npm/canonical-version.test.ts
 * holds the two to the same answers.
 */
const CANONICAL = /^(?:0|[1-9]\d{0,14})\.(?:0|[1-9]\d{0,14})\.(?:0|[1-9]\d{0,14})(?:-(?:0|[1-9]\d*|\d*[a-zA-Z-][a-zA-Z0-9-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][a-zA-Z0-9-]*))*)?$/

/** The canonical version a key names, read loosely as npm's picker reads it; undefined when nothing reads it. */
export function canonicalVersion(key: string): string | undefined {
  if (key.length <= MAX_LENGTH && CANONICAL.test(key)) return key
  return semver.parse(key, { loose: true })?.version
}

