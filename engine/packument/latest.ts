/**
 * SPEC.md 2.1: `dist-tags.latest` is repointed to the newest surviving
 * version after the gate. Decision: "newest" is semver order among the
 * surviving versions that are not prereleases; only when none is a release
 * does the newest prerelease take it; when no surviving version is valid
 * semver, the upstream's own `latest` stays if it survived.
 */
import semver from 'semver'

/** A plain release `X.Y.Z` with no leading zeros, the common case, compared without semver's parser. */
const PLAIN_RELEASE = /^(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})$/

export function newestSurvivingVersion(versions: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestMajor = -1
  let bestMinor = -1
  let bestPatch = -1
  const others: string[] = []
  for (const version of versions) {
    const m = PLAIN_RELEASE.exec(version)
    if (m === null) {
      others.push(version)
      continue
    }
    const major = Number(m[1])
    const minor = Number(m[2])
    const patch = Number(m[3])
    if (major > bestMajor || (major === bestMajor && (minor > bestMinor || (minor === bestMinor && patch > bestPatch)))) {
      best = version
      bestMajor = major
      bestMinor = minor
      bestPatch = patch
    }
  }
  // The rest: releases with build metadata, prereleases, and what is not semver at all.
  let release = best === undefined ? undefined : semver.parse(best) ?? undefined
  let prerelease: semver.SemVer | undefined
  for (const version of others) {
    // Once a release is known no prerelease can win, so skip parsing them
    // (a '-' before any '+' marks a prerelease; after it, build metadata).
    const dash = version.indexOf('-')
    const plus = version.indexOf('+')
    if (release !== undefined && dash >= 0 && (plus < 0 || dash < plus)) continue
    const parsed = semver.parse(version)
    if (parsed === null) continue
    if (parsed.prerelease.length === 0) {
      if (release === undefined || semver.compareBuild(parsed, release) > 0) release = parsed
    } else if (release === undefined && (prerelease === undefined || semver.compareBuild(parsed, prerelease) > 0)) {
      prerelease = parsed
    }
  }
  return (release ?? prerelease)?.raw
}
