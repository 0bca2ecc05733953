/**
 * npm versions for advisory ranges: the `semver` package's loose parser, plus
 * one tolerance that real GHSA records need: a partial version `X` or `X.Y`
 * (e.g. `introduced: "1.90"` in GHSA-8m45-2rjm-j347) reads as `X.0.0` /
 * `X.Y.0`, the lowest version it names. Without it the whole range would be
 * unplaceable and an affected version would go unreported.
 */
import semver from 'semver'

const PARTIAL = /^v?(\d+)(?:\.(\d+))?$/

export function parseNpmVersion(version: string): semver.SemVer | undefined {
  const v = version.trim()
  const parsed = semver.parse(v, { loose: true })
  if (parsed !== null) return parsed
  const m = PARTIAL.exec(v)
  if (m === null) return undefined
  return semver.parse(`${m[1]}.${m[2] ?? '0'}.0`) ?? undefined
}
