/**
 * Which package versions an identity denial names (SPEC.md 1.7): a package
 * name and an exact version or a range, read in the mount's ecosystem.
 *
 * - `js`: names compare exactly; `versions` is an exact version or a semver
 *   range. A range matches pre-releases inside it (`includePrerelease`): a
 *   denial of `<2.0.0` must also deny `1.9.9-rc.1`.
 * - `py`: names compare after PEP 503 normalisation (`Foo_Bar` is `foo-bar`);
 *   `versions` is an exact version or a PEP 440 specifier set, compared by
 *   PEP 440 (`1.0` is `1.0.0`).
 *
 * A candidate version that does not parse in its ecosystem matches only an
 * identical string, never a range.
 *
 * A `js` candidate is read as npm's picker reads a `versions` key, with
 * semver's loose parser: `01.0.0`, `=1.0.0`, `v1.0.0` and `1.0.0+build` are
 * the version 1.0.0 a client would install, so a denial of 1.0.0 (or of a
 * range holding it) denies each of them. The merge already drops such keys
 * before any rule (engine/npm/canonical-version.ts); this keeps the rule
 * itself from judging one version while a client installs another, whoever
 * calls it. The rule's own `versions` stays strict: it is configuration.
 */
import semver from 'semver'

import type { Ecosystem } from '../advisory/artifact/database.js'
import { parsePep440Specifier } from './pep440-specifier.js'

export interface IdentityMatcher {
  matches(name: string, version: string): boolean
}

/** PEP 503 name normalisation. */
export function normalizePyName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-')
}

/** A candidate as npm's picker reads it (loose semver), or null when nothing reads it. */
function looseVersion(version: string): semver.SemVer | null {
  return semver.parse(version, { loose: true })
}

function jsVersionMatcher(versions: string): ((version: string) => boolean) | string {
  const exact = semver.valid(versions)
  if (exact !== null) {
    return (version) => {
      if (version === versions) return true
      const read = looseVersion(version)
      return read !== null && semver.eq(read, exact)
    }
  }
  const range = semver.validRange(versions)
  if (range === null) return `"${versions}" is neither a semver version nor a semver range`
  return (version) => {
    const read = looseVersion(version)
    return read !== null && semver.satisfies(read, range, { includePrerelease: true })
  }
}

function pyVersionMatcher(versions: string): ((version: string) => boolean) | string {
  const specifier = parsePep440Specifier(versions)
  if (typeof specifier === 'string') return specifier
  return (version) => specifier.matches(version)
}

/** A matcher, or a sentence saying why `versions` is not valid for the ecosystem. */
export function identityMatcher(ecosystem: Ecosystem, packageName: string, versions: string): IdentityMatcher | string {
  if (ecosystem === 'js') {
    const matchVersion = jsVersionMatcher(versions)
    if (typeof matchVersion === 'string') return matchVersion
    return { matches: (name, version) => name === packageName && matchVersion(version) }
  }
  const matchVersion = pyVersionMatcher(versions)
  if (typeof matchVersion === 'string') return matchVersion
  const normalized = normalizePyName(packageName)
  return { matches: (name, version) => normalizePyName(name) === normalized && matchVersion(version) }
}
