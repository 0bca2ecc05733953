/**
 * The version an npm client reads from a `versions` key. npm's picker
 * (npm-pick-manifest) reads keys with semver's loose parser, so `01.0.0`,
 * `=1.0.0`, `v1.0.0` and `1.0.0+build` all satisfy `^1.0.0` as 1.0.0. The
 * gate judges what the client would install: a public key is kept only when
 * it is already the canonical form of the version it names; an alias, or a
 * key no parser reads, is dropped before any rule sees it.
 */
import semver from 'semver'

/** The common case, already canonical: checked without building a SemVer. */
const PLAIN = /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)$/

/** The canonical version a key names, read loosely as npm's picker reads it; undefined when nothing reads it. */
export function canonicalVersion(key: string): string | undefined {
  if (PLAIN.test(key)) return key
  return semver.parse(key, { loose: true })?.version
}
