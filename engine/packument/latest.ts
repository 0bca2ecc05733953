/**
 * SPEC.md 2.1: `dist-tags.latest` is repointed to the newest surviving
 * version after the gate. Decision: "newest" is semver order among the
 * surviving versions that are not prereleases; only when none is a release
 * does the newest prerelease take it; when no surviving version is valid
 * semver, the upstream's own `latest` stays if it survived.
 */
import semver from 'semver'

export function newestSurvivingVersion(versions: Iterable<string>): string | undefined {
  let release: semver.SemVer | undefined
  let prerelease: semver.SemVer | undefined
  for (const version of versions) {
    const parsed = semver.parse(version)
    if (parsed === null) continue
    if (parsed.prerelease.length === 0) {
      if (release === undefined || semver.compareBuild(parsed, release) > 0) release = parsed
    } else if (prerelease === undefined || semver.compareBuild(parsed, prerelease) > 0) {
      prerelease = parsed
    }
  }
  return (release ?? prerelease)?.raw
}
