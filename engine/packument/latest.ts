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

const LEADING_TRIPLE = /^(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})/

/**
 * The position in `versions` of the highest in semver precedence, prereleases
 * included (the newest withheld version a notice names); undefined when none
 * is semver. Decision: `X.Y.Z` is compared as numbers without semver's
 * parser, and only the versions sharing the highest `X.Y.Z` are parsed, so a
 * document of thousands of nightlies costs a regular expression each and a
 * parse per nightly of the newest line alone.
 */
export function newestVersionIndex(versions: readonly string[]): number | undefined {
  let major = -1
  let minor = -1
  let patch = -1
  let ties: number[] = []
  for (let k = 0; k < versions.length; k++) {
    const m = LEADING_TRIPLE.exec(versions[k]!)
    if (m === null) continue
    const a = Number(m[1])
    const b = Number(m[2])
    const c = Number(m[3])
    if (a > major || (a === major && (b > minor || (b === minor && c > patch)))) {
      major = a
      minor = b
      patch = c
      ties = [k]
    } else if (a === major && b === minor && c === patch) {
      ties.push(k)
    }
  }
  let best: number | undefined
  let bestParsed: semver.SemVer | undefined
  for (const k of ties) {
    const parsed = semver.parse(versions[k]!)
    if (parsed === null) continue
    if (bestParsed === undefined || semver.compareBuild(parsed, bestParsed) > 0) {
      best = k
      bestParsed = parsed
    }
  }
  return best
}
